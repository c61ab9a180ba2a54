import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { forEachDialect, useTestApp, type TestApp } from '../../testing/harness.js';
import {
  addMemory,
  expectAudited,
  expectError,
  expectIdempotentReplay,
  expectNothingWritten,
  withEffects,
} from '../../testing/memories.js';
import { startFakeLlm, type FakeLlm } from '../../testing/fake-llm.js';
import { freshUser } from '../../testing/retrieval.js';

type Message = { role: string; content: string; id?: string; time?: string; name?: string };
const infer = (t: TestApp, endUser: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  t.call('POST', '/memory/infer', { endUser, body, headers });
const summary = (res: { body: { results: Array<{ status: string; memory: { id: number; text: string } }> } }) =>
  res.body.results.map((r) => [r.status, r.memory.text]);

forEachDialect('POST /memory/infer (offline extractor)', (dialect) => {
  const t = useTestApp(dialect);

  it('stores each fact the user states about themselves, with its messages and session, and nothing from the assistant', async () => {
    const endUser = freshUser('infer');
    const messages: Message[] = [
      { role: 'user', content: 'Hi there! I live in Paris. I work at Google.', id: 'm-1', name: 'Ana' },
      { role: 'assistant', content: 'Nice! I live in the cloud and I work at Engram.', id: 'm-2' },
      { role: 'user', content: 'Can you recommend a restaurant for tonight?' },
    ];
    const effects = await withEffects(t, () =>
      infer(t, endUser, { messages, session_id: 'chat-1', tags: ['chat'], metadata: { channel: 'web' } }),
    );
    const res = effects.res;
    expect(res.status, res.text).toBe(200);
    expect(res.body.method).toBe('builtin');
    expect(summary(res)).toEqual([
      ['created', 'I live in Paris.'],
      ['created', 'I work at Google.'],
    ]);
    const [paris] = res.body.results;
    expect(paris).toMatchObject({
      messages: [0],
      supersedes: [],
      memory: {
        source: 'conversation',
        session_id: 'chat-1',
        tags: ['chat'],
        end_user_id: endUser,
        metadata: { channel: 'web', inferred_from: { method: 'builtin', messages: [{ index: 0, id: 'm-1' }] } },
      },
    });
    const ids = res.body.results.map((r: { memory: { id: number } }) => r.memory.id);
    expectAudited(effects, t, { action: 'memory.infer', target_type: 'memory', target_id: ids.join(',') });
    expect(effects.events.map((e) => e.type)).toEqual(['memory.created', 'memory.created']);
    const stored = await t.call('GET', `/memory/${paris.memory.id}`, { endUser });
    expect(stored.body).toEqual(paris.memory);

    // The same conversation again: every fact is a duplicate of what is stored, and nothing is written.
    const again = await expectNothingWritten(t, () => infer(t, endUser, { messages }), true);
    expect(summary(again)).toEqual([
      ['duplicate', 'I live in Paris.'],
      ['duplicate', 'I work at Google.'],
    ]);
    expect(again.body.results.map((r: { memory: { id: number } }) => r.memory.id)).toEqual(ids);
    // Nothing about the user at all: no facts, nothing written.
    const chat = await expectNothingWritten(
      t,
      () => infer(t, endUser, { messages: [{ role: 'user', content: 'What time is it?' }] }),
      true,
    );
    expect(chat.body).toEqual({ method: 'builtin', results: [] });
  });

  it('keeps one memory per fact in other words, and marks the memory a newer fact ends superseded by it', async () => {
    const endUser = freshUser('infer');
    const paris = await addMemory(t, { text: 'I live in Paris' }, { endUser });
    const tea = await addMemory(t, { text: 'I love green tea' }, { endUser });
    const effects = await withEffects(t, () =>
      infer(t, endUser, {
        messages: [{ role: 'user', content: "I'm living in Paris, as you know. I moved to Berlin last week though!" }],
      }),
    );
    const res = effects.res;
    expect(res.status, res.text).toBe(200);
    expect(summary(res)).toEqual([
      ['duplicate', 'I live in Paris'],
      ['created', 'I moved to Berlin last week though!'],
    ]);
    const berlin = res.body.results[1].memory;
    expect(res.body.results[1].supersedes).toEqual([paris.id]);
    const old = await t.call('GET', `/memory/${paris.id}`, { endUser });
    expect(old.body).toMatchObject({ superseded_by: berlin.id });
    expect((await t.call('GET', `/memory/${tea.id}`, { endUser })).body.superseded_by).toBeNull();
    const history = await t.call('GET', `/memory/${paris.id}/history`, { endUser });
    expect(history.body.items.map((h: { action: string }) => h.action)).toEqual(['create', 'supersede']);
    expect(effects.events.map((e) => e.type)).toEqual(['memory.created', 'memory.updated']);
    // A question about home now answers Berlin first (the knowledge module reads the same facts).
    const asked = await t.call('POST', '/memory/query', { endUser, body: { query: 'where do I live?', k: 2 } });
    expect(asked.body.memories[0].id).toBe(berlin.id);
  });

  it("stores a fact as of its message's time, so an older statement ends nothing stored later", async () => {
    const endUser = freshUser('infer');
    const berlin = await addMemory(t, { text: 'I live in Berlin' }, { endUser });
    const res = await infer(t, endUser, {
      messages: [{ role: 'user', content: 'I live in Madrid.', time: '2020-03-01T10:00:00+01:00', id: 'old' }],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.results[0]).toMatchObject({
      status: 'created',
      supersedes: [],
      memory: { created_at: '2020-03-01T09:00:00.000Z' },
    });
    expect((await t.call('GET', `/memory/${berlin.id}`, { endUser })).body.superseded_by).toBeNull();
  });

  it('answers a replay of the same Idempotency-Key with the first answer', async () => {
    const endUser = freshUser('infer');
    const body = { messages: [{ role: 'user', content: 'I am a nurse.' }] };
    const first = await expectIdempotentReplay(
      () => infer(t, endUser, body, { 'Idempotency-Key': `infer-${endUser}` }),
      200,
    );
    expect(summary(first)).toEqual([['created', 'I am a nurse.']]);
  });

  it('refuses bad input naming the field, writing nothing', async () => {
    const endUser = freshUser('infer');
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'messages'],
      [{ messages: [] }, 'messages'],
      [{ messages: [{ role: 'robot', content: 'I live in Oslo' }] }, 'messages/0/role'],
      [{ messages: [{ role: 'user', content: '' }] }, 'messages/0/content'],
      [{ messages: [{ role: 'user', content: 'I live in Oslo', time: 'yesterday' }] }, 'messages/0/time'],
      [{ messages: [{ role: 'user', content: 'I live in Oslo', time: future }] }, 'messages/0/time'],
      [{ messages: [{ role: 'user', content: 'I live in Oslo' }], metadata: [] }, 'metadata'],
    ];
    for (const [body, field] of cases)
      expectError(await expectNothingWritten(t, () => infer(t, endUser, body)), 400, 'validation_error', field);
  });
});

