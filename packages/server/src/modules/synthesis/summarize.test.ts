import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { forEachDialect, useTestApp, type TestApp } from '../../testing/harness.js';
import {
  addMemory,
  expectAudited,
  expectError,
  expectIdempotentReplay,
  expectNothingWritten,
  historyRows,
  withEffects,
} from '../../testing/memories.js';
import { startFakeLlm, type FakeLlm } from '../../testing/fake-llm.js';
import { holdOwnerLocks, lockWaiters } from '../../testing/locks.js';
import { until } from '../../testing/until.js';
import { addAll, freshUser, idsOf, query } from '../../testing/retrieval.js';

const TRIP = [
  'Caroline went hiking in the Alps with her sister in June. The weather was perfect for hiking.',
  'Caroline loves hiking and mountain photography.',
  'Caroline adopted a puppy named Biscuit.',
  'The puppy Biscuit sleeps all day.',
  'Caroline hiking again in the Alps next summer is the plan.',
];

const summarize = (t: TestApp, endUser: string, body: Record<string, unknown>) =>
  t.call('POST', '/memory/summarize', { endUser, body });

forEachDialect('POST /memory/summarize (built-in)', (dialect) => {
  const t = useTestApp(dialect);

  it('stores an extractive summary as a memory linked to its sources, and answers it again for the same set', async () => {
    const endUser = freshUser();
    const sources = await addAll(t, TRIP, { endUser });
    const ids = idsOf(sources);
    const created = await withEffects(t, () => summarize(t, endUser, { memory_ids: ids, max_sentences: 3 }));
    expect(created.res.status, created.res.text).toBe(201);
    const body = created.res.body;
    expect(body).toMatchObject({ status: 'created', method: 'extractive', sources: ids });
    expect(body.memory).toMatchObject({
      is_summary: true,
      source: 'summary',
      text: body.summary,
      end_user_id: endUser,
      metadata: { summary: { method: 'extractive', max_sentences: 3, sources: ids } },
    });
    // Every sentence of the summary is a sentence of a source; at most three, none repeated.
    const sentences = body.summary.split(/(?<=\.)\s+/);
    expect(sentences.length).toBeGreaterThan(0);
    expect(sentences.length).toBeLessThanOrEqual(3);
    expect(new Set(sentences).size).toBe(sentences.length);
    for (const s of sentences) expect(TRIP.some((text) => text.includes(s))).toBe(true);
    expect(body.summary).toMatch(/hiking/);
    expectAudited(created, t, { action: 'memory.summarize', target_type: 'memory', target_id: String(body.memory.id) });
    expect(created.events.filter((e) => e.type === 'memory.created').map((e) => e.payload)).toEqual([
      { memory: { ...body.memory, end_user_id: endUser }, tenant_id: null },
    ]);

    const links = await t.call('GET', `/memory/${body.memory.id}/relations`, { endUser });
    expect(links.body.items.map((r: { type: string; target_id: number }) => [r.type, r.target_id])).toEqual(
      ids.map((id) => ['summarizes', id]),
    );
    expectError(
      await t.call('DELETE', `/memory/relations/${links.body.items[0].id}`, { endUser }),
      409,
      'conflict',
      'relation_id',
    );

    const again = await expectNothingWritten(t, () =>
      summarize(t, endUser, { memory_ids: [...ids].reverse(), max_sentences: 3 }),
    );
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...body, status: 'existing' });

    const unstored = await expectNothingWritten(t, () =>
      summarize(t, endUser, { memory_ids: ids.slice(0, 2), store: false }),
    );
    expect(unstored.status).toBe(200);
    expect(unstored.body).toMatchObject({
      status: 'not_stored',
      memory: null,
      sources: ids.slice(0, 2),
      summary: expect.stringMatching(/hiking/),
    });
  });

  it('is retrievable, and the is_summary filter includes or excludes it', async () => {
    const endUser = freshUser();
    const sources = await addAll(t, TRIP.slice(0, 3), { endUser });
    const summary = (await summarize(t, endUser, { memory_ids: idsOf(sources) })).body.memory;
    const all = await query(t, { query: 'hiking Alps', k: 10 }, { endUser });
    expect(idsOf(all)).toContain(summary.id);
    expect(idsOf(await query(t, { query: 'hiking Alps', filters: { is_summary: true } }, { endUser }))).toEqual([
      summary.id,
    ]);
    expect(idsOf(await query(t, { query: 'hiking Alps', filters: { is_summary: false } }, { endUser }))).not.toContain(
      summary.id,
    );
  });

  it('selects by filters and session, never summarizing summaries', async () => {
    const endUser = freshUser();
    const [a, b] = await addAll(
      t,
      [
        { text: 'Booked flights to Tokyo for the conference.', session_id: 's1', tags: ['travel'] },
        { text: 'Hotel in Shinjuku is confirmed for three nights.', session_id: 's1', tags: ['travel'] },
        { text: 'Dentist appointment moved to Friday.', session_id: 's2' },
      ],
      { endUser },
    );
    const bySession = await summarize(t, endUser, { session_id: 's1' });
    expect(bySession.status, bySession.text).toBe(201);
    expect(bySession.body.sources).toEqual([a.id, b.id]);
    expect(bySession.body.memory.session_id).toBe('s1');
    const byTag = await summarize(t, endUser, { filters: { tags_any: ['travel'] }, max_sentences: 2 });
    expect(byTag.body.sources).toEqual([a.id, b.id]);
    // Everything of the end user: the stored summaries are not among the sources.
    const everything = await summarize(t, endUser, { store: false });
    expect(everything.body.sources).toHaveLength(3);
    expectError(
      await summarize(t, endUser, { memory_ids: [a.id, bySession.body.memory.id] }),
      400,
      'validation_error',
      'memory_ids/1',
    );
  });

  it('refuses empty, oversized, foreign and forgotten sets with nothing stored', async () => {
    const endUser = freshUser();
    const [a, b] = await addAll(t, ['Likes green tea.', 'Drinks coffee at work.'], { endUser });
    const stranger = await addMemory(t, 'Not yours to summarize.', { endUser: freshUser() });
    await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [b.id] } });
    const bad: Array<[Record<string, unknown>, number, string]> = [
      [{ memory_ids: [] }, 400, 'memory_ids'],
      [{ memory_ids: Array.from({ length: 501 }, (_, i) => i + 1) }, 400, 'memory_ids'],
      [{ memory_ids: [a.id, a.id] }, 400, 'memory_ids'],
      [{ memory_ids: [a.id, stranger.id] }, 404, 'memory_ids/1'],
      [{ memory_ids: [b.id] }, 404, 'memory_ids/0'],
      [{ memory_ids: [a.id], session_id: 's' }, 400, 'memory_ids'],
      [{ filters: { tags_any: ['nothing-has-this'] } }, 400, 'filters'],
      [{ session_id: 'no-such-session' }, 400, 'session_id'],
      [{ memory_ids: [a.id], max_sentences: 0 }, 400, 'max_sentences'],
      [{ memory_ids: [a.id], max_sentences: 21 }, 400, 'max_sentences'],
      [{ memory_ids: [a.id], store: 'yes' }, 400, 'store'],
      [{ memory_ids: [a.id], extra: 1 }, 400, 'extra'],
    ];
    for (const [body, status, field] of bad) {
      const res = await expectNothingWritten(t, () => summarize(t, endUser, body));
      expectError(res, status, status === 400 ? 'validation_error' : 'not_found', field);
    }
    const res = await expectNothingWritten(t, () => summarize(t, freshUser(), {}));
    expectError(res, 400, 'validation_error', 'body');
  });

  it('rewrites a summary without a forgotten source, erasing its old text everywhere, and forgets it with its last source', async () => {
    const endUser = freshUser();
    const secret = 'Caroline adopted a puppy named Biscuit.';
    const sources = await addAll(t, [TRIP[0]!, TRIP[1]!, secret], { endUser });
    const summary = (await summarize(t, endUser, { memory_ids: idsOf(sources), max_sentences: 5 })).body.memory;
    expect(summary.text).toContain('Biscuit');

    const forgotten = await withEffects(t, () =>
      t.call('DELETE', '/memory/forget', { endUser, body: { ids: [sources[2].id] } }),
    );
    expect(forgotten.res.body).toEqual([sources[2].id]);
    expect(
      forgotten.events.map((e) => [
        e.type,
        (e.payload as { memory?: { id: number } }).memory?.id ?? e.payload.memory_id,
      ]),
    ).toEqual([
      ['memory.updated', summary.id],
      ['memory.deleted', sources[2].id],
    ]);
    const rewritten = (await t.call('GET', `/memory/${summary.id}`, { endUser })).body;
    expect(rewritten.text).not.toContain('Biscuit');
    expect(rewritten.text).toMatch(/hiking/);
    expect(rewritten.metadata.summary).toMatchObject({
      method: 'extractive',
      sources: [sources[0].id, sources[1].id],
      forgotten_sources: [sources[2].id],
      regenerated_at: expect.any(String),
    });
    const history = await historyRows(t, summary.id);
    expect(history.map((h) => h.action)).toEqual(['create', 'relate', 'relate', 'relate', 'update']);
    expect(history.slice(0, -1).map((h) => h.changes)).toEqual([null, null, null, null]);
    expect(JSON.stringify(history)).not.toContain('Biscuit');
    const row = await t.database.db
      .selectFrom('memories')
      .select('text')
      .where('id', '=', summary.id)
      .executeTakeFirstOrThrow();
    expect(row.text).not.toContain('Biscuit');
    expect(idsOf(await query(t, 'Biscuit puppy', { endUser }))).toEqual([]);

    // The same remaining set summarized again finds the rewritten summary.
    const again = await summarize(t, endUser, { memory_ids: [sources[0].id, sources[1].id], max_sentences: 5 });
    expect(again.body).toMatchObject({ status: 'existing', memory: { id: summary.id } });

    await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [sources[0].id, sources[1].id] } });
    expectError(await t.call('GET', `/memory/${summary.id}`, { endUser }), 404, 'not_found');
    expect(
      await t.database.db.selectFrom('memory_relations').selectAll().where('source_id', '=', summary.id).execute(),
    ).toEqual([]);
  });

  it('forgets a rewritten summary that would duplicate another summary of the sources left', async () => {
    const endUser = freshUser();
    const [a, b, c] = await addAll(t, TRIP.slice(0, 3), { endUser });
    const small = (await summarize(t, endUser, { memory_ids: [a.id, b.id] })).body.memory;
    const large = (await summarize(t, endUser, { memory_ids: [a.id, b.id, c.id] })).body.memory;
    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [c.id] } })).status).toBe(200);
    expect((await t.call('GET', `/memory/${small.id}`, { endUser })).status).toBe(200);
    expectError(await t.call('GET', `/memory/${large.id}`, { endUser }), 404, 'not_found');
  });

  it('replays an idempotent summarize', async () => {
    const endUser = freshUser();
    const sources = await addAll(t, TRIP.slice(0, 2), { endUser });
    const send = () =>
      t.call('POST', '/memory/summarize', {
        endUser,
        headers: { 'idempotency-key': `sum-${endUser}` },
        body: { memory_ids: idsOf(sources) },
      });
    await expectIdempotentReplay(send, 201);
  });
});

