import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useTestApp, type TestApp } from '../../testing/harness.js';
import { expectError, expectNothingWritten } from '../../testing/memories.js';
import { startFakeLlm, type FakeLlm } from '../../testing/fake-llm.js';
import { addAll, freshUser, setColumns } from '../../testing/retrieval.js';

const NO_ANSWER = 'No answer found in the memories.';
const ask = (t: TestApp, endUser: string, body: Record<string, unknown>) =>
  t.call('POST', '/memory/synthesize', { endUser, body });

/** A conversation whose turns were said on known days (set before the end user's index is built). */
async function conversation(t: TestApp, endUser: string) {
  const memories = await addAll(
    t,
    [
      'I went to the LGBTQ support group yesterday and it was so powerful.',
      "I've been researching adoption agencies, because I want to give a kid a loving home.",
      'Melanie painted a sunrise over the lake last year.',
    ],
    { endUser },
  );
  await setColumns(t, memories[0].id, { created_at: '2023-05-08T13:56:00.000Z' });
  await setColumns(t, memories[1].id, { created_at: '2023-05-25T10:00:00.000Z' });
  await setColumns(t, memories[2].id, { created_at: '2023-05-08T14:00:00.000Z' });
  return memories;
}

forEachDialect('POST /memory/synthesize (built-in)', (dialect) => {
  const t = useTestApp(dialect);

  it('answers with the best-supported span and cites it, resolving dates for "when"', async () => {
    const endUser = freshUser();
    const [group, adoption, painting] = await conversation(t, endUser);
    const when = await ask(t, endUser, { question: 'When did she go to the LGBTQ support group?' });
    expect(when.status, when.text).toBe(200);
    expect(when.body).toMatchObject({
      answer: '7 May 2023',
      found: true,
      method: 'extractive',
      citations: [{ memory_id: group.id, text: 'I went to the LGBTQ support group yesterday and it was so powerful.' }],
    });
    expect(when.body.memories[0].id).toBe(group.id);

    const year = await ask(t, endUser, { question: 'When did Melanie paint a sunrise?' });
    expect(year.body).toMatchObject({ answer: '2022', citations: [{ memory_id: painting.id }] });

    const what = await ask(t, endUser, { question: 'What has she been researching?', k: 3 });
    expect(what.body).toMatchObject({ found: true, citations: [{ memory_id: adoption.id }] });
    expect(what.body.answer).toMatch(/adoption agencies/);
    expect(what.body.memories.length).toBeLessThanOrEqual(3);
  });

  it('says honestly when nothing supports an answer', async () => {
    const endUser = freshUser();
    await conversation(t, endUser);
    const none = await ask(t, endUser, { question: 'What is the capital of Peru?' });
    expect(none.body).toMatchObject({ answer: NO_ANSWER, found: false, citations: [], method: 'extractive' });
    const empty = await ask(t, freshUser(), { question: 'Where does she live?' });
    expect(empty.body).toEqual({ answer: NO_ANSWER, found: false, citations: [], memories: [], method: 'extractive' });
  });

  it('narrows by session and filters, and refuses bad input without writing', async () => {
    const endUser = freshUser();
    await addAll(
      t,
      [
        { text: 'The cat is called Luna.', session_id: 'a' },
        { text: 'The dog is called Max.', session_id: 'b', tags: ['pets'] },
      ],
      { endUser },
    );
    expect(
      (await ask(t, endUser, { question: 'What is the dog called?', session_id: 'a' })).body.citations.map(
        (c: { text: string }) => c.text,
      ),
    ).not.toContain('The dog is called Max.');
    expect(
      (await ask(t, endUser, { question: 'What is it called?', filters: { tags_any: ['pets'] } })).body.citations,
    ).toEqual([{ memory_id: expect.any(Number), text: 'The dog is called Max.' }]);
    const bad: Array<[Record<string, unknown>, string]> = [
      [{}, 'question'],
      [{ question: '' }, 'question'],
      [{ question: 'x'.repeat(4_001) }, 'question'],
      [{ question: 'ok', k: 0 }, 'k'],
      [{ question: 'ok', k: 51 }, 'k'],
      [{ question: 'ok', filters: { is_summary: 'no' } }, 'filters/is_summary'],
      [{ question: 'ok', why: 1 }, 'why'],
    ];
    for (const [body, field] of bad)
      expectError(await expectNothingWritten(t, () => ask(t, endUser, body)), 400, 'validation_error', field);
    expectError(await ask(t, endUser, { question: '   ' }), 400, 'validation_error', 'query');
  });
});