forEachDialect('POST /memory/infer (chat model)', (dialect) => {
  let fake: FakeLlm;
  beforeAll(async () => {
    fake = await startFakeLlm();
  });
  afterAll(() => fake.close());
  const t = useTestApp(dialect, () => ({
    llm: { kind: 'openai', baseUrl: fake.baseUrl, model: 'extractor', timeoutMs: 2_000, maxRetries: 0 },
    // These tests count and script the model's requests: no background reading of the memories' facts between them.
    intelligence: { ...loadConfig({}).intelligence, modelFacts: false },
  }));
  const reset = () => {
    fake.requests.length = 0;
    fake.script.length = 0;
  };
  const messages: Message[] = [
    { role: 'user', content: "Finally unpacked. Berlin's my home now!", id: 'a' },
    { role: 'assistant', content: 'Congratulations! Where do you work?', id: 'b' },
    { role: 'user', content: 'Still at Google, remote.', id: 'c', time: '2026-01-05T10:00:00Z' },
  ];

  it('asks the model under a strict JSON schema, stores the facts it cites, and supersedes as the offline path does', async () => {
    const endUser = freshUser('infer');
    const paris = await addMemory(t, { text: 'I live in Paris' }, { endUser });
    reset();
    fake.fallback = () => ({
      content: JSON.stringify({
        facts: [
          { text: 'I live in Berlin', messages: [0] },
          { text: 'I work at Google', messages: [2, 1] },
        ],
      }),
    });
    const res = await infer(t, endUser, { messages, session_id: 'move' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      method: 'llm',
      model: 'openai:extractor',
      usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
    });
    expect(summary(res)).toEqual([
      ['created', 'I live in Berlin'],
      ['created', 'I work at Google'],
    ]);
    const [berlin, google] = res.body.results;
    expect(berlin).toMatchObject({ messages: [0], supersedes: [paris.id], memory: { session_id: 'move' } });
    expect(google.memory.created_at).toBe('2026-01-05T10:00:00.000Z');
    expect(google.memory.metadata).toEqual({
      inferred_from: {
        method: 'llm',
        messages: [
          { index: 1, id: 'b' },
          { index: 2, id: 'c' },
        ],
      },
    });
    expect((await t.call('GET', `/memory/${paris.id}`, { endUser })).body.superseded_by).toBe(berlin.memory.id);
    const [request] = fake.requests;
    expect(request!.body.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'facts', strict: true, schema: { required: ['facts'], additionalProperties: false } },
    });
    const prompt = request!.body.messages[1]!.content;
    expect(prompt).toContain("[0] (user) Finally unpacked. Berlin's my home now!");
    expect(prompt).toContain('[2] (user, 2026-01-05T10:00:00Z) Still at Google, remote.');
  });

  it('asks once more when an answer cites no given message, and falls back to the offline extractor when refused twice', async () => {
    const endUser = freshUser('infer');
    reset();
    fake.script.push({ content: JSON.stringify({ facts: [{ text: 'I live in Berlin', messages: [7] }] }) });
    fake.fallback = () => ({ content: JSON.stringify({ facts: [{ text: 'I live in Berlin', messages: [0] }] }) });
    const retried = await infer(t, endUser, { messages });
    expect(retried.body).toMatchObject({ method: 'llm', usage: { total_tokens: 36 } });
    expect(fake.requests[1]!.body.messages.slice(2)).toEqual([
      { role: 'assistant', content: JSON.stringify({ facts: [{ text: 'I live in Berlin', messages: [7] }] }) },
      { role: 'user', content: 'Each fact must cite the messages that state it, by index 0 to 2 (you cited 7).' },
    ]);

    reset();
    fake.fallback = () => ({ content: 'Sure! Here are the facts: Berlin.' });
    const other = freshUser('infer');
    const fallen = await infer(t, other, {
      messages: [{ role: 'user', content: 'I work at Siemens.' }, ...messages.slice(1)],
    });
    expect(fallen.status, fallen.text).toBe(200);
    expect(fallen.body.method).toBe('builtin');
    expect(fallen.body.model).toBeUndefined();
    expect(summary(fallen)).toEqual([['created', 'I work at Siemens.']]);
    expect(fake.requests).toHaveLength(2);
  });

  it('answers 503 when the model cannot be reached, writing nothing', async () => {
    const endUser = freshUser('infer');
    reset();
    fake.fallback = () => ({ status: 500, content: 'overloaded' });
    expectError(await expectNothingWritten(t, () => infer(t, endUser, { messages })), 503, 'unavailable');
  });
});
