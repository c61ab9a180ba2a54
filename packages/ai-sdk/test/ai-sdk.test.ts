import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs, streamText } from 'ai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ServiceClient, type Memory } from '@engram/client';
import { forEachDialect, useTestApp } from '../../server/src/testing/harness.js';
import { startFakeLlm, type FakeLlm } from '../../server/src/testing/fake-llm.js';
import { composeMemories, engramTools, withMemories } from '../src/index.js';

forEachDialect('AI SDK memory tools on a real Engram server', (dialect) => {
  const t = useTestApp(dialect);
  let llm: FakeLlm;
  let http: ServiceClient;
  let model: ReturnType<ReturnType<typeof createOpenAICompatible>>;
  const memoriesOf = async (endUserId: string) =>
    (await http.memories.list({ limit: 100 }, { endUserId })).items as Memory[];
  beforeAll(async () => {
    const baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
    llm = await startFakeLlm();
    // A first query builds the end user's index: on a loaded machine that has taken over the default 30 s.
    http = new ServiceClient({ baseUrl, apiKey: t.key, projectId: t.projectId, timeoutMs: 120_000 });
    model = createOpenAICompatible({ name: 'fake', baseURL: llm.baseUrl, apiKey: 'sk-test' })('fake-model');
  });
  afterAll(async () => llm?.close());

  it("generateText: the model adds a memory through a tool call; a refusal is the tool's answer", async () => {
    llm.requests.length = 0;
    llm.script.push(
      {
        toolCalls: [
          { name: 'addMemory', arguments: { text: 'Dana is vegetarian', tags: ['food'], importance: 0.8 } },
          { id: 'call_2', name: 'addMemory', arguments: { text: 'NUL \u0000 in text' } },
        ],
      },
      { content: 'I will remember that you are vegetarian.' },
    );
    const result = await generateText({
      model,
      tools: engramTools({ client: http, endUserId: 'dana' }),
      stopWhen: stepCountIs(3),
      prompt: 'I am vegetarian.',
    });
    expect(result.text).toBe('I will remember that you are vegetarian.');

    const offered = llm.requests[0]!.body.tools!.map((x) => x.function.name).sort();
    expect(offered).toEqual(['addMemory', 'forgetMemory', 'recentMemories', 'searchMemories', 'updateMemory']);
    const toolAnswers = llm.requests[1]!.body.messages.filter((m) => m.role === 'tool');
    expect(toolAnswers.map((m) => m.tool_call_id)).toEqual(['call_1', 'call_2']);
    expect(JSON.parse(toolAnswers[0]!.content)).toMatchObject({ status: 'created' });
    expect(JSON.parse(toolAnswers[1]!.content)).toMatchObject({
      error: { code: 'validation_error', field: 'text', status: 400 },
    });

    const stored = await memoriesOf('dana');
    expect(stored.map((m) => m.text)).toEqual(['Dana is vegetarian']);
    expect(stored[0]).toMatchObject({ tags: ['food'], importance: 0.8, source: 'ai-sdk', end_user_id: 'dana' });
    expect(await memoriesOf('erin')).toEqual([]);
  });

  it('streamText (SSE): the model searches, forgets and retags through streamed tool calls, then streams its answer', async () => {
    const keep = (await http.memories.add(
      { text: 'Dana flies to Lisbon in March', tags: ['travel'] },
      { endUserId: 'dana' },
    )) as Memory;
    const wrong = (await http.memories.add({ text: 'Dana flies economy only' }, { endUserId: 'dana' })) as Memory;
    llm.requests.length = 0;
    llm.script.push(
      { toolCalls: [{ name: 'searchMemories', arguments: { query: 'flights Lisbon', k: 5 } }] },
      {
        toolCalls: [
          { name: 'forgetMemory', arguments: { ids: [wrong.id] } },
          { id: 'call_2', name: 'updateMemory', arguments: { id: keep.id, tags: ['travel', 'lisbon'] } },
        ],
      },
      { content: 'Your Lisbon trip is in March; I forgot the economy note.' },
    );
    const result = streamText({
      model,
      tools: engramTools({ client: http, endUserId: 'dana' }),
      stopWhen: stepCountIs(4),
      prompt: 'When do I fly to Lisbon? And forget the economy thing.',
    });
    let streamed = '';
    for await (const piece of result.textStream) streamed += piece;
    expect(streamed).toBe('Your Lisbon trip is in March; I forgot the economy note.');
    expect(llm.requests.every((r) => r.body.stream === true)).toBe(true);
    expect(llm.requests).toHaveLength(3);

    const found = JSON.parse(llm.requests[1]!.body.messages.find((m) => m.role === 'tool')!.content) as {
      memories: Array<{ id: number; text: string }>;
    };
    expect(found.memories[0]).toMatchObject({ id: keep.id, text: 'Dana flies to Lisbon in March' });
    const texts = (await memoriesOf('dana')).map((m) => m.text);
    expect(texts).toContain('Dana flies to Lisbon in March');
    expect(texts).not.toContain('Dana flies economy only');
    expect((await http.memories.get(keep.id, { endUserId: 'dana' })).tags).toEqual(['travel', 'lisbon']);
  });

  it('withMemories composes the relevant memories into the system prompt the model receives', async () => {
    const composed = await composeMemories({ client: http, endUserId: 'dana', task: 'cook a vegetarian dinner' });
    expect(composed.prompt).toContain('Dana is vegetarian');
    expect(composed.memories.map((m) => m.text)).toEqual(['Dana is vegetarian']);

    llm.requests.length = 0;
    llm.script.push({ content: 'A mushroom risotto.' });
    const params = await withMemories(
      { model, system: 'You are a helpful cook.', prompt: 'What should I cook for dinner? I am vegetarian, remember.' },
      { client: http, endUserId: 'dana' },
    );
    const result = await generateText(params);
    expect(result.text).toBe('A mushroom risotto.');
    const system = llm.requests[0]!.body.messages.find((m) => m.role === 'system')!.content;
    expect(system).toMatch(/^You are a helpful cook\.\n\nWhat you know about the user/);
    expect(system).toMatch(/\[m:\d+\] \(\d{4}-\d{2}-\d{2}[^)]*\) Dana is vegetarian/);
    // Another end user's memories are not composed in.
    const erin = await withMemories(
      { model, prompt: 'What should I cook for dinner? I am vegetarian.' },
      { client: http, endUserId: 'erin' },
    );
    expect(erin.system).not.toContain('Dana');
  });
});