forEachDialect('POST /memory/synthesize (LLM)', (dialect) => {
  let fake: FakeLlm;
  beforeAll(async () => {
    fake = await startFakeLlm();
  });
  afterAll(() => fake.close());
  const t = useTestApp(dialect, () => ({
    llm: { kind: 'openai', baseUrl: fake.baseUrl, model: 'answerer', timeoutMs: 2_000, maxRetries: 0 },
  }));
  const reset = () => {
    fake.requests.length = 0;
    fake.script.length = 0;
  };

  it('answers from the retrieved memories only, citing their spans', async () => {
    const endUser = freshUser();
    const [group] = await conversation(t, endUser);
    reset();
    fake.fallback = () => ({ content: JSON.stringify({ answer: 'On 7 May 2023.', memory_ids: [group.id] }) });
    const res = await ask(t, endUser, { question: 'When did she go to the LGBTQ support group?', k: 2 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      answer: 'On 7 May 2023.',
      found: true,
      method: 'llm',
      model: 'openai:answerer',
      citations: [{ memory_id: group.id, text: 'I went to the LGBTQ support group yesterday and it was so powerful.' }],
      usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
    });
    const prompt = fake.requests[0]!.body.messages[1]!.content;
    expect(prompt).toContain(`[m:${group.id}] (2023-05-08) I went to the LGBTQ support group`);
    expect(prompt).toContain('Question: When did she go to the LGBTQ support group?');
  });

  it('refuses an answer citing a memory it was not given, asks once more, and falls back to the built-in answer when refused twice', async () => {
    const endUser = freshUser();
    const [group] = await conversation(t, endUser);
    reset();
    fake.script.push({ content: JSON.stringify({ answer: 'Last week.', memory_ids: [999_999] }) });
    fake.fallback = () => ({ content: JSON.stringify({ answer: '7 May 2023', memory_ids: [group.id] }) });
    const retried = await ask(t, endUser, { question: 'When did she go to the LGBTQ support group?' });
    expect(retried.body).toMatchObject({ answer: '7 May 2023', method: 'llm', usage: { total_tokens: 36 } });
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.body.messages.slice(2)).toEqual([
      { role: 'assistant', content: JSON.stringify({ answer: 'Last week.', memory_ids: [999_999] }) },
      { role: 'user', content: 'You cited m:999999, which are not among the memories given. Cite only those.' },
    ]);

    reset();
    fake.fallback = () => ({ content: 'It was on a Sunday, I think.' });
    const refused = await ask(t, endUser, { question: 'When did she go to the LGBTQ support group?' });
    expect(refused.body).toMatchObject({
      answer: '7 May 2023',
      method: 'extractive',
      citations: [{ memory_id: group.id }],
      note: expect.stringMatching(/refused twice/),
    });
    expect(fake.requests).toHaveLength(2);

    reset();
    fake.fallback = () => ({ content: '```json\n{"answer": null, "memory_ids": []}\n```' });
    expect((await ask(t, endUser, { question: 'What is the capital of Peru?' })).body).toMatchObject({
      answer: NO_ANSWER,
      found: false,
      method: 'llm',
    });
  });

  it('answers 503 unavailable when the provider is down', async () => {
    const endUser = freshUser();
    await conversation(t, endUser);
    reset();
    fake.fallback = () => ({ status: 502, content: 'bad gateway' });
    expectError(await ask(t, endUser, { question: 'When did she go to the support group?' }), 503, 'unavailable');
  });
});
