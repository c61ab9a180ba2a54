import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueJob } from '../src/jobs/runner.js';
import { forEachDialect, startTestApp, type TestApp } from '../src/testing/harness.js';
import { startWorkerProcess, type BackgroundProcess } from '../src/testing/process.js';
import { startFakeEmbedder, type FakeEmbedder } from '../src/testing/retrieval.js';

/** `engram worker`: background jobs in a process of their own, with no HTTP server. */

const POLL_MS = 50;
const DEADLINE_MS = 50_000;

async function until<T>(read: () => Promise<T | undefined>, what: string): Promise<T> {
  for (
    const started = Date.now();
    Date.now() - started < DEADLINE_MS;
    await new Promise((r) => setTimeout(r, POLL_MS))
  ) {
    const value = await read();
    if (value !== undefined) return value;
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** Whether anything accepts TCP connections on this port of the loopback interface. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

forEachDialect('engram worker', (dialect) => {
  let t: TestApp;
  let fake: FakeEmbedder;
  let worker: BackgroundProcess | undefined;
  beforeAll(async () => {
    fake = await startFakeEmbedder();
    // This app only serves HTTP: the refresh it queues must be run by the worker process.
    t = await startTestApp(dialect, { runJobs: false });
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.close();
    await fake?.close();
  });

  it('runs a queued embeddings refresh to completion, serving no HTTP', async () => {
    for (const text of ['Likes green tea', 'Lives in Lisbon', 'Plays the cello']) {
      expect((await t.call('POST', '/memory/add', { body: { text } })).status).toBe(201);
    }
    const queued = await t.call('POST', '/memory/refresh');
    expect(queued.status, queued.text).toBe(202);

    // The port a server would take if this process served HTTP: below the range the OS picks from
    // for port 0 (Linux 32768-60999, macOS 49152-65535), where every other server of the suite
    // listens, so that none can be found there by chance.
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    worker = startWorkerProcess({
      ENGRAM_DATABASE_URL: t.databaseUrl,
      ENGRAM_PORT: String(port),
      ENGRAM_LOG_LEVEL: 'warn',
      ENGRAM_EMBEDDER: 'openai',
      ENGRAM_EMBEDDER_BASE_URL: fake.baseUrl,
      ENGRAM_EMBEDDER_MODEL: 'fake-embed',
    });
    const job = await until(async () => {
      const res = await t.call('GET', `/memory/refresh/${queued.body.id}`);
      return ['succeeded', 'failed'].includes(res.body.status) ? res.body : undefined;
    }, `job ${queued.body.id}; worker stderr: ${worker.stderr()}`);
    expect(job).toMatchObject({
      status: 'succeeded',
      progress: 1,
      error: null,
      result: { memories: 3, embedder: expect.stringContaining('fake-embed') },
    });
    const vectors = await t.database.db.selectFrom('memory_embeddings').select('memory_id').execute();
    expect(vectors).toHaveLength(3);
    expect(worker.child.exitCode).toBeNull();
    expect(await listening(port)).toBe(false);
  });

  it('stops cleanly on SIGTERM', async () => {
    expect(await worker!.stop('SIGTERM')).toBe(0);
  });
});

describe.runIf(process.env.ENGRAM_TEST_DATABASE_URL)('two engram workers on one PostgreSQL database', () => {
  let t: TestApp;
  let workers: BackgroundProcess[] = [];
  beforeAll(async () => {
    t = await startTestApp('postgres', { runJobs: false });
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await t?.close();
  });

  it('never run one job twice', async () => {
    for (let i = 0; i < 10; i++)
      expect((await t.call('POST', '/memory/add', { body: { text: `Fact number ${i}` } })).status).toBe(201);
    const ids: number[] = [];
    for (let i = 0; i < 60; i++) {
      ids.push(
        await enqueueJob(t.database.db, {
          kind: 'embeddings.refresh',
          projectId: t.projectId,
          payload: { tenantId: '', endUserId: 'user-1' },
        }),
      );
    }
    const env = { ENGRAM_DATABASE_URL: t.databaseUrl, ENGRAM_LOG_LEVEL: 'warn' };
    workers = [startWorkerProcess(env), startWorkerProcess(env)];
    const rows = await until(
      async () => {
        const jobs = await t.database.db
          .selectFrom('jobs')
          .select(['id', 'status', 'attempts'])
          .where('id', 'in', ids)
          .execute();
        return jobs.every((j) => j.status === 'succeeded') ? jobs : undefined;
      },
      `60 jobs; worker stderr: ${workers.map((w) => w.stderr()).join('\n')}`,
    );
    expect(rows).toHaveLength(60);
    // Each job was leased exactly once: a second run would have counted a second attempt.
    expect(rows.filter((j) => j.attempts !== 1)).toEqual([]);
  });
});
