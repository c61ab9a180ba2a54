import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { until } from '../../testing/until.js';

/**
 * Adds arriving together share one statement on PostgreSQL (core/grouped-statements.ts#groupedInsert) and
 * one commit on SQLite: each is still answered with its own memory, duplicates among them are
 * skipped against the first, and every row written beside a memory is that memory's.
 */
forEachDialect('POST /memory/add, many at once', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });

  it('answers each add with its own memory, and writes its own history, event and audit row', async () => {
    const adds = Array.from({ length: 40 }, (_, i) => ({
      endUser: `together-${i % 3}`,
      requestId: `req_together_${i}`,
      body: {
        text: `Memory ${i} of the group`,
        tags: [`t${i}`],
        importance: (i % 10) / 10,
        metadata: { n: i },
        client_ref: `ref-${i}`,
      },
    }));
    const answers = await Promise.all(
      adds.map((a) =>
        t.call('POST', '/memory/add', { endUser: a.endUser, headers: { 'x-request-id': a.requestId }, body: a.body }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(adds.map(() => 201));
    answers.forEach((answer, i) => {
      expect(answer.body).toMatchObject({ ...adds[i]!.body, end_user_id: adds[i]!.endUser });
    });
    const ids = answers.map((a) => a.body.id as number);
    expect(new Set(ids).size).toBe(ids.length);

    const db = t.database.db;
    const stored = await db
      .selectFrom('memories')
      .select(['id', 'text', 'end_user_id', 'seq'])
      .where('id', 'in', ids)
      .execute();
    expect(stored).toHaveLength(40);
    for (const row of stored) {
      const i = ids.indexOf(row.id);
      expect([row.text, row.end_user_id]).toEqual([adds[i]!.body.text, adds[i]!.endUser]);
    }
    const history = await db
      .selectFrom('memory_history')
      .select(['memory_id', 'action', 'changes', 'request_id'])
      .where('memory_id', 'in', ids)
      .execute();
    expect(history).toHaveLength(40);
    for (const row of history) {
      const i = ids.indexOf(row.memory_id);
      expect(row.request_id).toBe(adds[i]!.requestId);
      const changes = typeof row.changes === 'string' ? JSON.parse(row.changes) : row.changes;
      expect(changes.text).toEqual({ before: null, after: adds[i]!.body.text });
    }
    const events = await db
      .selectFrom('outbox_events')
      .select(['memory_id', 'payload', 'type'])
      .where('memory_id', 'in', ids)
      .execute();
    expect(events).toHaveLength(40);
    for (const row of events) {
      const payload = typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload;
      expect(row.type).toBe('memory.created');
      expect(payload.memory).toEqual(answers[ids.indexOf(row.memory_id!)]!.body);
    }
    const audits = await db
      .selectFrom('audit_log')
      .select(['target_id', 'request_id', 'action', 'result'])
      .where('action', '=', 'memory.add')
      .where('target_id', 'in', ids.map(String))
      .execute();
    expect(audits).toHaveLength(40);
    for (const row of audits) expect(row.request_id).toBe(adds[ids.indexOf(Number(row.target_id))]!.requestId);

    // Each end user's revision is the seq of its newest change, and every seq is at most that.
    for (const endUser of ['together-0', 'together-1', 'together-2']) {
      const { revision } = await db
        .selectFrom('end_users')
        .select('revision')
        .where('end_user_id', '=', endUser)
        .executeTakeFirstOrThrow();
      const seqs = stored.filter((m) => m.end_user_id === endUser).map((m) => Number(m.seq));
      expect(Math.max(...seqs)).toBe(Number(revision));
    }
  });

  it('skips duplicates sent together against the one that landed', async () => {
    const sends = [
      { text: 'Sent twice at once', client_ref: null },
      { text: 'sent TWICE at once!', client_ref: null },
      { text: 'First with this ref', client_ref: 'same-ref' },
      { text: 'Second with this ref', client_ref: 'same-ref' },
      { text: 'Unrelated and new', client_ref: null },
    ];
    const answers = await Promise.all(
      sends.map(({ text, client_ref }) =>
        t.call('POST', '/memory/add', { endUser: 'dupes', body: client_ref ? { text, client_ref } : { text } }),
      ),
    );
    // Of two concurrent duplicates, whichever arrives first lands and the other is skipped against it.
    const landedOf = (pair: [number, number], reason: string) => {
      const statuses = pair.map((i) => answers[i]!.status).sort();
      expect(statuses).toEqual([200, 201]);
      const [created, skipped] = answers[pair[0]]!.status === 201 ? pair : [pair[1], pair[0]];
      expect(answers[skipped]!.body).toEqual({ status: 'skipped', reason, memory_id: answers[created]!.body.id });
      return created;
    };
    const sameText = landedOf([0, 1], 'duplicate_text');
    const sameRef = landedOf([2, 3], 'duplicate_client_ref');
    expect(answers[4]!.status).toBe(201);
    const stored = await t.database.db
      .selectFrom('memories')
      .select(['id', 'text'])
      .where('end_user_id', '=', 'dupes')
      .orderBy('id')
      .execute();
    expect(stored.map((m) => m.text).sort()).toEqual(
      [sends[sameText]!.text, sends[sameRef]!.text, sends[4]!.text].sort(),
    );
    for (const i of [sameText, sameRef, 4])
      expect(stored.find((m) => m.id === answers[i]!.body.id)?.text).toBe(sends[i]!.text);
    const audits = await t.database.db
      .selectFrom('audit_log')
      .select(['result'])
      .where('action', '=', 'memory.add')
      .where('target_id', 'in', [answers[sameText]!.body.id, answers[sameRef]!.body.id].map(String))
      .execute();
    expect(audits.map((a) => a.result).sort()).toEqual(['skipped', 'skipped', 'success', 'success']);
  });

  it.runIf(dialect === 'postgres')(
    "does not hold up other end users' adds behind one waiting for a row lock",
    async () => {
      await t.call('POST', '/memory/add', { endUser: 'locked', body: { text: 'Before the lock' } });
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const lockTaken = new Promise<void>((resolve) => (locked = resolve));
      // Another transaction holds the end user's revision row, as a long write of theirs would.
      const holder = t.database.db.transaction().execute(async (trx) => {
        await sql`SELECT revision FROM end_users WHERE end_user_id = 'locked' FOR UPDATE`.execute(trx);
        locked();
        await released;
      });
      await lockTaken;
      let blockedDone = false;
      const blocked = t
        .call('POST', '/memory/add', { endUser: 'locked', body: { text: 'Waits for the lock' } })
        .then((res) => {
          blockedDone = true;
          return res;
        });
      // The add's statement is under way once its backend waits for that lock.
      await until(
        async () => {
          const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%json_to_recordset%'`.execute(
            t.database.db,
          );
          return rows[0]!.n > 0;
        },
        "the add's statement to wait for the lock",
        10_000,
      );
      const other = await t.call('POST', '/memory/add', { endUser: 'free', body: { text: 'Not held up' } });
      expect(other.status).toBe(201);
      expect(blockedDone).toBe(false);
      release();
      await holder;
      expect((await blocked).status).toBe(201);
    },
  );
});
