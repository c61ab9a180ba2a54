import type { FastifyInstance } from 'fastify';
import type { Worker } from 'node:worker_threads';
import { afterAll, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { loadConfig } from '../../config.js';
import { buildServices } from '../../services.js';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { freshUser, retrievalConfig } from '../../testing/retrieval.js';
import { createInProcessRetrieval } from './engine.js';
import { RetrievalThread } from './thread.js';

const TOPICS = [
  'pottery class',
  'adoption agency',
  'guitar lessons',
  'marathon training',
  'trip to Tokyo',
  'sourdough baking',
];

/** Every retrieval route, with filters, sessions, explanations and routing, as a caller sends them. */
const CALLS: Array<[url: string, body: Record<string, unknown>]> = [
  ['/memory/query', { query: 'When is the pottery class?', k: 5, explain: true }],
  ['/memory/query', { query: 'pottery class', filters: { tags_any: ['hobby'] } }],
  ['/memory/query', { query: 'agency', session_id: 's1' }],
  [
    '/memory/query',
    { query: 'talked about the guitar lessons', filters: { metadata: { mood: 'excited' } }, min_score: 0.05 },
  ],
  ['/memory/retrieve', { prompt: 'What did the adoption agency say? And how is the marathon training going?', k: 8 }],
  ['/memory/search', { query: 'what happened on day 3 with the sourdough baking and the Tokyo trip' }],
  ['/memory/search', { query: 'recent notes' }],
  ['/memory/compose', { task: 'Plan the trip to Tokyo around the guitar lessons', token_budget: 300 }],
];

forEachDialect('retrieval on a thread of its own', (dialect) => {
  const t = useTestApp(dialect, retrievalConfig({ searchThread: true }));
  const apps: FastifyInstance[] = [];
  afterAll(async () => {
    for (const app of apps) await app.close();
  });

  const fill = async (endUser: string, count: number, from = 0) => {
    const items = Array.from({ length: count }, (_, j) => from + j).map((i) => ({
      text: `Note ${i}: talked about the ${TOPICS[i % TOPICS.length]} on day ${i}`,
      session_id: `s${Math.floor(i / 8)}`,
      ...(i % 3 === 0 ? { tags: ['hobby'] } : {}),
      ...(i % 4 === 0 ? { metadata: { mood: i % 8 === 0 ? 'excited' : 'calm' } } : {}),
    }));
    const res = await t.call('POST', '/memory/bulk-add', { endUser, body: items });
    expect(res.status, res.text).toBe(200);
  };

  it('answers every retrieval route exactly as the engine in process does', async () => {
    expect(t.services.retrieval.retrieval.constructor.name, 'this app searches on its thread').not.toBe('Retrieval');
    // Another server on the same database, its engine in process.
    const inProcess = await buildApp({
      services: buildServices({
        config: { ...loadConfig({}), ...retrievalConfig({ searchThread: false }), logLevel: 'silent' },
        database: t.database,
      }),
    });
    apps.push(inProcess);
    expect(inProcess.hasRoute({ method: 'POST', url: '/memory/query' })).toBe(true);
    const endUser = freshUser();
    await fill(endUser, 50);
    const headers = { 'x-api-key': t.key, 'x-project-id': t.projectId, 'x-end-user-id': endUser };
    for (const [url, body] of CALLS) {
      const threaded = await t.call('POST', url, { endUser, body });
      const local = await inProcess.inject({ method: 'POST', url, headers, payload: body });
      expect(threaded.status, threaded.text).toBe(200);
      expect(local.statusCode, local.body).toBe(200);
      const [a, b] = [
        threaded.body as { memories: Array<{ id: number; score: number }> },
        local.json() as { memories: Array<{ id: number; score: number }> },
      ];
      expect(a.memories.length, url).toBeGreaterThan(0);
      // The same answer; scores alike but for recency, which moves with the clock between the two calls.
      const withoutScores = (x: typeof a) => ({
        ...x,
        memories: x.memories.map(({ score: _, explanation: __, ...m }: Record<string, unknown>) => m),
      });
      expect(withoutScores(a), url).toEqual(withoutScores(b));
      a.memories.forEach((m, i) => expect(m.score, url).toBeCloseTo(b.memories[i]!.score, 6));
    }
  });

  it('gives a caller the error the engine raised, naming the field', async () => {
    const endUser = freshUser();
    await fill(endUser, 3);
    const blank = await t.call('POST', '/memory/query', { endUser, body: { query: '   ' } });
    expect(blank.status, blank.text).toBe(400);
    expect(blank.body.error).toMatchObject({ code: 'validation_error', field: 'query' });
    const template = await t.call('POST', '/memory/compose', {
      endUser,
      body: { task: 'plan', template: 'no placeholder here' },
    });
    expect(template.status, template.text).toBe(400);
    expect(template.body.error).toMatchObject({ code: 'validation_error', field: 'template' });
    // And the thread goes on serving.
    expect((await t.call('POST', '/memory/query', { endUser, body: { query: 'pottery class' } })).status).toBe(200);
  });

  it('fails the calls of a thread that died and serves the next on a new one', async () => {
    const endUser = freshUser();
    await fill(endUser, 20);
    const thread = new RetrievalThread(
      { database: t.database.config, retrieval: loadConfig({}).retrieval },
      t.database,
    );
    try {
      const owner = { projectId: t.projectId, tenantId: '', endUserId: endUser };
      const before = await thread.retrieval.query(owner, { query: 'guitar lessons', k: 3 });
      expect(before).toHaveLength(3);
      // A thread that ends under a call (as an out-of-memory end would): the call builds the index
      // of an end user the thread has not indexed yet (several statements and a build), which
      // cannot be answered before the end it is sent just ahead of.
      const other = freshUser();
      for (let i = 0; i < 4; i++) await fill(other, 50, i * 50);
      const worker = (thread as unknown as { worker: Worker }).worker;
      const underWay = thread.retrieval.matching({ ...owner, endUserId: other }, {});
      await worker.terminate();
      await expect(underWay).rejects.toThrow(/search thread exited/);
      const after = await thread.retrieval.query(owner, { query: 'guitar lessons', k: 3 });
      expect(after.map((m) => m.id)).toEqual(before.map((m) => m.id));
      expect((thread as unknown as { worker: Worker }).worker).not.toBe(worker);
    } finally {
      await thread.close();
    }
    await expect(
      thread.retrieval.query({ projectId: t.projectId, tenantId: '', endUserId: endUser }, { query: 'x' }),
    ).rejects.toThrow(/closed/);
  });

  it('answers the calls it takes while it waits awake for them, and closes from there', async () => {
    const endUser = freshUser();
    await fill(endUser, 40);
    const owner = { projectId: t.projectId, tenantId: '', endUserId: endUser };
    const retrieval = loadConfig({}).retrieval;
    // A spin so long that, from the third call of a sequence on, each call arrives while the thread polls for it.
    const thread = new RetrievalThread(
      { database: t.database.config, retrieval: { ...retrieval, searchThreadSpinMicros: 100_000 } },
      t.database,
    );
    const local = createInProcessRetrieval(t.database, retrieval).retrieval;
    const ids = (memories: Array<{ id: number }>) => memories.map((m) => m.id);
    try {
      const questions = [...TOPICS, ...TOPICS].map((topic, i) => ({
        query: `how did the ${topic} go on day ${i}`,
        k: 4,
      }));
      for (const input of questions)
        expect(ids(await thread.retrieval.query(owner, input)), input.query).toEqual(
          ids(await local.query(owner, input)),
        );
      // Several under way at once, then errors, each taken while the thread waits awake.
      const together = await Promise.all(questions.map((input) => thread.retrieval.query(owner, input)));
      for (const [i, input] of questions.entries())
        expect(ids(together[i]!), input.query).toEqual(ids(await local.query(owner, input)));
      const scope = { kind: 'owner' as const, owner };
      await expect(thread.retrieval.compose(scope, { task: 'plan', template: 'no placeholder' })).rejects.toMatchObject(
        { code: 'validation_error', field: 'template' },
      );
      await expect(thread.retrieval.retrieve(scope, { prompt: ' ' })).rejects.toMatchObject({
        code: 'validation_error',
        field: 'prompt',
      });
      expect(await thread.retrieval.matching(owner, { session_id: 's1' })).toHaveLength(8);
    } finally {
      const worker = (thread as unknown as { worker: Worker }).worker;
      const exitCode = new Promise((resolve) => worker.once('exit', resolve));
      await thread.close();
      // It ended by itself (code 0) once its close was answered, not by being terminated (code 1).
      expect(await exitCode).toBe(0);
    }
  });

  it('runs its own timers and I/O however close the calls come', async () => {
    const endUser = freshUser();
    await fill(endUser, 40);
    const owner = { projectId: t.projectId, tenantId: '', endUserId: endUser };
    // Every call of the loop below arrives while the thread waits awake; its first builds the index,
    // after which the thread stores a snapshot of it on a timer, in slices (index-cache.ts).
    const retrieval = { ...loadConfig({}).retrieval, searchThreadSpinMicros: 100_000, indexSnapshotMinMemories: 10 };
    const thread = new RetrievalThread({ database: t.database.config, retrieval }, t.database);
    try {
      let stored = 0;
      // Calls as close as they come until the snapshot's timer (a second after the build) has fired and its
      // slices have run, for ten seconds at most: a count of calls would end before the timer on a fast machine.
      const deadline = Date.now() + 10_000;
      for (let i = 0; Date.now() < deadline && stored === 0; i++) {
        expect(await thread.retrieval.query(owner, { query: TOPICS[i % TOPICS.length]!, k: 3 })).toHaveLength(3);
        stored = (await thread.cache.stats()).snapshots.stored;
      }
      expect(stored, 'the snapshot was stored while the calls went on').toBe(1);
    } finally {
      await thread.close();
    }
  });
});
