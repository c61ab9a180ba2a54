import { afterAll, beforeAll, expect, it } from 'vitest';
import { MODEL_FACTS_SCHEMA_NAME } from '../../engine/nlp/index.js';
import { startFakeLlm, type ChatCompletionRequest, type FakeAnswer, type FakeLlm } from '../../testing/fake-llm.js';
import { forEachDialect, useTestApp, type TestApp } from '../../testing/harness.js';
import { addMemory } from '../../testing/memories.js';
import { freshUser, query } from '../../testing/retrieval.js';
import { until } from '../../testing/until.js';
import type { GraphEdge } from './knowledge.js';

// Issue 53: with a chat model configured, each memory's personal facts are also read by the model in the
// background (model-reading.ts), stored once, added to the rules' facts, and erased with the memory. The
// statements below are ones no fact rule reads; the stand-in endpoint answers in the real wire format.
const READINGS: Record<string, unknown[]> = {
  'I live in Paris.': [
    { subject: 'I', attribute: 'lives_in', value: 'Paris', negated: false, past: false, qualifier: null },
  ],
  'These days my post goes to a box in Lisbon.': [
    { subject: 'I', attribute: 'lives_in', value: 'Lisbon', negated: false, past: false, qualifier: null },
  ],
};

/** The statement a fact-reading request asks about ("NAME said: " dropped), or undefined for any other request. */
const statementOf = (body: ChatCompletionRequest) =>
  body.response_format?.json_schema?.name === MODEL_FACTS_SCHEMA_NAME
    ? String(body.messages.at(-1)?.content).replace(/^.* said: /, '')
    : undefined;

const reading = (body: ChatCompletionRequest): FakeAnswer => ({
  content: JSON.stringify({ facts: READINGS[statementOf(body) ?? ''] ?? [] }),
});

const METRICS_TOKEN = 'metrics-token-model-facts';

async function storedReadings(t: TestApp, memoryIds: number[]) {
  return t.database.db
    .selectFrom('memory_model_facts')
    .select(['memory_id', 'model', 'facts'])
    .where('memory_id', 'in', memoryIds)
    .execute();
}

async function livesIn(t: TestApp, endUser: string): Promise<GraphEdge[]> {
  const res = await t.call('GET', '/memory/graph', { endUser });
  expect(res.status, res.text).toBe(200);
  return (res.body.edges as GraphEdge[]).filter((e) => e.type === 'lives_in');
}

forEachDialect('personal facts read by a chat model', (dialect) => {
  let fake: FakeLlm;
  beforeAll(async () => {
    fake = await startFakeLlm();
  });
  afterAll(() => fake.close());
  const t = useTestApp(dialect, () => ({
    llm: { kind: 'openai', baseUrl: fake.baseUrl, model: 'reader', timeoutMs: 2_000, maxRetries: 0 },
    metricsToken: METRICS_TOKEN,
  }));

  it('adds a change no rule reads: the old home ends, the new one answers first, and forgetting erases the reading', async () => {
    const endUser = freshUser('model-facts');
    // The model's answers wait until the test has seen the rules' view alone.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    fake.fallback = async (body) =>
      statementOf(body)?.includes('Lisbon') ? answered.then(() => reading(body)) : reading(body);
    const paris = await addMemory(t, 'I live in Paris.', { endUser });
    await until(async () => (await livesIn(t, endUser)).length === 1, 'the rules read the Paris home');
    const lisbon = await addMemory(t, 'These days my post goes to a box in Lisbon.', { endUser });
    // Read when the end user's view next catches up (here: the graph), as vectors are embedded.
    expect((await livesIn(t, endUser)).map((e) => [e.target, e.invalid_at])).toEqual([['place:paris', null]]);
    await until(() => fake.requests.some((r) => statementOf(r.body)?.includes('Lisbon')), 'the Lisbon memory asked');
    expect(await storedReadings(t, [lisbon.id])).toEqual([]);

    answer();
    const edges = await until(async () => {
      const found = await livesIn(t, endUser);
      return found.length === 2 && found;
    }, 'the model-read home in the graph');
    const byTarget = new Map(edges.map((e) => [e.target, e]));
    expect(byTarget.get('place:lisbon')?.invalid_at).toBeNull();
    expect(byTarget.get('place:paris')?.invalidated_by).toBe(lisbon.id);
    const rows = await storedReadings(t, [paris.id, lisbon.id]);
    expect(rows.map((r) => [r.memory_id, r.model]).sort()).toEqual(
      [
        [paris.id, 'openai:reader'],
        [lisbon.id, 'openai:reader'],
      ].sort(),
    );
    const [top] = await query(t, { query: 'where do I live', k: 5 }, { endUser });
    expect(top?.id).toBe(lisbon.id);

    // Each memory was read once: views taken again ask nothing more.
    const asked = fake.requests.filter((r) => statementOf(r.body) !== undefined).length;
    await livesIn(t, endUser);
    expect(fake.requests.filter((r) => statementOf(r.body) !== undefined).length).toBe(asked);

    const forgotten = await t.call('DELETE', '/memory/forget', { body: { ids: [lisbon.id] }, endUser });
    expect(forgotten.status, forgotten.text).toBeLessThan(300);
    expect(await storedReadings(t, [lisbon.id])).toEqual([]);
    expect((await livesIn(t, endUser)).map((e) => [e.target, e.invalid_at])).toEqual([['place:paris', null]]);
  });

  it('asks again after a failed call, the rules standing meanwhile', async () => {
    const endUser = freshUser('model-facts-retry');
    fake.requests.length = 0;
    fake.script.push({ status: 503, content: 'overloaded' });
    fake.fallback = reading;
    const before = t.services.intelligence.modelReadings.failures;
    const lisbon = await addMemory(t, 'These days my post goes to a box in Lisbon.', { endUser });
    expect(await livesIn(t, endUser)).toEqual([]);
    await until(() => t.services.intelligence.modelReadings.failures > before, 'a failed call counted');
    await until(async () => (await livesIn(t, endUser)).length === 1, 'read after the pause');
    expect((await storedReadings(t, [lisbon.id])).length).toBe(1);
    const metrics = await t.call('GET', '/metrics', { token: METRICS_TOKEN });
    expect(metrics.text).toMatch(/engram_model_fact_readings_total\{outcome="failed"\} [1-9]/);
  });
});
