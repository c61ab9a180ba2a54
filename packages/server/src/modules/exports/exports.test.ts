import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { beforeAll, expect, it } from 'vitest';
import type { BlobStore } from '../../store/blobs.js';
import { openBlobStore } from '../../store/blobs/open.js';
import { createProject } from '../org/index.js';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { countRows, expectError } from '../../testing/memories.js';
import { sweepExports } from './service.js';
import { blobKey, exportJob } from './export-job.js';
import { waitFor } from '../../testing/jobs.js';
import { until } from '../../testing/until.js';
import { holdOwnerLocks, holdUncommitted, lockWaiterCount, untilLocked } from '../../testing/locks.js';

forEachDialect('exports', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);
  const texts: string[] = [];

  beforeAll(async () => {
    for (const [endUser, n] of [
      ['exp-a', 1_200],
      ['exp-b', 30],
    ] as const) {
      for (let start = 0; start < n; start += 50) {
        const items = Array.from({ length: Math.min(50, n - start) }, (_, i) => ({
          text: `${endUser} says "${start + i}",\nwith a comma`,
          tags: [`t${(start + i) % 3}`],
          metadata: { n: start + i },
          session_id: `s${(start + i) % 2}`,
        }));
        const res = await t.call('POST', '/memory/bulk-add', { body: items, endUser });
        expect(res.status, res.text).toBe(200);
        texts.push(...items.map((i) => i.text));
      }
    }
  }, 120_000);

  const create = (body: unknown, options: { token?: string; project?: string } = {}) =>
    t.call('POST', '/exports', { token: options.token ?? owner.token, project: options.project ?? t.projectId, body });
  const finished = async (id: number) => waitFor(t, owner.token, `/exports/${id}`, t.projectId);
  const download = (id: number, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: 'GET',
      url: `/exports/${id}/download`,
      headers: { authorization: `Bearer ${owner.token}`, 'x-project-id': t.projectId, ...headers },
    });

  it('exports the project as jsonl in the background: progress, size, SHA-256, and a download that matches', async () => {
    const res = await create({});
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({
      status: 'queued',
      format: 'jsonl',
      gzip: false,
      include: [],
      scope: {},
      project_id: t.projectId,
      filename: `engram-export-${res.body.id}.jsonl`,
    });
    const done = await finished(res.body.id);
    expect(done).toMatchObject({
      status: 'completed',
      progress: { rows_done: 1_230, rows_total: 1_230 },
      artifact_deleted_at: null,
      error: null,
    });
    expect(Date.parse(done.expires_at) - Date.parse(done.created_at)).toBe(7 * 86_400_000);
    const file = await download(done.id);
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toBe('application/x-ndjson');
    expect(file.headers['content-disposition']).toBe(`attachment; filename="engram-export-${done.id}.jsonl"`);
    expect(Number(file.headers['content-length'])).toBe(done.size);
    expect(file.rawPayload.length).toBe(done.size);
    const sha = createHash('sha256').update(file.rawPayload).digest('hex');
    expect(sha).toBe(done.sha256);
    expect(file.headers['repr-digest']).toBe(`sha-256=:${Buffer.from(sha, 'hex').toString('base64')}:`);
    const lines = file.payload
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({
      format: 'engram.export',
      version: 1,
      export_id: done.id,
      project_id: t.projectId,
    });
    expect(
      lines
        .slice(1)
        .map((m) => m.text)
        .sort(),
    ).toEqual([...texts].sort());
    expect(lines[1]).toMatchObject({
      end_user_id: 'exp-a',
      tenant_id: '',
      tags: ['t0'],
      metadata: { n: 0 },
      session_id: 's0',
      speaker: null,
    });
  });

  it('resumes a broken download with Range (206) and refuses a range past the end (416)', async () => {
    const done = await finished((await create({ scope: { end_user_id: 'exp-b' } })).body.id);
    const whole = (await download(done.id)).rawPayload;
    const part = await download(done.id, { range: 'bytes=100-' });
    expect(part.statusCode).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 100-${done.size - 1}/${done.size}`);
    expect(Number(part.headers['content-length'])).toBe(done.size - 100);
    expect(Buffer.concat([whole.subarray(0, 100), part.rawPayload]).equals(whole)).toBe(true);
    expect((await download(done.id, { range: 'bytes=-10' })).rawPayload.equals(whole.subarray(-10))).toBe(true);
    const outside = await download(done.id, { range: `bytes=${done.size}-` });
    expect(outside.statusCode).toBe(416);
    expect(outside.headers['content-range']).toBe(`bytes */${done.size}`);
  });

  it('narrows by scope, writes json and csv, gzips, and includes history on request', async () => {
    const json = await finished(
      (
        await create({
          format: 'json',
          scope: { end_user_id: 'exp-a', session_id: 's1', tags_any: ['t1', 't2'] },
          include: ['history', 'feedback'],
        })
      ).body.id,
    );
    const doc = JSON.parse((await download(json.id)).payload);
    const expected = texts.filter((_, i) => i < 1_200 && i % 2 === 1 && i % 3 !== 0);
    expect(doc.memories.map((m: { text: string }) => m.text)).toEqual(expected);
    expect(json.progress).toEqual({ rows_done: expected.length, rows_total: expected.length });
    expect(doc.memories[0].history).toEqual([expect.objectContaining({ action: 'create' })]);
    expect(doc.memories[0].feedback).toEqual([]);

    const csv = await finished((await create({ format: 'csv', gzip: true, scope: { end_user_id: 'exp-b' } })).body.id);
    const file = await download(csv.id);
    expect(file.headers['content-type']).toBe('application/gzip');
    expect(file.headers['content-disposition']).toContain(`engram-export-${csv.id}.csv.gz`);
    const rows = gunzipSync(file.rawPayload).toString('utf8').split('\r\n');
    expect(rows[0]).toBe(
      'id,tenant_id,end_user_id,text,tags,is_summary,source,importance,metadata,client_ref,session_id,speaker,created_at,updated_at',
    );
    expect(rows[1]).toContain(',exp-b,"exp-b says ""0"",\nwith a comma","[""t0""]",false,,0.5,"{""n"":0}",,s0,,');
    expect(rows.filter((r) => r !== '')).toHaveLength(31);
  });

  it('lists newest first; refuses cancelling a finished export (409); delete removes record and artifact', async () => {
    const list = await t.call('GET', '/exports?limit=2', { token: owner.token, project: t.projectId });
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(2);
    expect(list.body.items[0].id).toBeGreaterThan(list.body.items[1].id);
    expect(list.body.has_next).toBe(true);
    const id = list.body.items[0].id;
    expectError(
      await t.call('POST', `/exports/${id}/cancel`, { token: owner.token, project: t.projectId }),
      409,
      'conflict',
    );
    const blobsBefore = await countRows(t, 'blobs');
    const deleted = await t.call('DELETE', `/exports/${id}`, { token: owner.token, project: t.projectId });
    expect(deleted.status).toBe(200);
    expect(deleted.body.artifact_deleted_reason).toBe('deleted');
    expectError(await t.call('GET', `/exports/${id}`, { token: owner.token, project: t.projectId }), 404, 'not_found');
    expect(await countRows(t, 'blobs')).toBe(blobsBefore - 1);
  });

  it('bad input is a 400 naming the field; other projects are 404; credentials and roles are checked', async () => {
    expectError(await create({ scope: { user: 'x' } }), 400, 'validation_error', 'scope/user');
    expectError(await create({ format: 'xml' }), 400, 'validation_error', 'format');
    expectError(await create({ include: ['links'] }), 400, 'validation_error', 'include/0');
    expectError(await create({ include: ['history', 'history'] }), 400, 'validation_error', 'include');
    expectError(
      await create({ scope: { created_after: '2026-01-02T00:00:00Z', created_before: '2026-01-01T00:00:00Z' } }),
      400,
      'validation_error',
      'scope/created_after',
    );
    expectError(
      await t.call('POST', '/exports', { token: owner.token, body: {} }),
      400,
      'validation_error',
      'X-Project-ID',
    );
    const other = await t.otherTenant();
    expectError(await create({}, { project: other.projectId }), 404, 'not_found');
    const sibling = await createProject(t.database.db, {
      organizationId: t.organizationId,
      name: 'Sibling',
      slug: 'sibling-exports',
    });
    const mine = (await create({})).body.id;
    expectError(await t.call('GET', `/exports/${mine}`, { token: owner.token, project: sibling.id }), 404, 'not_found');
    expectError(
      await t.call('GET', `/exports/${mine}/download`, { token: owner.token, project: sibling.id }),
      404,
      'not_found',
    );
    // The test's data-plane key reaches the route (keys may carry exports scopes) but not this scope.
    expectError(await t.call('POST', '/exports', { body: {} }), 403, 'forbidden');
    const viewer = await t.member('viewer');
    expectError(await create({}, { token: viewer.token }), 403, 'forbidden');
    const readOnly = await t.member('member', { scopes: ['exports:read'] });
    expectError(await create({}, { token: readOnly.token }), 403, 'forbidden');
    expect((await t.call('GET', '/exports', { token: readOnly.token, project: t.projectId })).status).toBe(200);
    await finished(mine);
  });

  it('downloading an unfinished export is 409; an expired one is 410 after the sweep removed its bytes', async () => {
    const res = await create({ scope: { end_user_id: 'exp-b' } });
    // Cancelled before it could run or while running: either way it is not downloadable.
    const cancelled = await t.call('POST', `/exports/${res.body.id}/cancel`, {
      token: owner.token,
      project: t.projectId,
    });
    if (cancelled.status === 200) {
      expect(cancelled.body.status).toBe('cancelled');
      expectError(
        await t.call('GET', `/exports/${res.body.id}/download`, { token: owner.token, project: t.projectId }),
        409,
        'conflict',
      );
    }
    const done = await finished((await create({ scope: { end_user_id: 'exp-b' } })).body.id);
    const swept = await sweepExports(
      t.database,
      openBlobStore({ kind: 'database' }, t.database),
      new Date(Date.parse(done.expires_at) + 1).toISOString(),
    );
    expect(swept.expired).toBeGreaterThanOrEqual(1);
    const after = await t.call('GET', `/exports/${done.id}`, { token: owner.token, project: t.projectId });
    expect(after.body).toMatchObject({ status: 'expired', artifact_deleted_reason: 'expired' });
    expectError(
      await t.call('GET', `/exports/${done.id}/download`, { token: owner.token, project: t.projectId }),
      410,
      'gone',
    );
    const row = await t.database.db
      .selectFrom('exports')
      .select('blob_key')
      .where('id', '=', done.id)
      .executeTakeFirstOrThrow();
    expect(row.blob_key).toBeNull();
  });

  it('forgetting a memory withdraws every artifact holding it (the record says why); others stay', async () => {
    const a = await finished((await create({ scope: { end_user_id: 'exp-a' } })).body.id);
    const b = await finished((await create({ scope: { end_user_id: 'exp-b' } })).body.id);
    const key = (
      await t.database.db.selectFrom('exports').select('blob_key').where('id', '=', a.id).executeTakeFirstOrThrow()
    ).blob_key!;
    const first = JSON.parse((await download(a.id)).payload.split('\n')[1]!);
    const forgot = await t.call('DELETE', '/memory/forget', { body: { ids: [first.id] }, endUser: 'exp-a' });
    expect(forgot.body).toEqual([first.id]);
    const after = await t.call('GET', `/exports/${a.id}`, { token: owner.token, project: t.projectId });
    expect(after.body).toMatchObject({
      status: 'completed',
      artifact_deleted_reason: 'memories_erased',
      artifact_deleted_at: expect.any(String),
    });
    expectError(
      await t.call('GET', `/exports/${a.id}/download`, { token: owner.token, project: t.projectId }),
      410,
      'gone',
    );
    // The bytes go right after the forget commits.
    await until(
      async () =>
        !(await t.database.db.selectFrom('blob_chunks').select('n').where('key', '=', key).executeTakeFirst()),
      "the artifact's bytes deleted",
      4_000,
    );
    expect((await download(b.id)).statusCode).toBe(200);
    // Purging the end user withdraws b.
    expect((await t.call('DELETE', '/memory/user/exp-b', { endUser: null })).status).toBe(200);
    expect(
      (await t.call('GET', `/exports/${b.id}`, { token: owner.token, project: t.projectId })).body
        .artifact_deleted_reason,
    ).toBe('memories_erased');
  });

  it('includes relations with their source memory; forgetting a linked memory outside the scope withdraws that export only', async () => {
    const endUser = 'exp-rel';
    const add = async (body: Record<string, unknown>) => {
      const res = await t.call('POST', '/memory/add', { endUser, body });
      expect(res.status, res.text).toBe(201);
      return res.body as { id: number; created_at: string };
    };
    const first = await add({ text: 'rel first', client_ref: 'crm-1' });
    const second = await add({ text: 'rel second' });
    await until(async () => new Date().toISOString() > second.created_at, 'the clock to move on', 1_000);
    const later = await add({ text: 'rel later' });
    const relate = async (body: Record<string, unknown>) => {
      const res = await t.call('POST', '/memory/relations', { endUser, body });
      expect(res.status, res.text).toBe(201);
      return res.body as { id: number; created_at: string };
    };
    const follows = await relate({
      source_id: second.id,
      target_id: first.id,
      type: 'follows',
      metadata: { why: 'order' },
    });
    const related = await relate({ source_id: first.id, target_id: later.id, type: 'related' });
    const scope = { end_user_id: endUser, created_before: later.created_at };

    const linked = await finished((await create({ scope, include: ['relations'] })).body.id);
    const plain = await finished((await create({ scope })).body.id);
    const records = (await download(linked.id)).payload
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => JSON.parse(l));
    expect(records.map((r) => [r.text, r.relations])).toEqual([
      [
        'rel first',
        [
          {
            id: related.id,
            type: 'related',
            target_id: later.id,
            target_client_ref: null,
            metadata: {},
            created_at: related.created_at,
          },
        ],
      ],
      [
        'rel second',
        [
          {
            id: follows.id,
            type: 'follows',
            target_id: first.id,
            target_client_ref: 'crm-1',
            metadata: { why: 'order' },
            created_at: follows.created_at,
          },
        ],
      ],
    ]);
    expect((await download(plain.id)).payload).not.toContain('"relations"');
    const csv = await finished((await create({ scope, format: 'csv', include: ['relations'] })).body.id);
    expect((await download(csv.id)).payload.split('\r\n')[0]).toMatch(/,updated_at,relations$/);

    // The later memory is outside both exports' time range, but the relations export names it and its link.
    expect((await t.call('DELETE', '/memory/forget', { body: { ids: [later.id] }, endUser })).body).toEqual([later.id]);
    expect(
      (await t.call('GET', `/exports/${linked.id}`, { token: owner.token, project: t.projectId })).body
        .artifact_deleted_reason,
    ).toBe('memories_erased');
    expectError(
      await t.call('GET', `/exports/${linked.id}/download`, { token: owner.token, project: t.projectId }),
      410,
      'gone',
    );
    expect(
      (await t.call('GET', `/exports/${plain.id}`, { token: owner.token, project: t.projectId })).body
        .artifact_deleted_reason,
    ).toBeNull();
    expect((await download(plain.id)).statusCode).toBe(200);
  });

  it("forgetting a summary's source withdraws an export that holds the summary but not the source", async () => {
    const endUser = 'exp-summary';
    const add = async (text: string) => {
      const res = await t.call('POST', '/memory/add', { endUser, body: { text } });
      expect(res.status, res.text).toBe(201);
      return res.body as { id: number; created_at: string };
    };
    const secret = await add('The lab found anemia.');
    const kept = await add('Iron supplements daily.');
    await until(async () => new Date().toISOString() > kept.created_at, 'the clock to move on', 1_000);
    const made = await t.call('POST', '/memory/summarize', { endUser, body: { memory_ids: [secret.id, kept.id] } });
    expect(made.status, made.text).toBe(201);
    // Only what came after the sources: the summary, whose text quotes them.
    const done = await finished(
      (await create({ scope: { end_user_id: endUser, created_after: kept.created_at } })).body.id,
    );
    const file = (await download(done.id)).payload;
    expect(file).toContain('anemia');
    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [secret.id] } })).body).toEqual([
      secret.id,
    ]);
    expect(
      (await t.call('GET', `/exports/${done.id}`, { token: owner.token, project: t.projectId })).body
        .artifact_deleted_reason,
    ).toBe('memories_erased');
    expectError(
      await t.call('GET', `/exports/${done.id}/download`, { token: owner.token, project: t.projectId }),
      410,
      'gone',
    );
  });

  it('a run after a crash (the next attempt) discards the partial artifact and writes a complete one matching its SHA-256', async () => {
    const done = await finished((await create({ scope: { end_user_id: 'exp-a' } })).body.id);
    const whole = (await download(done.id)).rawPayload;
    // As a worker killed mid-export leaves it: running, a partial artifact under attempt 1's key.
    const store = openBlobStore({ kind: 'database' }, t.database);
    const partialKey = blobKey(t.projectId, done.id, 1);
    await store.put(
      partialKey,
      (async function* () {
        yield whole.subarray(0, 1000);
      })(),
    );
    await t.database.db
      .updateTable('exports')
      .set({ status: 'running', rows_done: 17, blob_key: null, size: null, sha256: null })
      .where('id', '=', done.id)
      .execute();
    const result = await exportJob(
      t.database,
      store,
    )({
      id: 0,
      projectId: t.projectId,
      payload: { exportId: done.id },
      attempt: 2,
      finalAttempt: false,
      progress: async () => {},
    });
    expect(result).toMatchObject({ rows: done.progress.rows_done });
    expect(await store.stat(partialKey)).toBeUndefined();
    const again = await t.call('GET', `/exports/${done.id}`, { token: owner.token, project: t.projectId });
    expect(again.body).toMatchObject({ status: 'completed', progress: done.progress });
    const file = (await download(done.id)).rawPayload;
    expect(createHash('sha256').update(file).digest('hex')).toBe(again.body.sha256);
    // Same memories; only generated_at in the header differs.
    expect(file.toString().split('\n').slice(1)).toEqual(whole.toString().split('\n').slice(1));
  });

  it('emits export.completed through the outbox and audits creation', async () => {
    const done = await finished((await create({ scope: { end_user_id: 'nobody' } })).body.id);
    expect(done.progress).toEqual({ rows_done: 0, rows_total: 0 });
    const events = await t.database.db
      .selectFrom('outbox_events')
      .select(['type', 'payload'])
      .where('type', '=', 'export.completed')
      .execute();
    expect(events.map((e) => (typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload).export_id)).toContain(
      done.id,
    );
    const audit = await t.database.db
      .selectFrom('audit_log')
      .select('action')
      .where('target_id', '=', String(done.id))
      .where('target_type', '=', 'export')
      .execute();
    expect(audit.map((a) => a.action)).toContain('export.create');
  });

  /**
   * Re-runs the finished export `id`'s job and has its completion meet `operation`: the job's
   * completing UPDATE waits for the export's row (held by another transaction), then the
   * operation's statement waits behind it; released, the job's completion commits first, as when
   * an export completes between the operation's start and its write.
   */
  async function completingDuring<T>(id: number, operation: () => Promise<T>) {
    const store = openBlobStore({ kind: 'database' }, t.database);
    let written!: () => void;
    const artifactWritten = new Promise<void>((resolve) => (written = resolve));
    let complete!: () => void;
    const completing = new Promise<void>((resolve) => (complete = resolve));
    const paused: BlobStore = {
      put: async (key, body) => {
        const info = await store.put(key, body);
        written();
        await completing;
        return info;
      },
      get: (key, range) => store.get(key, range),
      stat: (key) => store.stat(key),
      delete: (key) => store.delete(key),
    };
    await t.database.db
      .updateTable('exports')
      .set({ status: 'running', blob_key: null, size: null, sha256: null, completed_at: null })
      .where('id', '=', id)
      .execute();
    const run = exportJob(
      t.database,
      paused,
    )({
      id: 0,
      projectId: t.projectId,
      payload: { exportId: id },
      attempt: 2,
      finalAttempt: false,
      progress: async () => {},
    });
    await artifactWritten;
    const exportLock = await holdUncommitted(t, (trx) =>
      sql`SELECT id FROM exports WHERE id = ${id} FOR UPDATE`.execute(trx),
    );
    const waiting = (n: number, what: string) =>
      until(
        async () => {
          const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%exports%'`.execute(
            t.database.db,
          );
          return rows[0]!.n === n;
        },
        what,
        10_000,
      );
    complete();
    await waiting(1, "the job's completion to wait for the export's row");
    const answer = operation();
    await waiting(2, "the operation to wait behind the job's completion");
    await exportLock.release();
    return { answer: await answer, result: await run, key: blobKey(t.projectId, id, 2) };
  }

  it.runIf(dialect === 'postgres')(
    'a cancel meeting the job as it completes is refused (409); the artifact stays downloadable',
    async () => {
      const done = await finished((await create({ scope: { end_user_id: 'nobody' } })).body.id);
      const { answer, result, key } = await completingDuring(done.id, () =>
        t.call('POST', `/exports/${done.id}/cancel`, { token: owner.token, project: t.projectId }),
      );
      expectError(answer, 409, 'conflict');
      expect(result).toMatchObject({ rows: 0 });
      const row = await t.database.db
        .selectFrom('exports')
        .select(['status', 'blob_key', 'sha256'])
        .where('id', '=', done.id)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'completed', blob_key: key });
      const file = await download(done.id);
      expect(file.statusCode).toBe(200);
      expect(createHash('sha256').update(file.rawPayload).digest('hex')).toBe(row.sha256);
    },
  );

  it.runIf(dialect === 'postgres')(
    'deleting an export as its job completes records it completed (not cancelled) and removes the artifact',
    async () => {
      const done = await finished((await create({ scope: { end_user_id: 'nobody' } })).body.id);
      const { answer, result, key } = await completingDuring(done.id, () =>
        t.call('DELETE', `/exports/${done.id}`, { token: owner.token, project: t.projectId }),
      );
      expect(answer.status, answer.text).toBe(200);
      expect(result).toMatchObject({ rows: 0 });
      const row = await t.database.db
        .selectFrom('exports')
        .select(['status', 'deleted_at', 'artifact_deleted_reason'])
        .where('id', '=', done.id)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({
        status: 'completed',
        deleted_at: expect.any(String),
        artifact_deleted_reason: 'deleted',
      });
      expectError(
        await t.call('GET', `/exports/${done.id}`, { token: owner.token, project: t.projectId }),
        404,
        'not_found',
      );
      await until(
        async () => (await openBlobStore({ kind: 'database' }, t.database).stat(key)) === undefined,
        "the artifact's bytes deleted",
        4_000,
      );
    },
  );

  it.runIf(dialect === 'postgres')(
    'forgetting a memory as an export holding it completes withdraws the artifact',
    async () => {
      const added = await t.call('POST', '/memory/bulk-add', {
        endUser: 'exp-race',
        body: [{ text: 'raced one' }, { text: 'raced two' }],
      });
      expect(added.status, added.text).toBe(200);
      const done = await finished((await create({ scope: { end_user_id: 'exp-race' } })).body.id);
      const first = JSON.parse((await download(done.id)).payload.split('\n')[1]!);
      const { answer, result, key } = await completingDuring(done.id, () =>
        t.call('DELETE', '/memory/forget', { body: { ids: [first.id] }, endUser: 'exp-race' }),
      );
      expect(answer.body).toEqual([first.id]);
      expect(result).toMatchObject({ rows: 2 });
      const after = await t.call('GET', `/exports/${done.id}`, { token: owner.token, project: t.projectId });
      expect(after.body).toMatchObject({ status: 'completed', artifact_deleted_reason: 'memories_erased' });
      expectError(
        await t.call('GET', `/exports/${done.id}/download`, { token: owner.token, project: t.projectId }),
        410,
        'gone',
      );
      await until(
        async () => (await openBlobStore({ kind: 'database' }, t.database).stat(key)) === undefined,
        "the artifact's bytes deleted",
        4_000,
      );
    },
  );

  it.runIf(dialect === 'postgres')(
    'an export created while a forget that has already checked the exports is still under way does not hold the forgotten memory',
    async () => {
      const added = await t.call('POST', '/memory/bulk-add', {
        endUser: 'exp-late',
        body: [{ text: 'forgotten while exported' }, { text: 'kept while exported' }],
      });
      expect(added.status, added.text).toBe(200);
      const forgottenId = added.body.results[0].memory.id as number;
      // The forget is stopped after its erase hooks and before it commits: it waits for the owner lock a transaction of
      // the test holds, then for its Idempotency-Key's row (its journal record, sent with its last statement), which
      // another one holds once the forget has the owner lock.
      const ownerLock = await holdOwnerLocks(t, ['exp-late']);
      let claimLock: { release: () => Promise<void> } | undefined;
      let exporting: Promise<{ status: number; body: { id: number } }> | undefined;
      try {
        const forget = t.call('DELETE', '/memory/forget', {
          body: { ids: [forgottenId] },
          endUser: 'exp-late',
          headers: { 'idempotency-key': 'late-export-forget' },
        });
        await untilLocked(t, async () => (await lockWaiterCount(t)) === 1, 'the forget to wait for the owner lock');
        claimLock = await holdUncommitted(t, (trx) =>
          trx.selectFrom('idempotency_keys').select('key_hash').forUpdate().execute(),
        );
        await ownerLock.release();
        await untilLocked(
          t,
          async () =>
            (
              await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%update "idempotency_keys"%'`.execute(
                t.database.db,
              )
            ).rows[0]!.n === 1,
          'the forget, past its erase hooks, to wait before committing',
        );
        let createdMeanwhile = false;
        exporting = create({ scope: { end_user_id: 'exp-late' } }).then((res) => {
          createdMeanwhile = true;
          return res;
        });
        // The export's creation waits for the forget to commit (or, were it not to, the export completes meanwhile).
        await untilLocked(
          t,
          async () =>
            (
              await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event = 'advisory'`.execute(t.database.db)
            ).rows[0]!.n === 1 || createdMeanwhile,
          "the export's creation to wait for the forget",
        );
        // Were it created meanwhile, its job would run now, reading what the forget has not committed yet.
        if (createdMeanwhile) await finished((await exporting).body.id);
        await claimLock.release();
        expect((await forget).body).toEqual([forgottenId]);
        const created = await exporting;
        expect(created.status).toBe(202);
        const done = await finished(created.body.id);
        expect(done.status).toBe('completed');
        const file = await download(done.id);
        expect(file.statusCode).toBe(200);
        expect(file.payload).not.toContain('forgotten while exported');
        expect(file.payload).toContain('kept while exported');
      } finally {
        await ownerLock.release();
        await claimLock?.release();
        await exporting;
      }
    },
  );
});
