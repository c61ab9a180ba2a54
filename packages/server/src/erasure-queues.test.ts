import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { startFakeLlm, type FakeLlm } from './testing/fake-llm.js';
import { HeldApart, heapsHolding as threadHeapsHolding, type Hit } from './testing/erasure.js';
import { forEachDialect, useTestApp } from './testing/harness.js';
import { retrievalConfig, startFakeEmbedder, type FakeEmbedder } from './testing/retrieval.js';
import { until } from './testing/until.js';

/**
 * The background queues hold a memory's text while a provider fails: the embedding queue (on the search thread)
 * and the chat model's fact reading (on the main thread), each pausing between tries. Forgetting the memory
 * takes it out of both at once, and out of the loop that waits out a pause: no heap holds it after the forget
 * commits (docs/architecture.md, "Erasure in memory"). erasure-markers.test.ts drives every other copy path.
 */
forEachDialect('erasure empties the background queues of a failing provider', (dialect) => {
  const M = new HeldApart(`zqq${randomBytes(6).toString('hex')}`);
  let llm: FakeLlm;
  let embedder: FakeEmbedder;
  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.fallback = () => ({ status: 503, content: 'overloaded' });
    embedder = await startFakeEmbedder();
    // The memory's text fails (a batch holding it is tried again, after a pause); a query's text is embedded.
    embedder.fail = (input) => (input.some((text) => text.includes(`${M}`)) ? 503 : null);
  });
  afterAll(async () => {
    await llm?.close();
    await embedder?.close();
  });
  const t = useTestApp(dialect, () => ({
    llm: { kind: 'openai', baseUrl: llm.baseUrl, model: 'reader-model', timeoutMs: 5_000, maxRetries: 0 },
    ...retrievalConfig({
      ...loadConfig({}).retrieval,
      searchThread: true,
      embedder: { kind: 'openai', baseUrl: embedder.baseUrl, model: 'failing-embed' },
    }),
  }));

  /** Which thread's heap holds the marker (or, with `explain`, what holds each copy). */
  const heapsHolding = async (explain = false): Promise<Hit[]> => {
    llm.requests.length = 0;
    embedder.requests.length = 0;
    return threadHeapsHolding(t.services.retrieval, M, explain);
  };

  it('lets a forgotten memory out of the embedding queue and the fact reading queue', async () => {
    // Only the id is kept: the test holds no copy of the text in the heap it searches.
    const id = await (async () => {
      const added = await t.call('POST', '/memory/add', {
        endUser: 'queued-user',
        body: { text: `I moved to Porto with ${M} last spring.` },
      });
      expect(added.status, added.text).toBe(201);
      return added.body.id as number;
    })();
    // A query builds the index (its memory waits for a vector), the graph reads its facts (a reading is queued).
    expect((await t.call('POST', '/memory/query', { endUser: 'queued-user', body: { query: 'Porto' } })).status).toBe(
      200,
    );
    expect((await t.call('GET', '/memory/graph', { endUser: 'queued-user' })).status).toBe(200);
    await until(
      async () => embedder.requests.length > 0 && llm.requests.some((r) => JSON.stringify(r.body).includes(`${M}`)),
      'both providers asked (and failing)',
    );
    // The queues hold it while the providers fail: the test can see a copy (it is not blind).
    expect(await heapsHolding()).toEqual(["the main thread's heap", "the search thread's heap"]);

    const forgot = await t.call('DELETE', '/memory/forget', {
      endUser: 'queued-user',
      body: { ids: [id] },
    });
    expect(forgot.status, forgot.text).toBeLessThan(300);
    let hits: Hit[] = [];
    await until(async () => (hits = await heapsHolding()).length === 0, 'no heap holding the marker', 90_000).catch(
      () => {},
    );
    expect(hits.length > 0 ? await heapsHolding(true) : []).toEqual([]);
  }, 180_000);
});
