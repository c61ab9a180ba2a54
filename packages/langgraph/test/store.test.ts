import { END, MessagesAnnotation, START, StateGraph, type LangGraphRunnableConfig } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { SystemMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { ServiceClient, type Memory } from '@engram/client';
import { forEachDialect, useTestApp } from '../../server/src/testing/harness.js';
import { startFakeLlm, type FakeLlm } from '../../server/src/testing/fake-llm.js';
import { EngramStore } from '../src/index.js';

/** The README's example graph: recall memories into the prompt, let the model store new ones through a tool. */
function memoryAgent(model: ChatOpenAI) {
  const remember = tool(
    async ({ text, kind }, config: LangGraphRunnableConfig) => {
      const userId = config.configurable?.userId as string;
      await config.store!.put([userId, 'memories'], crypto.randomUUID(), { text, kind });
      return `Stored: ${text}`;
    },
    {
      name: 'remember',
      description: 'Store a lasting fact about the user.',
      schema: z.object({ text: z.string(), kind: z.string() }),
    },
  );
  const recall = async (state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) => {
    const userId = config.configurable?.userId as string;
    const question = String(state.messages.at(-1)!.content);
    const items = await config.store!.search([userId, 'memories'], { query: question, limit: 5 });
    const known = items.map((item) => `- ${item.value.text}`).join('\n') || '(nothing yet)';
    return { messages: [new SystemMessage(`What you know about the user:\n${known}`)] };
  };
  const agent = async (state: typeof MessagesAnnotation.State) => ({
    messages: [await model.bindTools([remember]).invoke(state.messages)],
  });
  return new StateGraph(MessagesAnnotation)
    .addNode('recall', recall)
    .addNode('agent', agent)
    .addNode('tools', new ToolNode([remember]))
    .addEdge(START, 'recall')
    .addEdge('recall', 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent');
}

forEachDialect('LangGraph BaseStore on a real Engram server', (dialect) => {
  const t = useTestApp(dialect);
  let llm: FakeLlm;
  let http: ServiceClient;
  let store: EngramStore;
  const memoriesOf = async (endUserId: string) =>
    (await http.memories.list({ limit: 100 }, { endUserId })).items as Memory[];
  beforeAll(async () => {
    const baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
    llm = await startFakeLlm();
    // A first query builds the end user's index: on a loaded machine that has taken over the default 30 s.
    http = new ServiceClient({ baseUrl, apiKey: t.key, projectId: t.projectId, timeoutMs: 120_000 });
    store = new EngramStore({ client: http });
  });
  afterAll(async () => llm?.close());

  it('an agent graph recalls through search and stores through put (a tool call of the model)', async () => {
    await store.put(['alice', 'memories'], 'seat', { text: 'Alice prefers window seats', kind: 'preference' });
    llm.script.push(
      { toolCalls: [{ name: 'remember', arguments: { text: 'Alice is allergic to peanuts', kind: 'health' } }] },
      { content: 'Noted: no peanuts, and a window seat.' },
    );
    const model = new ChatOpenAI({
      model: 'fake-model',
      apiKey: 'sk-test',
      configuration: { baseURL: llm.baseUrl },
      maxRetries: 0,
    });
    const graph = memoryAgent(model).compile({ store });
    const result = await graph.invoke(
      { messages: [{ role: 'user', content: 'I am allergic to peanuts. Which seat do I like?' }] },
      { configurable: { userId: 'alice' } },
    );
    expect(String(result.messages.at(-1)!.content)).toBe('Noted: no peanuts, and a window seat.');

    // The model saw the recalled memory and the tool; its second request carried the tool's answer.
    expect(llm.requests).toHaveLength(2);
    const first = llm.requests[0]!.body;
    expect(first.tools?.map((x) => x.function.name)).toEqual(['remember']);
    expect(first.messages.find((m) => m.role === 'system')?.content).toContain('Alice prefers window seats');
    const toolAnswer = llm.requests[1]!.body.messages.find((m) => m.role === 'tool');
    expect(toolAnswer).toMatchObject({ tool_call_id: 'call_1', content: 'Stored: Alice is allergic to peanuts' });

    // The memory the tool stored is alice's, in Engram, tagged by its namespace, its value the metadata.
    const stored = (await memoriesOf('alice')).find((m) => m.text === 'Alice is allergic to peanuts');
    expect(stored).toMatchObject({ tags: ['langgraph', 'ns1:memories'], source: 'langgraph', end_user_id: 'alice' });
    expect(stored!.metadata).toMatchObject({ kind: 'health', langgraph_namespace: ['memories'] });
    expect(await memoriesOf('bob')).toEqual([]);
  });

  it('put, get, search (query, filters, prefix), listNamespaces and delete map to memories', async () => {
    const ns = ['carol', 'prefs', 'food'];
    await store.put(ns, 'drink', { text: 'Carol drinks oat milk flat whites', rating: 4 });
    await store.put(ns, 'dish', { text: 'Carol loves spicy ramen', rating: 5 });
    await store.put(['carol', 'prefs', 'travel'], 'seat', { content: 'Carol books aisle seats', rating: 3 });
    await store.put(['carol', 'notes'], 'n1', { topic: 'birthday', day: 12 }, false);

    const dish = await store.get(ns, 'dish');
    expect(dish).toMatchObject({ namespace: ns, key: 'dish', value: { text: 'Carol loves spicy ramen', rating: 5 } });
    expect(dish!.createdAt).toBeInstanceOf(Date);
    expect(await store.get(ns, 'missing')).toBeNull();
    expect(await store.get(['dave', 'prefs', 'food'], 'dish')).toBeNull();

    // Same text: the value is updated in place (one memory); new text: the old memory is forgotten.
    await store.put(ns, 'dish', { text: 'Carol loves spicy ramen', rating: 2 });
    const before = (await memoriesOf('carol')).find((m) => m.text === 'Carol loves spicy ramen')!;
    expect(before.metadata).toMatchObject({ rating: 2 });
    await store.put(ns, 'dish', { text: 'Carol loves tonkotsu ramen', rating: 5 });
    const texts = (await memoriesOf('carol')).map((m) => m.text);
    expect(texts).toContain('Carol loves tonkotsu ramen');
    expect(texts).not.toContain('Carol loves spicy ramen');
    expect((await store.get(ns, 'dish'))!.createdAt).toEqual(dish!.createdAt);
    // The same text under another key is a second item (Engram would otherwise keep one memory).
    await store.put(ns, 'dish-copy', { text: 'Carol loves tonkotsu ramen' });
    expect((await store.get(ns, 'dish-copy'))!.value).toEqual({ text: 'Carol loves tonkotsu ramen' });
    await store.delete(ns, 'dish-copy');

    const ramen = await store.search(['carol'], { query: 'ramen' });
    expect(ramen.map((i) => i.key)).toEqual(['dish']);
    expect(ramen[0]!.score).toBeGreaterThan(0);
    expect((await store.search(['carol', 'prefs'], {})).map((i) => i.key).sort()).toEqual(['dish', 'drink', 'seat']);
    expect((await store.search(['carol', 'prefs', 'travel'])).map((i) => i.key)).toEqual(['seat']);
    expect((await store.search(['carol'], { filter: { rating: 5 } })).map((i) => i.key)).toEqual(['dish']);
    expect(
      (await store.search(['carol', 'prefs'], { filter: { rating: { $gte: 4 } } })).map((i) => i.key).sort(),
    ).toEqual(['dish', 'drink']);
    expect(
      (await store.search(['carol', 'prefs'], { filter: { rating: { $ne: 5 } }, limit: 1, offset: 1 })).length,
    ).toBe(1);
    expect(await store.search(['carol', 'prefs'], { query: 'ramen', filter: { rating: 4 } })).toEqual([]);

    expect(await store.listNamespaces({ prefix: ['carol'] })).toEqual([
      ['carol', 'notes'],
      ['carol', 'prefs', 'food'],
      ['carol', 'prefs', 'travel'],
    ]);
    expect(await store.listNamespaces({ prefix: ['carol'], maxDepth: 2 })).toEqual([
      ['carol', 'notes'],
      ['carol', 'prefs'],
    ]);
    expect(await store.listNamespaces({ suffix: ['food'] })).toEqual([['carol', 'prefs', 'food']]);
    expect(await store.listNamespaces({ prefix: ['*', 'memories'] })).toEqual([['alice', 'memories']]);

    await store.delete(ns, 'drink');
    expect(await store.get(ns, 'drink')).toBeNull();
    expect((await memoriesOf('carol')).map((m) => m.text)).not.toContain('Carol drinks oat milk flat whites');

    await expect(store.search([], { query: 'anything' })).rejects.toThrow(/starts with the end user/);
    await expect(store.put(['carol'], 'x', { langgraph_key: 'y' })).rejects.toThrow(/may not hold/);
    await expect(store.search(['carol'], { filter: { rating: { $regex: 'x' } } })).rejects.toThrow(
      /unsupported filter operator/,
    );
    // A value the server refuses (metadata over 16 KiB) is the client's ValidationError naming the field; nothing is stored.
    await expect(store.put(['carol'], 'big', { text: 'big', blob: 'x'.repeat(20_000) })).rejects.toMatchObject({
      status: 400,
      field: 'metadata',
    });
    expect(await store.get(['carol'], 'big')).toBeNull();
  });
});
