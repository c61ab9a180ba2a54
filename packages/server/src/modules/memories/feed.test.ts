import { sql } from 'kysely';
import { decodeJson } from '../../store/database.js';
import { beforeAll, expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { addMemory } from '../../testing/memories.js';
import {
  changesSince,
  countForExport,
  exportPage,
  forgottenSince,
  historyOfMemories,
  largeOwnersChangedAfter,
  listMemories,
  liveMemoryCount,
  liveMemoryCountOf,
  liveOwnerIds,
  liveOwnerPage,
  LIVE_PAGE_COLUMNS,
  liveProjectMemories,
  memoriesByIds,
  memoryCounts,
  ownerMemoriesAt,
  ownersOfMemories,
  projectRevision,
  revisionOf,
  type IndexedMemory,
} from './index.js';
import { rowsAtRevisionTogether } from './reads.js';

/**
 * The read side other modules build on (retrieval indexes, /v1 lists, exports, erase hooks),
 * called as they call it: each function must keep to the scope it is given, whatever ids or
 * filters it is handed.
 */
type PlanNode = { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] };
class RolledBack extends Error {}

forEachDialect('memory feed', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });
  /** Memory ids by name, written before the tests. */
  const ids: Record<string, number> = {};

  const turn = async (tenant: string, user: string, text: string, session = 's1') => {
    const res = await t.call('POST', '/v1/memory/add_turn', {
      endUser: null,
      headers: { 'X-Tenant-ID': tenant },
      body: { tenant_id: tenant, user_id: user, text, speaker: 'me', metadata: { session_id: session } },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.id as number;
  };

  beforeAll(async () => {
    ids.alice = (await addMemory(t, { text: 'alice likes tea', tags: ['drink'] }, { endUser: 'alice' })).id;
    ids.aliceForgotten = (await addMemory(t, 'alice forgot this', { endUser: 'alice' })).id;
    ids.bob = (await addMemory(t, { text: 'bob likes coffee', tags: ['drink', 'morning'] }, { endUser: 'bob' })).id;
    ids.acmeU1 = await turn('acme', 'u1', 'acme u1 turn');
    ids.acmeU1Other = await turn('acme', 'u1', 'acme u1 in another session', 's2');
    ids.acmeU2 = await turn('acme', 'u2', 'acme u2 turn');
    ids.globexU1 = await turn('globex', 'u1', 'globex u1 turn');
    expect(
      (await t.call('DELETE', '/memory/forget', { endUser: 'alice', body: { ids: [ids.aliceForgotten] } })).status,
    ).toBe(200);
  });

  const project = () => t.projectId;
  const plain = (endUserId: string) => ({ projectId: project(), tenantId: '', endUserId });
  const idsOf = (rows: Array<{ id: number }>) => rows.map((r) => r.id);

  it('gives rows by id only within the scope asked, in the order asked, never forgotten ones', async () => {
    const db = t.database.db;
    const all = [ids.globexU1!, ids.acmeU2!, ids.acmeU1!, ids.bob!, ids.alice!, ids.aliceForgotten!];
    expect(idsOf(await memoriesByIds(db, { projectId: project() }, all))).toEqual([
      ids.globexU1,
      ids.acmeU2,
      ids.acmeU1,
      ids.bob,
      ids.alice,
    ]);
    expect(idsOf(await memoriesByIds(db, { projectId: project(), tenantId: 'acme' }, all))).toEqual([
      ids.acmeU2,
      ids.acmeU1,
    ]);
    expect(idsOf(await memoriesByIds(db, { projectId: project(), tenantId: 'acme', endUserId: 'u1' }, all))).toEqual([
      ids.acmeU1,
    ]);
    // An end user of the same name in another tenant is another person.
    expect(idsOf(await memoriesByIds(db, { projectId: project(), endUserId: 'u1' }, all))).toEqual([
      ids.globexU1,
      ids.acmeU1,
    ]);
    expect(idsOf(await memoriesByIds(db, { projectId: project(), tenantId: '', endUserId: 'alice' }, all))).toEqual([
      ids.alice,
    ]);
    expect(await memoriesByIds(db, { projectId: 'no-such-project' }, all)).toEqual([]);
    expect(await memoriesByIds(db, { projectId: project() }, [])).toEqual([]);
    const [row] = await memoriesByIds(db, { projectId: project() }, [ids.acmeU1!]);
    expect(row).toMatchObject({
      id: ids.acmeU1,
      text: 'acme u1 turn',
      tenant_id: 'acme',
      end_user_id: 'u1',
      speaker: 'me',
      session_id: 's1',
    });
  });

  it("gives an owner's revision with its live rows by id, in the order asked, only the owner's", async () => {
    const db = t.database.db;
    const all = [ids.globexU1!, ids.acmeU1Other!, ids.acmeU2!, ids.acmeU1!, ids.bob!, ids.alice!, ids.aliceForgotten!];
    const u1 = { projectId: project(), tenantId: 'acme', endUserId: 'u1' };
    const at = await ownerMemoriesAt(t.database, u1, all);
    expect(at.revision).toBe(await revisionOf(db, u1));
    expect(at.revision).toBeGreaterThan(0);
    // With the credentials clock of the same snapshot (core/credentials-clock.ts).
    const clock = Number(
      (await db.selectFrom('credentials_clock').select('generation').executeTakeFirstOrThrow()).generation,
    );
    expect(at.clock).toBe(clock);
    expect(idsOf(at.memories)).toEqual([ids.acmeU1Other, ids.acmeU1]);
    expect(at.memories[1]).toMatchObject({
      id: ids.acmeU1,
      text: 'acme u1 turn',
      tenant_id: 'acme',
      end_user_id: 'u1',
      speaker: 'me',
      session_id: 's1',
    });
    // Forgotten rows are not given; ids of nothing live still give the revision.
    const alice = await ownerMemoriesAt(t.database, plain('alice'), [ids.aliceForgotten!, ids.bob!]);
    expect(alice).toEqual({ revision: await revisionOf(db, plain('alice')), memories: [], clock });
    expect(idsOf((await ownerMemoriesAt(t.database, plain('alice'), all)).memories)).toEqual([ids.alice]);
    // An owner with nothing written, or of another project: revision 0, no rows, no clock.
    expect(await ownerMemoriesAt(t.database, plain('nobody'), all)).toEqual({
      revision: 0,
      memories: [],
      clock: undefined,
    });
    expect(await ownerMemoriesAt(t.database, { ...plain('alice'), projectId: 'no-such-project' }, all)).toEqual({
      revision: 0,
      memories: [],
      clock: undefined,
    });
  });

  it('answers owners read at the same time each with its own revision and rows, as when read alone', async () => {
    const all = [ids.globexU1!, ids.acmeU1Other!, ids.acmeU2!, ids.acmeU1!, ids.bob!, ids.alice!, ids.aliceForgotten!];
    const owners = [
      { projectId: project(), tenantId: 'acme', endUserId: 'u1' },
      { projectId: project(), tenantId: 'acme', endUserId: 'u2' },
      { projectId: project(), tenantId: 'globex', endUserId: 'u1' },
      plain('alice'),
      plain('bob'),
      plain('nobody'),
    ];
    const alone: Array<Awaited<ReturnType<typeof ownerMemoriesAt>>> = [];
    for (const owner of owners) alone.push(await ownerMemoriesAt(t.database, owner, all));
    // Submitted in one turn of the event loop: on PostgreSQL one statement answers them all (rowsAtRevisionTogether).
    const together = await Promise.all(
      [...owners, ...owners].map((owner, i) => ownerMemoriesAt(t.database, owner, i % 2 ? [...all].reverse() : all)),
    );
    owners.forEach((_, i) => {
      expect(together[i]).toEqual({
        ...alone[i],
        memories: i % 2 ? [...alone[i]!.memories].reverse() : alone[i]!.memories,
      });
      expect(together[owners.length + i]).toEqual(together[i]);
    });
    expect(alone.map((at) => idsOf(at.memories))).toEqual([
      [ids.acmeU1Other, ids.acmeU1],
      [ids.acmeU2],
      [ids.globexU1],
      [ids.alice],
      [ids.bob],
      [],
    ]);
  });

  it.runIf(dialect === 'postgres')(
    'reads owners together by their index entries, whether or not PostgreSQL has statistics for the tables',
    async () => {
      const given = JSON.stringify([
        { ord: 0, project_id: project(), tenant_id: 'acme', end_user_id: 'u1', ids: [ids.acmeU1, ids.acmeU2] },
      ]);
      const scans: string[] = [];
      // Tables of some size (written and rolled back) with no statistics, as on a new database or one never analysed.
      await t.database.db
        .transaction()
        .execute(async (trx) => {
          await sql`insert into end_users select ${project()}, '', 'filler-' || g, 1, now(), now() from generate_series(1, 5000) g`.execute(
            trx,
          );
          await sql`insert into memories (project_id, tenant_id, end_user_id, text, tags, importance, metadata, seq, created_at, updated_at)
        select ${project()}, '', 'filler-1', 'filler ' || g, '[]', 0.5, '{}', g, now(), now() from generate_series(1, 20000) g`.execute(
            trx,
          );
          await sql`delete from pg_statistic where starelid in ('memories'::regclass, 'end_users'::regclass)`.execute(
            trx,
          );
          const explained = `EXPLAIN (FORMAT JSON) ${rowsAtRevisionTogether.text.replace('$1::json', `'${given}'::json`)}`;
          const [
            {
              'QUERY PLAN': [{ Plan: plan }],
            },
          ] = (await sql.raw<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(explained).execute(trx)).rows as [
            { 'QUERY PLAN': [{ Plan: PlanNode }] },
          ];
          const walk = (node: PlanNode): void => {
            if (node['Relation Name']) scans.push(`${node['Node Type']} ${node['Relation Name']}`);
            node.Plans?.forEach(walk);
          };
          walk(plan);
          throw new RolledBack();
        })
        .catch((error) => {
          if (!(error instanceof RolledBack)) throw error;
        });
      expect(scans).toContain('Index Scan end_users');
      expect(
        scans.filter(
          (scan) => !scan.startsWith('Index Scan') && !scan.startsWith('Bitmap') && !scan.endsWith('credentials_clock'),
        ),
      ).toEqual([]);
    },
  );

  it('tells whether anything of an owner was forgotten after a sequence', async () => {
    const forgottenAt = Number(
      (
        await t.database.db
          .selectFrom('memories')
          .select('seq')
          .where('id', '=', ids.aliceForgotten!)
          .executeTakeFirstOrThrow()
      ).seq,
    );
    const since = (owner: ReturnType<typeof plain>, seq: number) =>
      t.database.db.transaction().execute((trx) => forgottenSince(t.database, trx, owner, seq));
    expect(await since(plain('alice'), forgottenAt - 1)).toBe(true);
    expect(await since(plain('alice'), forgottenAt)).toBe(false);
    expect(await since(plain('bob'), 0)).toBe(false);
    expect(await since({ projectId: project(), tenantId: 'acme', endUserId: 'alice' }, 0)).toBe(false);
  });

  it('finds end users changed after a time with at least so many live memories, with their revision', async () => {
    const db = t.database.db;
    const owners = async (after: string, min: number) =>
      (await largeOwnersChangedAfter(db, after, min)).map(({ owner, revision }) => [
        owner.tenantId,
        owner.endUserId,
        revision,
      ]);
    const revision = (tenantId: string, endUserId: string) =>
      revisionOf(db, { projectId: project(), tenantId, endUserId });
    const epoch = new Date(0).toISOString();
    // alice's forgotten memory does not count; acme's u1 has two turns.
    expect(await owners(epoch, 2)).toEqual([['acme', 'u1', await revision('acme', 'u1')]]);
    expect(await owners(epoch, 1)).toEqual([
      ['', 'alice', await revision('', 'alice')],
      ['', 'bob', await revision('', 'bob')],
      ['acme', 'u1', await revision('acme', 'u1')],
      ['acme', 'u2', await revision('acme', 'u2')],
      ['globex', 'u1', await revision('globex', 'u1')],
    ]);
    expect(await owners(new Date(Date.now() + 60_000).toISOString(), 1)).toEqual([]);
    expect(await owners(epoch, 3)).toEqual([]);
  });

  it("follows an owner's changes: live rows from scratch, forgotten ones after a sequence", async () => {
    const db = t.database.db;
    const fromScratch = await changesSince(db, plain('alice'), 0);
    expect(fromScratch.map((r) => [r.id, r.deleted])).toEqual([[ids.alice, false]]);
    expect(fromScratch[0]).toMatchObject({
      text: 'alice likes tea',
      tags: ['drink'],
      end_user_id: 'alice',
      is_summary: false,
    });
    const first = fromScratch[0]!.seq;
    const later = await changesSince(db, plain('alice'), first);
    expect(later.map((r) => [r.id, r.deleted])).toEqual([[ids.aliceForgotten, true]]);
    expect(await changesSince(db, plain('alice'), Math.max(first, later[0]!.seq))).toEqual([]);
    expect(await revisionOf(db, plain('alice'))).toBeGreaterThanOrEqual(later[0]!.seq);
    expect(await revisionOf(db, plain('nobody'))).toBe(0);
  });

  it('sums revisions and lists live memories per project or tenant', async () => {
    const db = t.database.db;
    const owners = [
      plain('alice'),
      plain('bob'),
      { projectId: project(), tenantId: 'acme', endUserId: 'u1' },
      { projectId: project(), tenantId: 'acme', endUserId: 'u2' },
      { projectId: project(), tenantId: 'globex', endUserId: 'u1' },
    ];
    const revisions = await Promise.all(owners.map((o) => revisionOf(db, o)));
    expect(await projectRevision(db, project(), null)).toBe(revisions.reduce((a, b) => a + b, 0));
    expect(await projectRevision(db, project(), 'acme')).toBe(revisions[2]! + revisions[3]!);
    expect(await projectRevision(db, 'no-such-project', null)).toBe(0);

    const collect = async (tenantId: string | null) => {
      const out: number[] = [];
      for await (const row of liveProjectMemories(db, project(), tenantId)) out.push(row.id);
      return out;
    };
    expect(await collect(null)).toEqual([ids.alice, ids.bob, ids.acmeU1, ids.acmeU1Other, ids.acmeU2, ids.globexU1]);
    expect(await collect('acme')).toEqual([ids.acmeU1, ids.acmeU1Other, ids.acmeU2]);
    expect(await liveMemoryCount(db, [project()])).toBe(6);
    expect(await liveMemoryCount(db, [])).toBe(0);
    // One end user's, counted no further than asked (whether there are more than N).
    const acmeU1 = owners[2]!;
    expect(await liveMemoryCountOf(db, acmeU1, 10)).toBe(2);
    expect(await liveMemoryCountOf(db, acmeU1, 2)).toBe(2);
    expect(await liveMemoryCountOf(db, acmeU1, 1)).toBe(1);
    expect(await liveMemoryCountOf(db, owners[4]!, 10)).toBe(1);
  });

  it('lists and counts /v1 memories by tenant, end user and session', async () => {
    const db = t.database.db;
    const page = { offset: 0, limit: 50 };
    const list = async (filter: { tenantId?: string; endUserId?: string; sessionId?: string }) =>
      idsOf((await listMemories(db, { projectId: project(), ...filter }, page)).items);
    // Newest first, and never a memory of the plain (tenant-less) API.
    expect(await list({})).toEqual([ids.globexU1, ids.acmeU2, ids.acmeU1Other, ids.acmeU1]);
    expect(await list({ tenantId: 'acme' })).toEqual([ids.acmeU2, ids.acmeU1Other, ids.acmeU1]);
    expect(await list({ endUserId: 'u1' })).toEqual([ids.globexU1, ids.acmeU1Other, ids.acmeU1]);
    expect(await list({ tenantId: 'acme', endUserId: 'u1', sessionId: 's2' })).toEqual([ids.acmeU1Other]);

    expect(await memoryCounts(db, { projectId: project(), tenantId: null, endUserId: null })).toEqual({
      tenants: 2,
      users: 2,
      memories: 4,
    });
    expect(await memoryCounts(db, { projectId: project(), tenantId: 'acme', endUserId: null })).toEqual({
      tenants: 1,
      users: 2,
      memories: 3,
    });
    expect(await memoryCounts(db, { projectId: project(), tenantId: null, endUserId: 'u2' })).toEqual({
      tenants: 1,
      users: 1,
      memories: 1,
    });
  });

  it('exports exactly what the filter names', async () => {
    const base = { projectId: project() };
    const exported = async (filter: Record<string, unknown>) => {
      const rows = await exportPage(t.database, { ...base, ...filter }, 0, 100);
      expect(await countForExport(t.database, { ...base, ...filter })).toBe(rows.length);
      return idsOf(rows);
    };
    expect(await exported({})).toEqual([ids.alice, ids.bob, ids.acmeU1, ids.acmeU1Other, ids.acmeU2, ids.globexU1]);
    expect(await exported({ tenantId: 'acme' })).toEqual([ids.acmeU1, ids.acmeU1Other, ids.acmeU2]);
    expect(await exported({ endUserId: 'u1' })).toEqual([ids.acmeU1, ids.acmeU1Other, ids.globexU1]);
    expect(await exported({ sessionId: 's2' })).toEqual([ids.acmeU1Other]);
    expect(await exported({ tagsAny: ['morning', 'evening'] })).toEqual([ids.bob]);
    expect(await exported({ tagsAny: ['drink'] })).toEqual([ids.alice, ids.bob]);
    expect(await exported({ tagsAny: [] })).toHaveLength(6);
    const { created_at: bobCreated } = await t.database.db
      .selectFrom('memories')
      .select('created_at')
      .where('id', '=', ids.bob!)
      .executeTakeFirstOrThrow();
    expect(await exported({ createdBefore: bobCreated })).toEqual([ids.alice]);
    expect(await exported({ createdAfter: bobCreated })).not.toContain(ids.bob);
    expect(await exported({ createdAfter: bobCreated })).not.toContain(ids.alice);
    expect(await exportPage(t.database, base, ids.acmeU2!, 100).then(idsOf)).toEqual([ids.globexU1]);
    const [row] = await exportPage(t.database, { ...base, tenantId: 'globex' }, 0, 1);
    expect(row).toMatchObject({ id: ids.globexU1, tenant_id: 'globex', speaker: 'me', end_user_id: 'u1' });
  });

  it('gives history grouped by memory and owners of memories, forgotten ones included', async () => {
    const db = t.database.db;
    expect((await historyOfMemories(db, project(), [])).size).toBe(0);
    const history = await historyOfMemories(db, project(), [ids.alice!, ids.aliceForgotten!]);
    expect(history.get(ids.alice!)!.map((h) => h.action)).toEqual(['create']);
    expect(history.get(ids.aliceForgotten!)!.map((h) => h.action)).toEqual(['create', 'forget']);
    expect(history.get(ids.alice!)![0]).toMatchObject({ actor: { type: 'api_key', id: t.keyId } });
    expect((await historyOfMemories(db, 'no-such-project', [ids.alice!])).size).toBe(0);

    expect(await ownersOfMemories(db, [])).toEqual([]);
    const owners = await ownersOfMemories(db, [ids.aliceForgotten!, ids.acmeU2!]);
    expect(owners.map((o) => [o.id, o.tenant_id, o.end_user_id]).sort()).toEqual(
      [
        [ids.aliceForgotten, '', 'alice'],
        [ids.acmeU2, 'acme', 'u2'],
      ].sort(),
    );
  });

  // Last: the memories it writes would change what the tests above count.
  it("gives an owner's live rows from scratch in id order, however their changes were ordered", async () => {
    const first = (await addMemory(t, 'carol reads', { endUser: 'carol' })).id;
    const second = (await addMemory(t, 'carol writes', { endUser: 'carol' })).id;
    // Changed after the second: its sequence is now the owner's last.
    const patched = await t.call('PATCH', `/memory/${first}`, { endUser: 'carol', body: { tags: ['books'] } });
    expect(patched.status, patched.text).toBe(200);
    const rows = await changesSince(t.database.db, plain('carol'), 0);
    expect(rows.map((r) => r.id)).toEqual([first, second]);
    expect(rows[0]!.seq).toBeGreaterThan(rows[1]!.seq);
    // Values a page's JSON (PostgreSQL) must carry as node-pg reads them: escapes, keys jsonb reorders, numbers.
    const body = {
      text: 'dave said "hi"\\ \u2014 caf\u00e9 \u{1f9d8}\u200d\u2640\ufe0f\n\ttab',
      tags: ['b "q"', 'a\u00e9'],
      metadata: {
        zz: 1,
        a: { 'x y': [1.5, null, true], e: 12345678901234 },
        long: 'x'.repeat(300),
        n: -0.1234567890123457,
      },
      importance: 0.12345678901234568,
      session_id: 's\u00e9',
    };
    await addMemory(t, body, { endUser: 'dave' });
    await addMemory(t, { ...body, text: 'dave again', metadata: {} }, { endUser: 'dave' });
    // The same a page at a time (a cold index's read), forgotten rows and other owners' left out.
    for (const [owner, size] of [
      [plain('carol'), 1],
      [plain('dave'), 1000],
      [plain('alice'), 1],
      [plain('alice'), 1000],
      [{ projectId: project(), tenantId: 'acme', endUserId: 'u1' }, 1],
    ] as const) {
      const ids = await liveOwnerIds(t.database.db, owner);
      const paged: unknown[][] = [];
      for (let at = 0; at < ids.length; at += size)
        paged.push(
          ...(await liveOwnerPage(t.database.db, t.database.dialect, owner, Array.from(ids.subarray(at, at + size)))),
        );
      // The values of LIVE_PAGE_COLUMNS in order, tags and metadata as stored.
      const asRow = (values: unknown[]) => {
        const row = Object.fromEntries(LIVE_PAGE_COLUMNS.map((column, i) => [column, values[i]]));
        // As JSON.stringify writes the values (the index's filter metadata is keyed by that text).
        expect(row.tags).toBe(JSON.stringify(decodeJson(row.tags)));
        expect(row.metadata).toBe(JSON.stringify(decodeJson(row.metadata)));
        return { ...row, tags: decodeJson(row.tags), metadata: decodeJson(row.metadata), is_summary: !!row.is_summary };
      };
      const columns = (row: IndexedMemory) =>
        Object.fromEntries(LIVE_PAGE_COLUMNS.map((column) => [column, row[column]]));
      expect(paged.map(asRow)).toEqual((await changesSince(t.database.db, owner, 0)).map(columns));
      expect(ids.length).toBeGreaterThanOrEqual(paged.length);
    }
    // Forgotten memories are among the ids.
    expect(await liveOwnerIds(t.database.db, plain('alice'))).toHaveLength(2);
  });
});