forEachDialect('POST /memory/summarize (LLM)', (dialect) => {
  let fake: FakeLlm;
  beforeAll(async () => {
    fake = await startFakeLlm();
  });
  afterAll(() => fake.close());
  const KEY = 'sk-llm-SECRET-789';
  const t = useTestApp(dialect, () => ({
    llm: { kind: 'openai', baseUrl: fake.baseUrl, model: 'summarizer', apiKey: KEY, timeoutMs: 2_000, maxRetries: 1 },
  }));

  it('summarizes through the chat-completions endpoint, accounting tokens', async () => {
    const endUser = freshUser();
    const sources = await addAll(t, TRIP.slice(0, 3), { endUser });
    fake.requests.length = 0;
    fake.fallback = () => ({ content: ' Caroline hikes in the Alps and has a puppy called Biscuit. ' });
    const res = await summarize(t, endUser, { memory_ids: idsOf(sources), max_sentences: 2 });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      status: 'created',
      method: 'llm',
      model: 'openai:summarizer',
      summary: 'Caroline hikes in the Alps and has a puppy called Biscuit.',
      usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
      memory: {
        is_summary: true,
        metadata: { summary: { method: 'llm', model: 'openai:summarizer', sources: idsOf(sources) } },
      },
    });
    expect(fake.requests).toHaveLength(1);
    const [request] = fake.requests;
    expect(request!.authorization).toBe(`Bearer ${KEY}`);
    expect(request!.body.model).toBe('summarizer');
    expect(request!.body.messages[0]!.content).toMatch(/at most 2 sentences/);
    for (const text of TRIP.slice(0, 3)) expect(request!.body.messages[1]!.content).toContain(text);
    // Same set again: the stored summary, no second call.
    expect((await summarize(t, endUser, { memory_ids: idsOf(sources), max_sentences: 2 })).body.status).toBe(
      'existing',
    );
    expect(fake.requests).toHaveLength(1);
  });

  it('refuses a summary whose source was forgotten while the model wrote it, storing nothing', async () => {
    const endUser = freshUser();
    const named = await addAll(t, TRIP.slice(0, 3), { endUser });
    const selected = await addAll(
      t,
      [
        { text: 'Booked flights to Tokyo.', tags: ['travel'] },
        { text: 'Hotel in Shinjuku confirmed.', tags: ['travel'] },
      ],
      { endUser },
    );
    const cases: Array<[Record<string, unknown>, number, number, string, string]> = [
      // A named source is not found, as a moment later; the selection of filters would now be another one.
      [{ memory_ids: idsOf(named) }, named[2].id, 404, 'not_found', 'memory_ids/2'],
      [{ filters: { tags_any: ['travel'] } }, selected[1].id, 409, 'conflict', 'filters'],
    ];
    for (const [body, forgotten, status, code, field] of cases) {
      let asked!: () => void;
      const askedModel = new Promise<void>((resolve) => (asked = resolve));
      let answer!: () => void;
      const answered = new Promise<void>((resolve) => (answer = resolve));
      fake.fallback = async () => {
        asked();
        await answered;
        return { content: 'Caroline adopted a puppy named Biscuit and flies to Tokyo.' };
      };
      const summarizing = summarize(t, endUser, body);
      await askedModel;
      expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [forgotten] } })).body).toEqual([
        forgotten,
      ]);
      answer();
      expectError(await summarizing, status, code, field);
    }
    const db = t.database.db;
    expect(
      await db
        .selectFrom('memories')
        .select('id')
        .where('end_user_id', '=', endUser)
        .where('is_summary', '=', t.database.bool(true))
        .execute(),
    ).toEqual([]);
    expect(await db.selectFrom('memory_relations').select('id').where('end_user_id', '=', endUser).execute()).toEqual(
      [],
    );
  });

  it.runIf(dialect === 'postgres')(
    'stores one summary of two identical requests at once, answering the other with it',
    async () => {
      const endUser = freshUser();
      const sources = await addAll(t, TRIP.slice(0, 2), { endUser });
      fake.requests.length = 0;
      let answer!: () => void;
      const answered = new Promise<void>((resolve) => (answer = resolve));
      fake.fallback = async () => {
        await answered;
        return { content: 'Caroline hikes in the Alps.' };
      };
      const both = [0, 1].map(() => summarize(t, endUser, { memory_ids: idsOf(sources) }));
      await until(() => fake.requests.length === 2, 'both requests to ask the model');
      // Answered together, both reach the owner's lock before either has stored anything.
      const lock = await holdOwnerLocks(t, [endUser]);
      answer();
      await lockWaiters(t, 2, 'both summaries to wait for the owner lock');
      await lock.release();
      const answers = await Promise.all(both);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 201]);
      expect(answers.map((a) => a.body.status).sort()).toEqual(['created', 'existing']);
      expect(answers[0]!.body.memory.id).toBe(answers[1]!.body.memory.id);
      const stored = await t.database.db
        .selectFrom('memories')
        .select('id')
        .where('end_user_id', '=', endUser)
        .where('is_summary', '=', t.database.bool(true))
        .execute();
      expect(stored).toHaveLength(1);
    },
  );

  it('answers 503 unavailable and writes nothing when the provider is down', async () => {
    const endUser = freshUser();
    const sources = await addAll(t, TRIP.slice(0, 2), { endUser });
    fake.requests.length = 0;
    fake.fallback = () => ({ status: 503, headers: { 'retry-after': '0' }, content: `overloaded (key ${KEY})` });
    const res = await expectNothingWritten(t, () => summarize(t, endUser, { memory_ids: idsOf(sources) }));
    expectError(res, 503, 'unavailable');
    expect(res.text).not.toContain(KEY);
    expect(fake.requests).toHaveLength(2);
    expect(t.logs.join('')).not.toContain(KEY);
  });
});

it('reads ENGRAM_LLM_* into the configuration', () => {
  expect(loadConfig({}).llm).toBeNull();
  expect(
    loadConfig({
      ENGRAM_LLM_MODEL: 'llama3',
      ENGRAM_LLM_BASE_URL: 'http://127.0.0.1:11434/v1',
      ENGRAM_LLM_API_KEY: 'k',
      ENGRAM_LLM_TIMEOUT: '5',
    }).llm,
  ).toEqual({
    kind: 'openai',
    baseUrl: 'http://127.0.0.1:11434/v1',
    model: 'llama3',
    apiKey: 'k',
    timeoutMs: 5000,
    maxRetries: 2,
  });
  expect(() => loadConfig({ ENGRAM_LLM_BASE_URL: 'http://x/v1' })).toThrow(/ENGRAM_LLM_MODEL/);
  expect(() => loadConfig({ ENGRAM_LLM_MODEL: 'm', ENGRAM_LLM_BASE_URL: 'ftp://x' })).toThrow(/http/);
});
