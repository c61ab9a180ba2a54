import { sql } from 'kysely';
import { randomBytes } from 'node:crypto';
import { endUserPseudonyms } from '../../core/pseudonyms.js';
import { expect, it } from 'vitest';
import { write, type Effects, type WriteContext } from '../../core/unit-of-work.js';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { holdOwnerLocks, lockWaiters } from '../../testing/locks.js';
import { addMemory } from '../../testing/memories.js';
import {
  addWithin,
  EraseHooks,
  forget,
  forgetWithin,
  importMemories,
  insertSummary,
  insertTurn,
  liveMemoryIds,
  markSuperseded,
  MEMORY_LIMITS,
  nextSeq,
  recordHistory,
  revisionOf,
  rewriteSummary,
  touchMemories,
  type Owner,
} from './index.js';
import { TURN_REDELIVERY_WINDOW_MS } from './turns.js';

/**
 * The write side other modules build on (connectors, imports, summaries, decisions, /v1 turns),
 * called as they call it, with what each leaves in the database: rows, history, events, audit
 * rows and the owner's change sequence, which every index follows.
 */
forEachDialect('memory writes', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });
  let serial = 0;
  const owner = (endUserId = `w-${++serial}`, tenantId = ''): Owner => ({
    projectId: t.projectId,
    tenantId,
    endUserId,
  });
  const ctx = (): WriteContext => ({
    actor: { type: 'api_key', id: t.keyId },
    organizationId: t.organizationId,
    projectId: t.projectId,
    requestId: `req-${++serial}`,
  });
  const within = <T>(
    change: (trx: Parameters<Parameters<typeof write>[2]>[0], effects: Effects, c: WriteContext) => Promise<T>,
  ) => {
    const c = ctx();
    return write(t.database, c, (trx, effects) => change(trx, effects, c));
  };
  const db = () => t.database.db;
  const row = (id: number) => db().selectFrom('memories').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const history = (id: number) =>
    db().selectFrom('memory_history').select(['action', 'changes']).where('memory_id', '=', id).orderBy('id').execute();
  const events = async (id: number) =>
    (
      await db()
        .selectFrom('outbox_events')
        .select(['type', 'payload'])
        .where('memory_id', '=', id)
        .orderBy('id')
        .execute()
    ).map((e) => ({ type: e.type, payload: typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload }));
  const rowsOf = (o: Owner) =>
    db()
      .selectFrom('memories')
      .selectAll()
      .where('project_id', '=', o.projectId)
      .where('tenant_id', '=', o.tenantId)
      .where('end_user_id', '=', o.endUserId)
      .orderBy('id')
      .execute();
  const decoded = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value);

  it('imports several end users at once with their own times, speakers and summary marks, and skips what landed', async () => {
    const [a, b] = [owner(), owner()];
    const batch = [
      {
        owner: a,
        item: {
          text: 'imported summary',
          is_summary: true,
          client_ref: 'r1',
          created_at: '2024-01-02T03:04:05.000Z',
          updated_at: '2024-02-03T04:05:06.000Z',
        },
      },
      {
        owner: a,
        item: {
          text: 'a said this',
          speaker: 'Ann',
          session_id: 's1',
          client_ref: 'r2',
          created_at: '2024-01-03T00:00:00.000Z',
        },
      },
      // The same words by the same speaker in the same session, at another time, are another turn.
      {
        owner: a,
        item: {
          text: 'a said this',
          speaker: 'Ann',
          session_id: 's1',
          client_ref: 'r3',
          created_at: '2024-01-04T00:00:00.000Z',
        },
      },
      // ... and in another session too.
      {
        owner: a,
        item: {
          text: 'a said this',
          speaker: 'Ann',
          session_id: 's2',
          client_ref: 'r4',
          created_at: '2024-01-03T00:00:00.000Z',
        },
      },
      { owner: b, item: { text: 'b plain', client_ref: 'r1' } },
    ];
    expect(await importMemories(t.database, ctx(), batch)).toEqual({ created: 5, skipped: 0 });
    const [summary, said, saidLater, saidElsewhere] = await rowsOf(a);
    expect(summary).toMatchObject({ text: 'imported summary', speaker: null });
    expect(Boolean(summary!.is_summary)).toBe(true);
    expect(new Date(summary!.created_at).toISOString()).toBe('2024-01-02T03:04:05.000Z');
    expect(new Date(summary!.updated_at).toISOString()).toBe('2024-02-03T04:05:06.000Z');
    expect(said).toMatchObject({ speaker: 'Ann', session_id: 's1' });
    expect(Boolean(said!.is_summary)).toBe(false);
    // Without its own update time, a memory was last updated when it was created.
    expect(new Date(said!.updated_at).toISOString()).toBe('2024-01-03T00:00:00.000Z');
    expect([saidLater!.text, saidElsewhere!.session_id]).toEqual(['a said this', 's2']);
    expect((await rowsOf(b)).map((r) => r.text)).toEqual(['b plain']);

    // A re-run skips what landed: one audit row per import, partial when something was skipped.
    expect(await importMemories(t.database, ctx(), [...batch, { owner: b, item: { text: 'b new' } }])).toEqual({
      created: 1,
      skipped: 5,
    });
    const audits = await db()
      .selectFrom('audit_log')
      .select('result')
      .where('action', '=', 'memory.import')
      .orderBy('id')
      .execute();
    expect(audits.slice(-2).map((r) => r.result)).toEqual(['success', 'partial']);
  });

  it("imports interleaved end users (of tenants too) with each row on its owner's sequence, its history and its event", async () => {
    const owners = [owner(), owner(undefined, 'tenant-x'), owner()];
    const batch = Array.from({ length: 12 }, (_, n) => ({
      owner: owners[n % 3]!,
      item: { text: `interleaved ${n}`, client_ref: `i${n}` },
    }));
    expect(await importMemories(t.database, ctx(), batch)).toEqual({ created: 12, skipped: 0 });
    for (const [i, o] of owners.entries()) {
      const rows = await rowsOf(o);
      expect(rows.map((r) => r.text)).toEqual([0, 1, 2, 3].map((k) => `interleaved ${k * 3 + i}`));
      const revision = await revisionOf(db(), o);
      expect(rows.every((r) => r.seq === revision)).toBe(true);
      for (const r of rows) {
        expect((await history(r.id)).map((h) => [h.action, decoded(h.changes).text.after])).toEqual([
          ['create', r.text],
        ]);
        expect((await events(r.id)).map((e) => [e.type, e.payload.tenant_id, e.payload.memory.text])).toEqual([
          ['memory.created', o.tenantId || null, r.text],
        ]);
      }
    }
    // An item duplicating a memory its owner has sends the batch owner by owner: the rest land, it is skipped.
    const again = [
      { owner: owners[0]!, item: { text: 'interleaved 0' } },
      { owner: owners[1]!, item: { text: 'a new one' } },
    ];
    expect(await importMemories(t.database, ctx(), again)).toEqual({ created: 1, skipped: 1 });
    expect((await rowsOf(owners[1]!)).map((r) => r.text)).toContain('a new one');
  });

  it('adds within a caller transaction, naming the item whose content is refused', async () => {
    const o = owner();
    const outcomes = await within((trx, effects, c) =>
      addWithin(t.database, trx, c, effects, o, [
        { text: 'first within' },
        { text: 'second within', speaker: 'Bo' },
        { text: 'FIRST within!' },
      ]),
    );
    expect(outcomes.map((x) => ('created' in x ? 'created' : x.skipped.reason))).toEqual([
      'created',
      'created',
      'duplicate_text',
    ]);
    const rows = await rowsOf(o);
    expect(rows.map((r) => [r.text, r.speaker])).toEqual([
      ['first within', null],
      ['second within', 'Bo'],
    ]);
    await expect(
      within((trx, effects, c) => addWithin(t.database, trx, c, effects, o, [{ text: 'fine' }, { text: '   ' }])),
    ).rejects.toMatchObject({ code: 'validation_error', field: 'items/1/text' });
    expect(await rowsOf(o)).toHaveLength(2);
  });

  it('tells which ids are live memories of an owner', async () => {
    const [o, other] = [owner(), owner()];
    const mine = await addMemory(t, 'mine to keep', { endUser: o.endUserId });
    const gone = await addMemory(t, 'mine to forget', { endUser: o.endUserId });
    const theirs = await addMemory(t, 'theirs', { endUser: other.endUserId });
    await forget(t.database, ctx(), o, [gone.id], new EraseHooks(endUserPseudonyms(randomBytes(32))));
    expect(await liveMemoryIds(db(), o, [])).toEqual([]);
    expect(await liveMemoryIds(db(), o, [theirs.id, gone.id, mine.id, 987654321])).toEqual([mine.id]);
  });

  it('marks a memory superseded and clears the mark, with history, an event and a new change sequence', async () => {
    const o = owner();
    const kept = await addMemory(t, 'the new fact', { endUser: o.endUserId });
    const old = await addMemory(t, 'the old fact', { endUser: o.endUserId });
    const before = await revisionOf(db(), o);
    await within((trx, effects, c) => markSuperseded(trx, c, effects, o, old.id, kept.id, 'resolved conflict'));
    const marked = await row(old.id);
    expect(marked.superseded_by).toBe(kept.id);
    expect(Number(marked.seq)).toBe(before + 1);
    expect(await revisionOf(db(), o)).toBe(before + 1);
    await within((trx, effects, c) => markSuperseded(trx, c, effects, o, old.id, null, 'decision withdrawn'));
    expect((await row(old.id)).superseded_by).toBeNull();
    expect((await history(old.id)).slice(1).map((h) => [h.action, decoded(h.changes)])).toEqual([
      [
        'supersede',
        { superseded_by: { before: null, after: kept.id }, reason: { before: null, after: 'resolved conflict' } },
      ],
      [
        'supersede',
        { superseded_by: { before: kept.id, after: null }, reason: { before: null, after: 'decision withdrawn' } },
      ],
    ]);
    const updates = (await events(old.id)).filter((e) => e.type === 'memory.updated');
    expect(updates.map((e) => [e.payload.memory.id, e.payload.memory.superseded_by ?? null, e.payload.fields])).toEqual(
      [
        [old.id, kept.id, ['superseded_by']],
        [old.id, null, ['superseded_by']],
      ],
    );
    // Another owner's memory is not found.
    await expect(
      within((trx, effects, c) => markSuperseded(trx, c, effects, owner(), kept.id, null, 'x')),
    ).rejects.toMatchObject({ code: 'not_found' });
  });

  it.runIf(dialect === 'postgres')('refuses to mark a memory superseded by one forgotten while it waited', async () => {
    const o = owner();
    const kept = await addMemory(t, 'the fact to keep', { endUser: o.endUserId });
    const old = await addMemory(t, 'the fact it replaces', { endUser: o.endUserId });
    // The forget queues first for the owner's lock, then the mark, which has read its memory live unless it waits first.
    const lock = await holdOwnerLocks(t, [o.endUserId]);
    const forgetting = t.call('DELETE', '/memory/forget', { endUser: o.endUserId, body: { ids: [kept.id] } });
    await lockWaiters(t, 1, 'the forget to wait for the owner lock');
    const marking = within((trx, effects, c) =>
      markSuperseded(trx, c, effects, o, old.id, kept.id, 'resolved conflict'),
    ).then(
      () => 'marked',
      (error) => error,
    );
    await lockWaiters(t, 2, 'the mark to wait behind it');
    await lock.release();
    expect((await forgetting).body).toEqual([kept.id]);
    expect(await marking).toMatchObject({ code: 'not_found' });
    expect((await row(old.id)).superseded_by).toBeNull();
  });

  it.runIf(dialect === 'postgres')(
    'runs two imports of the same end users, listed in opposite orders, at once',
    async () => {
      const [a, b] = [owner(), owner()];
      for (const o of [a, b]) await addMemory(t, `${o.endUserId} was here`, { endUser: o.endUserId });
      // Both queue for the end users' locks before either has one, so neither gets one first by chance.
      const lock = await holdOwnerLocks(t, [a.endUserId, b.endUserId]);
      const first = importMemories(t.database, ctx(), [
        { owner: a, item: { text: 'first import for a' } },
        { owner: b, item: { text: 'first import for b' } },
      ]);
      await lockWaiters(t, 1, 'the first import to wait for an end user');
      const second = importMemories(t.database, ctx(), [
        { owner: b, item: { text: 'second import for b' } },
        { owner: a, item: { text: 'second import for a' } },
      ]);
      await lockWaiters(t, 2, 'the second import to wait for an end user');
      await lock.release();
      expect(await Promise.all([first, second])).toEqual([
        { created: 2, skipped: 0 },
        { created: 2, skipped: 0 },
      ]);
      for (const o of [a, b]) {
        const rows = await rowsOf(o);
        expect(Math.max(...rows.map((r) => Number(r.seq)))).toBe(await revisionOf(db(), o));
      }
    },
  );

  it('stores and rewrites a summary, keyed by the set it summarizes', async () => {
    const o = owner('summary-user', 'acme');
    const summary = await within(async (trx, effects, c) =>
      insertSummary(trx, c, effects, t.database, o, await nextSeq(trx, o, effects.now), {
        text: 'A summary of two notes',
        metadata: { sources: [1, 2] },
        setKey: 'set-key-1',
        sessionId: 's9',
      }),
    );
    const stored = await row(summary.id);
    expect(stored).toMatchObject({
      text: 'A summary of two notes',
      source: 'summary',
      dedupe_hash: 'set-key-1',
      session_id: 's9',
      tenant_id: 'acme',
    });
    expect(Boolean(stored.is_summary)).toBe(true);
    expect(decoded(stored.metadata)).toEqual({ sources: [1, 2] });
    expect((await history(summary.id)).map((h) => [h.action, decoded(h.changes)])).toEqual([
      [
        'create',
        {
          text: { before: null, after: 'A summary of two notes' },
          source: { before: null, after: 'summary' },
          metadata: { before: null, after: { sources: [1, 2] } },
          session_id: { before: null, after: 's9' },
        },
      ],
    ]);
    expect((await events(summary.id)).map((e) => [e.type, e.payload.tenant_id, e.payload.memory.id])).toEqual([
      ['memory.created', 'acme', summary.id],
    ]);

    const seq = await within(async (trx, effects, c) => {
      const erasure = {
        ctx: c,
        effects,
        seq: 4242,
        hooks: new EraseHooks(endUserPseudonyms(randomBytes(32))),
        rewritten: [] as number[],
        owner: o,
        purging: false,
      };
      await rewriteSummary(trx, erasure, o, summary.id, {
        text: 'A summary of one note',
        metadata: { sources: [2] },
        setKey: 'set-key-2',
      });
      // The hooks after the rewriting one erase the summary's earlier copies.
      expect(erasure.rewritten).toEqual([summary.id]);
      return erasure.seq;
    });
    const rewritten = await row(summary.id);
    expect(rewritten).toMatchObject({ text: 'A summary of one note', dedupe_hash: 'set-key-2' });
    expect(Number(rewritten.seq)).toBe(seq);
    expect(decoded(rewritten.metadata)).toEqual({ sources: [2] });
    // The earlier text survives nowhere: the history keeps no content before the rewrite.
    const after = await history(summary.id);
    expect(after.map((h) => h.action)).toEqual(['create', 'update']);
    expect(after[0]!.changes).toBeNull();
    expect(decoded(after[1]!.changes)).toEqual({
      text: { before: null, after: 'A summary of one note' },
      metadata: { before: null, after: { sources: [2] } },
    });
    expect((await events(summary.id)).map((e) => e.type)).toEqual(['memory.created', 'memory.updated']);
  });

  it('forgets within a transaction: at the sequence it is given or a new one, running every registered hook', async () => {
    const o = owner();
    const [a, b, c] = [
      await addMemory(t, 'forget me a', { endUser: o.endUserId }),
      await addMemory(t, 'forget me b', { endUser: o.endUserId }),
      await addMemory(t, 'keep me c', { endUser: o.endUserId }),
    ];
    const calls: Array<{ ids: number[]; seq: number; hooks: boolean }> = [];
    const hooks = new EraseHooks(endUserPseudonyms(randomBytes(32)));
    hooks.register(
      async (_trx, ids, erasure) => void calls.push({ ids, seq: erasure.seq, hooks: erasure.hooks === hooks }),
    );
    hooks.register(async (_trx, ids) => void calls.push({ ids: ids.map((id) => -id), seq: -1, hooks: true }));

    // Nothing of the owner among the ids: nothing is forgotten, no sequence taken, no hook run.
    const other = await addMemory(t, 'not theirs to forget', { endUser: owner().endUserId });
    const revision = await revisionOf(db(), o);
    expect(
      await within((trx, effects, cx) => forgetWithin(trx, { ctx: cx, effects, hooks }, o, [other.id, 987654321])),
    ).toEqual([]);
    expect(await revisionOf(db(), o)).toBe(revision);
    expect(calls).toEqual([]);

    expect(
      await within((trx, effects, cx) =>
        forgetWithin(trx, { ctx: cx, effects, hooks }, o, [b.id, a.id, a.id, 987654321]),
      ),
    ).toEqual([a.id, b.id]);
    expect(await revisionOf(db(), o)).toBe(revision + 1);
    expect(Number((await row(a.id)).seq)).toBe(revision + 1);
    expect(calls).toEqual([
      { ids: [a.id, b.id], seq: revision + 1, hooks: true },
      { ids: [-a.id, -b.id], seq: -1, hooks: true },
    ]);

    // Given a sequence (a hook forgetting further memories), it uses that one.
    await within((trx, effects, cx) => forgetWithin(trx, { ctx: cx, effects, hooks, seq: 777 }, o, [c.id]));
    expect(Number((await row(c.id)).seq)).toBe(777);
    expect((await row(c.id)).deleted_at).not.toBeNull();
  });

  it('records nothing for no history, and moves touched memories to a new change sequence', async () => {
    const o = owner();
    const m = await addMemory(t, 'touch me', { endUser: o.endUserId });
    await within((trx, effects, c) => recordHistory(trx, c, [], effects.now));
    expect(await history(m.id)).toHaveLength(1);
    const before = await revisionOf(db(), o);
    await within((trx, effects) => touchMemories(trx, o, [m.id], effects.now));
    expect(await revisionOf(db(), o)).toBe(before + 1);
    expect(Number((await row(m.id)).seq)).toBe(before + 1);
  });

  it('updates at a new change sequence, so indexes reload the memory', async () => {
    const o = owner();
    const m = await addMemory(t, 'update me', { endUser: o.endUserId });
    const before = await revisionOf(db(), o);
    const res = await t.call('PATCH', `/memory/${m.id}`, { endUser: o.endUserId, body: { tags: ['updated'] } });
    expect(res.status, res.text).toBe(200);
    expect(Number((await row(m.id)).seq)).toBe(before + 1);
    const batch = await t.call('POST', '/memory/batch-update', {
      endUser: o.endUserId,
      body: { updates: [{ id: m.id, importance: 0.9 }] },
    });
    expect(batch.status, batch.text).toBe(200);
    expect(Number((await row(m.id)).seq)).toBe(before + 2);
  });

  it('converges a turn delivered again within the window, across a window boundary, and not after it', async () => {
    const o = owner('turn-user', 'globex');
    const slot = Math.ceil(Date.now() / TURN_REDELIVERY_WINDOW_MS) + 10;
    const at = (ms: number) => new Date(slot * TURN_REDELIVERY_WINDOW_MS + ms).toISOString();
    const turn = (now: string, text = 'see you at noon') =>
      within((trx, effects, c) =>
        insertTurn(trx, c, { ...effects, now }, t.database, o, {
          text,
          speaker: 'Cy',
          source: 'chat',
          sessionId: 'sx',
          metadata: { channel: 'c1' },
        }),
      );
    const first = await turn(at(-10_000));
    expect(first.created).toBe(true);
    // 20 seconds later, in the next slot: the same turn.
    const again = await turn(at(10_000));
    expect(again).toMatchObject({ created: false, memory: { id: first.memory.id } });
    // Two minutes after the first, in the slot after: a new turn.
    const later = await turn(at(110_000));
    expect(later.created).toBe(true);
    expect((await history(first.memory.id)).map((h) => [h.action, decoded(h.changes)])).toEqual([
      [
        'create',
        {
          text: { before: null, after: 'see you at noon' },
          source: { before: null, after: 'chat' },
          metadata: { before: null, after: { channel: 'c1' } },
          session_id: { before: null, after: 'sx' },
        },
      ],
    ]);
    expect((await events(first.memory.id)).map((e) => [e.type, e.payload.tenant_id])).toEqual([
      ['memory.created', 'globex'],
    ]);
  });

  it('bulk-adds duplicates of earlier items as skipped against the item they repeat', async () => {
    const o = owner();
    const res = await t.call('POST', '/memory/bulk-add', {
      endUser: o.endUserId,
      body: [
        { text: 'alpha item' },
        { text: 'beta item', client_ref: 'ref-b' },
        { text: 'gamma item', client_ref: 'ref-c' },
        { text: 'BETA item!' },
        { text: 'delta item', client_ref: 'ref-c' },
      ],
    });
    expect(res.status, res.text).toBe(207);
    const results = res.body.results as Array<{
      status: string;
      memory?: { id: number };
      memory_id?: number;
      reason?: string;
    }>;
    const [, beta, gamma] = results.map((r) => r.memory?.id);
    expect(results.slice(3).map((r) => [r.status, r.reason, r.memory_id])).toEqual([
      ['skipped', 'duplicate_text', beta],
      ['skipped', 'already_migrated', gamma],
    ]);
  });

  it.runIf(dialect === 'postgres')(
    'looks duplicates up by their index entries, whether or not PostgreSQL has statistics for the rows',
    async () => {
      const o = owner();
      const stored = await within((trx, effects, c) =>
        addWithin(
          t.database,
          trx,
          c,
          effects,
          o,
          Array.from({ length: 1500 }, (_, i) => ({ text: `stored memory ${i}`, client_ref: `ref-${i}` })),
        ),
      );
      const id = (i: number) => ('created' in stored[i]! ? stored[i]!.created.id : undefined);
      // As on a new database, or for an end user grown since the last ANALYZE.
      await sql`delete from pg_statistic where starelid = 'memories'::regclass`.execute(db());
      const { outcomes, entriesRead } = await within(async (trx, effects, c) => {
        // Rows this backend has read from the table, by index or scan (counts not yet reported, which on
        // PostgreSQL 15 include earlier transactions': hence the difference).
        const read = async () =>
          Number(
            (
              await sql<{
                read: string;
              }>`select idx_tup_fetch + seq_tup_read as read from pg_stat_xact_user_tables where relid = 'memories'::regclass`.execute(
                trx,
              )
            ).rows[0]?.read ?? 0,
          );
        const before = await read();
        const outcomes = await addWithin(t.database, trx, c, effects, o, [
          { text: 'STORED memory 7' },
          { text: 'a new one', client_ref: 'ref-9' },
          { text: 'another new one' },
        ]);
        return { outcomes, entriesRead: (await read()) - before };
      });
      expect(outcomes).toEqual([
        { skipped: { reason: 'duplicate_text', memory_id: id(7) } },
        { skipped: { reason: 'duplicate_client_ref', memory_id: id(9) } },
        { created: expect.objectContaining({ text: 'another new one' }) },
      ]);
      // Not the owner's 1,500 rows scanned and filtered.
      expect(entriesRead).toBeLessThan(50);
    },
  );

  it('compares texts without letters or digits with only their spacing ignored, and takes metadata up to its limit', async () => {
    const o = owner();
    const first = await addMemory(t, '🎉 🎉', { endUser: o.endUserId });
    const spaced = await t.call('POST', '/memory/add', { endUser: o.endUserId, body: { text: '🎉   🎉' } });
    expect(spaced.body).toMatchObject({ status: 'skipped', reason: 'duplicate_text', memory_id: first.id });
    expect((await t.call('POST', '/memory/add', { endUser: o.endUserId, body: { text: '🎊 🎉' } })).status).toBe(201);

    const padding = (bytes: number) => ({ pad: 'x'.repeat(bytes - JSON.stringify({ pad: '' }).length) });
    const atLimit = await t.call('POST', '/memory/add', {
      endUser: o.endUserId,
      body: { text: 'metadata at its limit', metadata: padding(MEMORY_LIMITS.metadataBytes) },
    });
    expect(atLimit.status, atLimit.text).toBe(201);
    const over = await t.call('POST', '/memory/add', {
      endUser: o.endUserId,
      body: { text: 'metadata over its limit', metadata: padding(MEMORY_LIMITS.metadataBytes + 1) },
    });
    expect(over.status).toBe(400);
    expect(over.body.error.field).toBe('metadata');
  });
});
