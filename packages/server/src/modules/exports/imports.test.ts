import { gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { beforeAll, expect, it } from 'vitest';
import { createApiKey, createProject } from '../org/index.js';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { countRows, expectError } from '../../testing/memories.js';
import { waitFor } from '../../testing/jobs.js';
import { until } from '../../testing/until.js';
import { importJob } from './imports.js';
import { sealAuditChains } from '../../core/audit-log.js';
import { columnsHolding } from '../../testing/erasure.js';
import { verifyAuditChains } from '../audit/index.js';

forEachDialect('imports', (dialect) => {
  // Batches of 1,000 records, so that files of a few thousand cross batch boundaries (the default is 10,000).
  const t = useTestApp(dialect, { importBatch: 1_000 });
  const owner = useOwner(t);

  const upload = (project: string, body: string | Buffer, query = '', contentType = 'application/x-ndjson') =>
    t.app.inject({
      method: 'POST',
      url: `/imports${query}`,
      payload: body,
      headers: { authorization: `Bearer ${owner.token}`, 'x-project-id': project, 'content-type': contentType },
    });
  const imported = async (project: string, body: string | Buffer, query = '') => {
    const res = await upload(project, body, query);
    expect(res.statusCode, res.body).toBe(202);
    return waitFor(t, owner.token, `/imports/${JSON.parse(res.body).id}`, project, (b) =>
      ['completed', 'failed', 'cancelled'].includes(b.status),
    );
  };
  const memoriesOf = async (project: string) =>
    t.database.db
      .selectFrom('memories')
      .selectAll()
      .where('project_id', '=', project)
      .where('deleted_at', 'is', null)
      .orderBy('id')
      .execute();

  let source: string;
  beforeAll(async () => {
    source = t.projectId;
    // Memories of several end users, a tenant's turns, summaries, tags, metadata and timestamps to carry over.
    for (let start = 0; start < 1_500; start += 50) {
      const items = Array.from({ length: 50 }, (_, i) => ({
        text: `fact ${start + i} ünïcode "quoted"`,
        tags: [`t${(start + i) % 4}`, 'x'],
        metadata: { n: start + i, nested: { a: [1, null] } },
        importance: ((start + i) % 10) / 10,
        ...((start + i) % 5 === 0 ? { source: 'crm', session_id: `s${start}` } : {}),
      }));
      expect((await t.call('POST', '/memory/bulk-add', { body: items, endUser: `user-${start % 3}` })).status).toBe(
        200,
      );
    }
    const tenantKey = await createApiKey(t.database.db, {
      organizationId: t.organizationId,
      name: 'v1',
      projectId: source,
      tenantId: 'acme',
    });
    for (const [speaker, text] of [
      ['user', 'I moved to Lisbon'],
      ['assistant', 'Noted: Lisbon'],
    ]) {
      const res = await t.call('POST', '/v1/memory/add_turn', {
        key: tenantKey.key,
        endUser: null,
        body: {
          tenant_id: 'acme',
          user_id: 'u9',
          text,
          speaker,
          metadata: { session_id: 'chat-1', timestamp: '2024-03-01T10:00:00.000Z' },
        },
      });
      expect(res.status, res.text).toBe(201);
    }
  }, 120_000);

  it('an export of a project round-trips through import into an empty project: identical texts, tags, metadata and timestamps', async () => {
    const created = await t.call('POST', '/exports', { token: owner.token, project: source, body: { gzip: true } });
    const done = await waitFor(t, owner.token, `/exports/${created.body.id}`, source);
    expect(done.status).toBe('completed');
    const file = await t.app.inject({
      method: 'GET',
      url: `/exports/${done.id}/download`,
      headers: { authorization: `Bearer ${owner.token}`, 'x-project-id': source },
    });
    const target = (
      await createProject(t.database.db, { organizationId: t.organizationId, name: 'Target', slug: 'target' })
    ).id;

    const result = await imported(target, file.rawPayload);
    expect(result).toMatchObject({
      status: 'completed',
      format: 'auto',
      created: 1_502,
      skipped: 0,
      error: null,
      progress: { rows_done: 1_502, rows_total: 1_502, bytes_total: file.rawPayload.length },
    });
    const portable = (rows: Awaited<ReturnType<typeof memoriesOf>>) =>
      rows
        .map((r) => ({
          text: r.text,
          tags: typeof r.tags === 'string' ? JSON.parse(r.tags) : r.tags,
          metadata: typeof r.metadata === 'string' ? JSON.parse(r.metadata) : r.metadata,
          created_at: r.created_at,
          updated_at: r.updated_at,
          end_user_id: r.end_user_id,
          tenant_id: r.tenant_id,
          importance: r.importance,
          source: r.source,
          session_id: r.session_id,
          speaker: r.speaker,
          is_summary: Boolean(r.is_summary),
        }))
        .sort((a, b) => (a.text < b.text ? -1 : 1));
    expect(portable(await memoriesOf(target))).toEqual(portable(await memoriesOf(source)));
    // The turns are still turns: /v1 recall reads them back.
    expect((await memoriesOf(target)).filter((m) => m.speaker).map((m) => m.created_at)).toEqual([
      '2024-03-01T10:00:00.000Z',
      '2024-03-01T10:00:00.000Z',
    ]);

    // A re-run (as after an interruption) skips everything that landed.
    const again = await imported(target, file.rawPayload);
    expect(again).toMatchObject({ status: 'completed', created: 0, skipped: 1_502 });
    expect(await memoriesOf(target)).toHaveLength(1_502);
    // The uploaded files are gone once read.
    const keys = await t.database.db.selectFrom('blobs').select('key').execute();
    expect(keys.filter((k) => k.key.includes('/imports/'))).toEqual([]);
  });

  it("imports Mem0's export format and its get_all list, with client_ref = the Mem0 id", async () => {
    const target = (
      await createProject(t.database.db, { organizationId: t.organizationId, name: 'From Mem0', slug: 'from-mem0' })
    ).id;
    // The shape of Mem0's documented export / get_all (v1.1) output.
    const mem0 = {
      results: [
        {
          id: '892db2ae-06d9-49e5-8b3e-585ef9b85b8e',
          memory: 'User is planning a trip to Japan next month.',
          user_id: 'alice',
          metadata: { source: 'chat' },
          categories: ['travel'],
          created_at: '2024-07-20T01:30:52.014958-07:00',
          updated_at: '2024-07-21T08:00:00.000000-07:00',
          hash: 'b3c5f4a6',
          agent_id: null,
          run_id: null,
        },
        {
          id: 'c1b2c3d4-0000-4000-8000-000000000002',
          memory: 'Is vegetarian',
          user_id: 'alice',
          metadata: null,
          categories: ['food', 'health'],
          created_at: '2024-07-22T10:00:00Z',
          updated_at: null,
        },
        {
          id: 'c1b2c3d4-0000-4000-8000-000000000003',
          memory: 'Prefers window seats',
          user_id: 'bob',
          metadata: {},
          categories: [],
          created_at: '2024-07-23T10:00:00Z',
          run_id: 'trip-planning',
        },
      ],
    };
    const result = await imported(target, JSON.stringify(mem0, null, 2), '?format=mem0');
    expect(result).toMatchObject({ status: 'completed', format: 'mem0', created: 3, skipped: 0 });
    const rows = await memoriesOf(target);
    expect(rows.map((r) => [r.end_user_id, r.text, r.client_ref, r.created_at, r.session_id])).toEqual([
      [
        'alice',
        'User is planning a trip to Japan next month.',
        '892db2ae-06d9-49e5-8b3e-585ef9b85b8e',
        '2024-07-20T08:30:52.014Z',
        null,
      ],
      ['alice', 'Is vegetarian', 'c1b2c3d4-0000-4000-8000-000000000002', '2024-07-22T10:00:00.000Z', null],
      [
        'bob',
        'Prefers window seats',
        'c1b2c3d4-0000-4000-8000-000000000003',
        '2024-07-23T10:00:00.000Z',
        'trip-planning',
      ],
    ]);
    const first = await t.call('GET', `/memory/${rows[0]!.id}`, { project: target, endUser: 'alice' });
    expect(first.body).toMatchObject({
      tags: ['travel'],
      metadata: { source: 'chat' },
      updated_at: '2024-07-21T15:00:00.000Z',
    });
    // get_all's bare list, auto-detected: the ones that landed are skipped.
    const again = await imported(
      target,
      JSON.stringify([
        ...mem0.results,
        { id: 'n4', memory: 'Owns a cat', user_id: 'bob', created_at: '2024-08-01T00:00:00Z' },
      ]),
    );
    expect(again).toMatchObject({ status: 'completed', format: 'auto', created: 1, skipped: 3 });
  });

  it('a malformed file fails naming the record and line; whole batches before it stay, and a re-run skips them', async () => {
    const target = (
      await createProject(t.database.db, { organizationId: t.organizationId, name: 'Broken', slug: 'broken' })
    ).id;
    const good = (n: number) =>
      JSON.stringify({
        id: `m${n}`,
        memory: `memory number ${n}`,
        user_id: 'carol',
        created_at: '2024-01-01T00:00:00Z',
      });
    const records = Array.from({ length: 1_100 }, (_, i) => good(i));
    records[1_050] = JSON.stringify({ id: 'bad', memory: '', user_id: 'carol' });
    const file = `{"results": [\n${records.join(',\n')}\n]}`;
    const failed = await imported(target, gzipSync(file));
    expect(failed).toMatchObject({ status: 'failed', created: 1_000, progress: { rows_done: 1_000 } });
    expect(failed.error).toMatchObject({ record: 1_051, line: 1_052, message: expect.stringContaining('memory') });
    expect(await memoriesOf(target)).toHaveLength(1_000);

    const truncated = await imported(target, file.slice(0, file.indexOf('memory number 1020')));
    expect(truncated.status).toBe('failed');
    expect(truncated.error.message).toMatch(/ends inside a JSON value/);

    records[1_050] = good(1_050);
    const fixed = await imported(target, `{"results": [${records.join(',')}]}`);
    expect(fixed).toMatchObject({ status: 'completed', created: 100, skipped: 1_000 });
  });

  it('a batch across end users with a duplicate in its middle lands the rest once; a refused batch lands nothing; what landed is erased whole and the audit chain verifies', async () => {
    const target = (
      await createProject(t.database.db, { organizationId: t.organizationId, name: 'Interleaved', slug: 'interleaved' })
    ).id;
    const marker = `erasure-marker-${Date.now()}`;
    // 40 end users, one after another: each 1,000-record batch spans them all; user-7's memories carry the marker.
    const record = (prefix: string, n: number, memory = `interleaved ${n}${n % 40 === 7 ? ` ${marker}` : ''}`) =>
      JSON.stringify({ id: `${prefix}${n}`, memory, user_id: `user-${n % 40}`, created_at: '2024-02-01T00:00:00Z' });
    const file = (prefix: string, count: number, at?: { n: number; memory: string }) =>
      JSON.stringify({
        results: Array.from({ length: count }, (_, n) =>
          JSON.parse(n === at?.n ? record(prefix, n, at.memory) : record(prefix, n)),
        ),
      });
    const historyRows = async () =>
      Number(
        (
          await t.database.db
            .selectFrom('memory_history')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('project_id', '=', target)
            .where('action', '=', 'create')
            .executeTakeFirstOrThrow()
        ).n,
      );
    // The end user of record 1,500 (the middle of the second batch) has its memory already, under another id.
    expect(
      await imported(target, file('seed-', 1, { n: 0, memory: 'interleaved 1500' }).replace('user-0', 'user-20')),
    ).toMatchObject({ status: 'completed', created: 1 });
    const done = await imported(target, file('x', 2_500));
    expect(done).toMatchObject({ status: 'completed', created: 2_499, skipped: 1 });
    const texts = (await memoriesOf(target)).map((m) => `${m.end_user_id}:${m.text}`);
    expect(texts).toHaveLength(2_500);
    expect(new Set(texts).size).toBe(2_500);
    expect(await historyRows()).toBe(2_500);

    // A batch the memories module refuses (a blank text) lands nothing of itself; the batch before it stays.
    const refusing = (
      await createProject(t.database.db, { organizationId: t.organizationId, name: 'Refusing', slug: 'refusing' })
    ).id;
    const failed = await imported(refusing, file('r', 2_500, { n: 1_500, memory: '   ' }));
    expect(failed).toMatchObject({ status: 'failed', created: 1_000, progress: { rows_done: 1_000 } });
    expect(failed.error).toMatchObject({ record: 2_000, message: expect.stringContaining('blank') });
    expect(await memoriesOf(refusing)).toHaveLength(1_000);
    const refusedHistory = await t.database.db
      .selectFrom('memory_history')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('project_id', '=', refusing)
      .executeTakeFirstOrThrow();
    expect(Number(refusedHistory.n)).toBe(1_000);

    // Erasing an imported end user leaves no copy of its memories (the rows, their history, their events).
    for (const project of [target, refusing]) {
      const key = await createApiKey(t.database.db, {
        organizationId: t.organizationId,
        name: 'erase',
        projectId: project,
      });
      expect((await t.call('DELETE', '/memory/user/user-7', { key: key.key, project, endUser: null })).status).toBe(
        200,
      );
    }
    expect(await columnsHolding(t.database, marker)).toEqual([]);

    // What `engram audit verify` runs: the chain, sealed, verifies.
    await sealAuditChains(t.database);
    expect(await verifyAuditChains(t.database, t.organizationId)).toMatchObject([{ ok: true }]);
  });

  it('bad input: empty body, unknown format, another project; lists and cancels', async () => {
    expect((await upload(t.projectId, '')).statusCode).toBe(400);
    const unknown = await upload(t.projectId, '[]', '?format=csv');
    expect(unknown.statusCode).toBe(400);
    expect(JSON.parse(unknown.body).error.field).toBe('format');
    const other = await t.otherTenant();
    expect((await upload(other.projectId, '[]')).statusCode).toBe(404);
    const list = await t.call('GET', '/imports', { token: owner.token, project: t.projectId });
    expect(list.status).toBe(200);
    const notMine = await t.call('GET', '/imports/1', { token: owner.token, project: other.projectId });
    expectError(notMine, 404, 'not_found');
    const done = list.body.items.find((i: { status: string }) => i.status !== 'queued');
    if (done)
      expectError(
        await t.call('POST', `/imports/${done.id}/cancel`, { token: owner.token, project: t.projectId }),
        409,
        'conflict',
      );
    expect(await countRows(t, 'imports')).toBeGreaterThan(0);
  });

  // Two records of Mem0's get_all list: one batch.
  const twoRecords = JSON.stringify([
    { id: 'r1', memory: 'raced one', user_id: 'dana' },
    { id: 'r2', memory: 'raced two', user_id: 'dana' },
  ]);
  /** An import recorded as POST /imports records it, but with no job queued: the test runs its job. */
  const unqueuedImport = async (slug: string, body = twoRecords) => {
    const project = (await createProject(t.database.db, { organizationId: t.organizationId, name: slug, slug })).id;
    const key = `${project}/imports/upload-${slug}`;
    await t.services.blobs.put(
      key,
      (async function* () {
        yield Buffer.from(body);
      })(),
    );
    const now = new Date().toISOString();
    const row = await t.database.db
      .insertInto('imports')
      .values({
        organization_id: t.organizationId,
        project_id: project,
        created_by: null,
        status: 'queued',
        format: 'auto',
        blob_key: key,
        bytes_total: Buffer.byteLength(body),
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { id: row.id, project, key };
  };
  const runJob = (id: number, progress: () => Promise<void> = async () => {}, recordsPerBatch = 1_000) =>
    importJob(
      t.database,
      t.services.blobs,
      recordsPerBatch,
    )({ id: 0, projectId: null, payload: { importId: id }, attempt: 1, finalAttempt: false, progress });
  const cancel = (id: number, project: string) =>
    t.call('POST', `/imports/${id}/cancel`, { token: owner.token, project });
  const stateOf = async (id: number, project: string, key: string) => ({
    import: (await t.call('GET', `/imports/${id}`, { token: owner.token, project })).body,
    blobKey: (
      await t.database.db.selectFrom('imports').select('blob_key').where('id', '=', id).executeTakeFirstOrThrow()
    ).blob_key,
    file: await t.services.blobs.stat(key),
    memories: (await memoriesOf(project)).length,
  });
  const waiting = (n: number, what: string) =>
    until(
      async () => {
        const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%imports%'`.execute(
          t.database.db,
        );
        return rows[0]!.n === n;
      },
      what,
      10_000,
    );

  it('an attempt that finds the file gone (an earlier one read it and stopped before recording its outcome) fails the import, saying so', async () => {
    const { id, project, key } = await unqueuedImport('file-gone');
    // What an attempt interrupted between deleting the file it read and recording its outcome leaves.
    await t.database.db.updateTable('imports').set({ status: 'running' }).where('id', '=', id).execute();
    await t.services.blobs.delete(key);
    expect(await runJob(id)).toEqual({ failed: true });
    const state = await stateOf(id, project, key);
    expect(state).toMatchObject({
      import: { status: 'failed', created: 0 },
      blobKey: null,
      file: undefined,
      memories: 0,
    });
    expect(state.import.error.message).toMatch(/uploaded file is gone/);
  });

  it("a batch of 10,000 records across 40 end users (SQLite takes them in statements of 1,000) lands whole, each end user's memories in file order, with its history; again, all are skipped", async () => {
    const records = Array.from({ length: 10_000 }, (_, n) => ({
      id: `b${n}`,
      memory: `big ${n}`,
      user_id: `user-${n % 40}`,
    }));
    const { id, project, key } = await unqueuedImport('big-batch', JSON.stringify(records));
    expect(await runJob(id, undefined, 10_000)).toMatchObject({ done: 10_000, created: 10_000, skipped: 0 });
    // Each end user's memories in file order (a batch's rows go owner by owner).
    const byUser = (rows: Array<{ end_user_id: string; text: string }>) =>
      rows.map((m) => `${m.end_user_id}:${m.text}`).sort((x, y) => x.localeCompare(y, 'en', { numeric: true }));
    expect(byUser(await memoriesOf(project))).toEqual(
      byUser(records.map((r) => ({ end_user_id: r.user_id, text: r.memory }))),
    );
    const user7 = (await memoriesOf(project)).filter((m) => m.end_user_id === 'user-7').map((m) => m.text);
    expect(user7).toEqual(records.filter((r) => r.user_id === 'user-7').map((r) => r.memory));
    const history = await t.database.db
      .selectFrom('memory_history')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('project_id', '=', project)
      .where('action', '=', 'create')
      .executeTakeFirstOrThrow();
    expect(Number(history.n)).toBe(10_000);
    expect(await stateOf(id, project, key)).toMatchObject({ import: { status: 'completed', created: 10_000 } });

    // The same file again: every record a duplicate of its end user's memory, skipped owner by owner.
    const again = await unqueuedImport('big-batch-again', JSON.stringify(records));
    await t.database.db.updateTable('imports').set({ project_id: project }).where('id', '=', again.id).execute();
    expect(await runJob(again.id, undefined, 10_000)).toMatchObject({ created: 0, skipped: 10_000 });
    expect(await memoriesOf(project)).toHaveLength(10_000);
  });

  it('a cancel while the import records its last batch stands: the job does not finish it over, and deletes the file', async () => {
    const { id, project, key } = await unqueuedImport('cancelled-last-batch');
    let cancelled: unknown;
    await runJob(id, async () => {
      cancelled = await cancel(id, project);
    });
    expect(cancelled).toMatchObject({ status: 200, body: { status: 'cancelled' } });
    expect(await stateOf(id, project, key)).toMatchObject({
      import: { status: 'cancelled', created: 2 },
      blobKey: null,
      file: undefined,
      memories: 2,
    });
  });

  it("a batch's counts are written in its own transaction: when that write fails, the batch does not land", async () => {
    const { id, project, key } = await unqueuedImport('counts-refused');
    // The database refuses any count for this import, as a failure between the batch and its count would.
    const refuse =
      dialect === 'sqlite'
        ? [
            `CREATE TRIGGER refuse_counts BEFORE UPDATE OF rows_done ON imports
             WHEN NEW.id = ${id} AND NEW.rows_done > 0 BEGIN SELECT RAISE(ABORT, 'counts refused'); END`,
          ]
        : [
            `CREATE FUNCTION refuse_counts() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN RAISE EXCEPTION 'counts refused'; END $$`,
            `CREATE TRIGGER refuse_counts BEFORE UPDATE OF rows_done ON imports
             FOR EACH ROW WHEN (NEW.id = ${id} AND NEW.rows_done > 0) EXECUTE FUNCTION refuse_counts()`,
          ];
    for (const statement of refuse) await sql.raw(statement).execute(t.database.db);
    try {
      await expect(runJob(id)).rejects.toThrow(/counts refused/);
    } finally {
      await sql.raw(`DROP TRIGGER refuse_counts${dialect === 'postgres' ? ' ON imports' : ''}`).execute(t.database.db);
      if (dialect === 'postgres') await sql.raw('DROP FUNCTION refuse_counts()').execute(t.database.db);
    }
    expect(await stateOf(id, project, key)).toMatchObject({ import: { status: 'running', created: 0 }, memories: 0 });
  });

  it.runIf(dialect === 'postgres')(
    "a cancel committing as the import's job starts stands: nothing is imported and the file is deleted",
    async () => {
      const { id, project, key } = await unqueuedImport('cancelled-at-start');
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let cancelMade!: () => void;
      const cancelling = new Promise<void>((resolve) => (cancelMade = resolve));
      // Another transaction cancels the import as cancelImport does, and has not committed when the job reads it.
      const holder = t.database.db.transaction().execute(async (trx) => {
        const now = new Date().toISOString();
        await trx
          .updateTable('imports')
          .set({ status: 'cancelled', completed_at: now, updated_at: now })
          .where('id', '=', id)
          .execute();
        cancelMade();
        await released;
      });
      await cancelling;
      const run = runJob(id);
      await waiting(1, "the job's start to wait for the import's row");
      release();
      await holder;
      expect(await run).toEqual({ cancelled: true });
      expect(await stateOf(id, project, key)).toMatchObject({
        import: { status: 'cancelled', created: 0 },
        blobKey: null,
        file: undefined,
        memories: 0,
      });
    },
  );

  it.runIf(dialect === 'postgres')(
    'a cancel meeting the import as it finishes is refused (409); the import stays completed',
    async () => {
      const { id, project, key } = await unqueuedImport('cancelled-at-finish');
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let holder: Promise<void> | undefined;
      // Once the last batch is recorded, another transaction holds the import's row: the job's finish waits for it.
      const run = runJob(id, async () => {
        let locked!: () => void;
        const lockTaken = new Promise<void>((resolve) => (locked = resolve));
        holder = t.database.db.transaction().execute(async (trx) => {
          await sql`SELECT id FROM imports WHERE id = ${id} FOR UPDATE`.execute(trx);
          locked();
          await released;
        });
        await lockTaken;
      });
      await waiting(1, "the job's finish to wait for the import's row");
      const answer = cancel(id, project);
      await waiting(2, 'the cancel to wait behind the finish');
      release();
      await holder;
      expectError(await answer, 409, 'conflict');
      await run;
      expect(await stateOf(id, project, key)).toMatchObject({
        import: { status: 'completed', created: 2 },
        blobKey: null,
        file: undefined,
        memories: 2,
      });
    },
  );

  it('restores the relations an export carries by client_ref, wherever their targets lie in the file, and skips what it cannot link', async () => {
    const ids = new Map((await memoriesOf(source)).map((m) => [m.text, m.id]));
    const id = (n: number) => ids.get(`fact ${n} ünïcode "quoted"`)!;
    const endUser = 'user-0';
    const crm = await t.call('POST', '/memory/add', {
      endUser,
      body: { text: 'account owner is Dana', client_ref: 'crm-9' },
    });
    expect(crm.status, crm.text).toBe(201);
    const summary = await t.call('POST', '/memory/summarize', { endUser, body: { memory_ids: [id(0), id(3)] } });
    expect(summary.status, summary.text).toBe(201);
    for (const body of [
      // Fact 1200 is in the file's second batch of 1,000: the link waits for it.
      { source_id: id(0), target_id: id(1200), type: 'follows' },
      { source_id: id(1200), target_id: id(3), type: 'supports', metadata: { weight: 0.5 } },
      { source_id: id(0), target_id: crm.body.id, type: 'related' },
    ]) {
      const res = await t.call('POST', '/memory/relations', { endUser, body });
      expect(res.status, res.text).toBe(201);
    }
    const links = async (project: string) => {
      const rows = await t.database.db
        .selectFrom('memory_relations')
        .selectAll()
        .where('project_id', '=', project)
        .execute();
      const texts = new Map((await memoriesOf(project)).map((m) => [m.id, m.text]));
      return rows
        .map((r) => ({
          source: texts.get(r.source_id),
          target: texts.get(r.target_id),
          type: r.type,
          end_user: r.end_user_id,
          metadata: typeof r.metadata === 'string' ? JSON.parse(r.metadata) : r.metadata,
          created_at: r.created_at,
        }))
        .sort((a, b) => (`${a.source}${a.target}` < `${b.source}${b.target}` ? -1 : 1));
    };
    const expected = await links(source);
    expect(expected).toHaveLength(5);

    const created = await t.call('POST', '/exports', {
      token: owner.token,
      project: source,
      body: { include: ['relations'] },
    });
    const done = await waitFor(t, owner.token, `/exports/${created.body.id}`, source);
    const file = await t.app.inject({
      method: 'GET',
      url: `/exports/${done.id}/download`,
      headers: { authorization: `Bearer ${owner.token}`, 'x-project-id': source },
    });
    const target = (
      await createProject(t.database.db, { organizationId: t.organizationId, name: 'Linked', slug: 'target-relations' })
    ).id;
    const result = await imported(target, file.rawPayload);
    expect(result).toMatchObject({ status: 'completed', created: 1_504, relations_created: 5, relations_skipped: 0 });
    expect(await links(target)).toEqual(expected);
    const audits = await t.database.db
      .selectFrom('audit_log')
      .select('result')
      .where('action', '=', 'relation.import')
      .where('project_id', '=', target)
      .orderBy('id')
      .execute();
    // The first batch's two links waited (the first transaction restored none of them), the second's three landed, then the two waiting.
    expect(audits.map((a) => a.result)).toEqual(['partial', 'success', 'success']);

    // Again: the links are there already.
    expect(await imported(target, file.rawPayload)).toMatchObject({
      status: 'completed',
      created: 0,
      relations_created: 0,
      relations_skipped: 5,
    });
    expect(await links(target)).toEqual(expected);

    // The summary's links came over: forgetting a source in the new project takes its text out of the summary there.
    const targetIds = new Map((await memoriesOf(target)).map((m) => [m.text, m.id]));
    const forgot = await t.call('DELETE', '/memory/forget', {
      project: target,
      endUser,
      body: { ids: [targetIds.get('fact 0 ünïcode "quoted"')] },
    });
    expect(forgot.status, forgot.text).toBe(200);
    const summaries = (await memoriesOf(target)).filter((m) => m.is_summary);
    expect(summaries.every((m) => !m.text.includes('fact 0 '))).toBe(true);

    // Without include: ["relations"], a summary still carries its own links to its sources, and only those.
    const plain = await t.call('POST', '/exports', { token: owner.token, project: source, body: {} });
    const plainDone = await waitFor(t, owner.token, `/exports/${plain.body.id}`, source);
    const plainFile = await t.app.inject({
      method: 'GET',
      url: `/exports/${plainDone.id}/download`,
      headers: { authorization: `Bearer ${owner.token}`, 'x-project-id': source },
    });
    const records = plainFile.payload
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => JSON.parse(l));
    expect(
      records
        .filter((r) => 'relations' in r)
        .map((r) => [r.is_summary, r.relations.map((l: { type: string }) => l.type)]),
    ).toEqual([[true, ['summarizes', 'summarizes']]]);
    const summariesOnly = (
      await createProject(t.database.db, {
        organizationId: t.organizationId,
        name: 'Summaries',
        slug: 'target-summaries',
      })
    ).id;
    expect(await imported(summariesOnly, plainFile.rawPayload)).toMatchObject({
      status: 'completed',
      created: 1_504,
      relations_created: 2,
      relations_skipped: 0,
    });
    expect((await links(summariesOnly)).map((l) => l.type)).toEqual(['summarizes', 'summarizes']);

    // A link to a memory not in the file is skipped; a malformed one fails the import naming it.
    const header = JSON.stringify({ format: 'engram.export', version: 1, include: ['relations'] });
    const record = (relations: unknown) =>
      JSON.stringify({ id: 1, end_user_id: 'solo', text: 'alone here', relations });
    const lonely = (
      await createProject(t.database.db, { organizationId: t.organizationId, name: 'Lonely', slug: 'target-lonely' })
    ).id;
    // So is a summarizes link whose source is no summary.
    const other = JSON.stringify({ id: 2, end_user_id: 'solo', text: 'not alone' });
    expect(
      await imported(
        lonely,
        `${header}\n${record([
          { type: 'related', target_id: 999_999 },
          { type: 'summarizes', target_id: 2 },
        ])}\n${other}\n`,
      ),
    ).toMatchObject({ status: 'completed', created: 2, relations_created: 0, relations_skipped: 2 });
    const broken = await imported(lonely, `${header}\n${record([{ type: 'befriends', target_id: 2 }])}\n`);
    expect(broken).toMatchObject({
      status: 'failed',
      error: { record: 1, line: 2, message: expect.stringContaining('relations/0/type') },
    });
    expect(
      await t.database.db.selectFrom('memory_relations').select('id').where('project_id', '=', lonely).execute(),
    ).toEqual([]);
  });
});
