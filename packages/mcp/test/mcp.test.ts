import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { beforeAll, expect, it } from 'vitest';
import { ServiceClient, EngramError } from '@engram/client';
import { createApiKey } from '../../server/src/modules/org/service.js';
import { forEachDialect, useTestApp } from '../../server/src/testing/harness.js';
import { CURRENT_FACTS_URI, startMcpHttpServer } from '../src/index.js';

const TOOLS = [
  'add_memory',
  'add_turn',
  'search_memories',
  'get_memory',
  'update_memory',
  'forget_memories',
  'list_recent_memories',
  'compose_context',
  'synthesize_answer',
  'entity_graph',
  'open_decisions',
  'resolve_decision',
];
const BIN = fileURLToPath(new URL('../bin/engram-mcp.mjs', import.meta.url));

type Call = (name: string, args?: Record<string, unknown>) => Promise<CallToolResult>;
const structured = (result: CallToolResult) => {
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  return result.structuredContent as Record<string, any>;
};
const errorOf = (result: CallToolResult) => {
  expect(result.isError).toBe(true);
  return JSON.parse((result.content[0] as { text: string }).text).error as {
    code: string;
    field?: string;
    status?: number;
  };
};

/** Every tool over one connection, each result checked against the server's state through the HTTP API. */
async function exerciseTools(client: Client, http: ServiceClient, endUser: string): Promise<void> {
  const call: Call = (name, args = {}) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
  const listed = await client.listTools();
  expect(listed.tools.map((t) => t.name).sort()).toEqual([...TOOLS].sort());
  for (const t of listed.tools) {
    expect(t.description!.length).toBeGreaterThan(40);
    expect(t.inputSchema.type).toBe('object');
    expect(t.outputSchema?.type).toBe('object');
  }

  const added = structured(
    await call('add_memory', {
      text: `${endUser} prefers window seats on long flights`,
      tags: ['travel'],
      importance: 0.7,
    }),
  );
  expect(added.status).toBe('created');
  const id = added.memory_id as number;
  expect(await http.memories.get(id)).toMatchObject({
    text: `${endUser} prefers window seats on long flights`,
    tags: ['travel'],
    end_user_id: endUser,
  });
  structured(await call('add_memory', { text: `${endUser} is allergic to peanuts`, tags: ['health'] }));

  const found = structured(await call('search_memories', { query: 'seat on a flight', k: 1, tags: ['travel'] }));
  expect(found.memories).toHaveLength(1);
  expect(found.memories[0].id).toBe(id);
  const none = structured(await call('search_memories', { query: 'seat on a flight', tags: ['nothing-tagged-so'] }));
  expect(none.memories).toEqual([]);

  expect(structured(await call('get_memory', { id })).memory).toMatchObject({ id, tags: ['travel'] });
  structured(
    await call('update_memory', { id, tags: ['travel', 'flights'], metadata: { airline: 'TAP' }, importance: 0.9 }),
  );
  expect(await http.memories.get(id)).toMatchObject({
    tags: ['travel', 'flights'],
    metadata: { airline: 'TAP' },
    importance: 0.9,
  });

  const recent = structured(await call('list_recent_memories', { limit: 1 }));
  expect(recent.memories.map((m: { text: string }) => m.text)).toEqual([`${endUser} is allergic to peanuts`]);

  const composed = structured(await call('compose_context', { task: 'book a flight' }));
  expect(composed.prompt).toContain('window seats');
  const answer = structured(
    await call('synthesize_answer', { question: 'Which seat does the user prefer on flights?' }),
  );
  expect(answer.citations.length + (answer.found ? 0 : 1)).toBeGreaterThan(0);

  // A contradiction, found offline: the graph shows it, a decision is opened and resolved.
  structured(await call('add_memory', { text: 'I live in Paris.' }));
  const berlin = structured(await call('add_memory', { text: 'I moved to Berlin last May.' })).memory_id as number;
  const graph = structured(await call('entity_graph', { entity: 'Berlin' }));
  expect(JSON.stringify(graph.nodes)).toContain('Berlin');
  const open = structured(await call('open_decisions', {}));
  expect(open.total).toBeGreaterThan(0);
  const decision = open.items[0] as { id: number };
  expect(
    structured(await call('resolve_decision', { id: decision.id, resolution: 'keep_one', memory_id: berlin })).status,
  ).toBe('resolved');
  expect((await http.intelligence.decisions({ status: 'open' } as never)).total).toBe(open.total - 1);
  // The profile resource: what is true now (Berlin), not what a later statement ended (Paris).
  expect((await client.listResources()).resources.map((r) => r.uri)).toEqual([CURRENT_FACTS_URI]);
  const read = await client.readResource({ uri: CURRENT_FACTS_URI });
  const facts = JSON.parse((read.contents[0] as { text: string }).text).facts as Array<{
    relation: string;
    object: string;
    memory_ids: number[];
  }>;
  expect(facts.filter((f) => f.relation === 'lives_in').map((f) => [f.object, f.memory_ids])).toEqual([
    ['Berlin', [berlin]],
  ]);

  // Errors are tool errors with the server's code and field, and the connection goes on.
  expect(errorOf(await call('get_memory', { id: 99_999_999 }))).toMatchObject({ code: 'not_found', status: 404 });
  expect(errorOf(await call('update_memory', { id, metadata: { bad: 'x'.repeat(200_000) } })).status).toBe(400);
  expect(errorOf(await call('add_memory', { text: 'NUL \u0000 in text' }))).toMatchObject({
    code: 'validation_error',
    field: 'text',
  });
  // Arguments outside a tool's input schema are refused by the SDK before any request, as tool errors naming the field.
  for (const [name, args, field] of [
    ['add_memory', { text: 42 }, 'text'],
    ['search_memories', {}, 'query'],
    ['resolve_decision', { id: 1, resolution: 'maybe' }, 'resolution'],
  ] as const) {
    const result = (await call(name, args)) as CallToolResult;
    expect(result.isError).toBe(true);
    expect((result.content[0] as { text: string }).text).toMatch(new RegExp(`Input validation error[\\s\\S]*${field}`));
  }
  expect((await http.memories.get(id)).tags).toEqual(['travel', 'flights']);

  expect(structured(await call('forget_memories', { ids: [id] })).forgotten).toEqual([id]);
  const gone = await http.memories.get(id).then(
    () => null,
    (e: unknown) => e,
  );
  expect(gone).toBeInstanceOf(EngramError);
  expect((gone as EngramError).status).toBe(404);
}

forEachDialect('MCP server against a real Engram server', (dialect) => {
  const t = useTestApp(dialect);
  let baseUrl: string;
  beforeAll(async () => {
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  });

  it('stdio (`engram-mcp`): lists and calls every tool; a turn needs a tenant, then lands in it', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN],
      stderr: 'pipe',
      env: {
        PATH: process.env.PATH ?? '',
        ENGRAM_URL: baseUrl,
        ENGRAM_API_KEY: t.key,
        ENGRAM_PROJECT_ID: t.projectId,
        ENGRAM_END_USER_ID: 'alice',
      },
    });
    const client = new Client({ name: 'engram-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const http = new ServiceClient({ baseUrl, apiKey: t.key, projectId: t.projectId, endUserId: 'alice' });
      await exerciseTools(client, http, 'alice');
      expect(
        errorOf(
          (await client.callTool({
            name: 'add_turn',
            arguments: { text: 'hello', speaker: 'user' },
          })) as CallToolResult,
        ),
      ).toMatchObject({ code: 'validation_error', field: 'tenant_id' });
    } finally {
      await client.close();
    }
  });

  it("streamable HTTP (standalone): every tool, the caller's own key; an end-user-bound key reaches no other end user", async () => {
    const mcp = await startMcpHttpServer({ baseUrl, port: 0 });
    const connect = async (headers: Record<string, string>) => {
      const client = new Client({ name: 'engram-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(mcp.url), { requestInit: { headers } }));
      return client;
    };
    try {
      const scope = { 'x-project-id': t.projectId, 'x-end-user-id': 'bob', 'x-tenant-id': 'acme' };
      const bob = await connect({ authorization: `Bearer ${t.key}`, ...scope });
      const http = new ServiceClient({
        baseUrl,
        apiKey: t.key,
        projectId: t.projectId,
        endUserId: 'bob',
        tenantId: 'acme',
      });
      await exerciseTools(bob, http, 'bob');
      const turn = structured(
        (await bob.callTool({
          name: 'add_turn',
          arguments: { text: 'I just adopted a cat named Miso.', speaker: 'user' },
        })) as CallToolResult,
      );
      expect(turn).toMatchObject({ tenant_id: 'acme', user_id: 'bob' });
      const bobsMemory = structured(
        (await bob.callTool({
          name: 'add_memory',
          arguments: { text: 'Bob keeps his passport in the desk' },
        })) as CallToolResult,
      ).memory_id as number;
      await bob.close();

      const aliceKey = (
        await createApiKey(t.database.db, {
          organizationId: t.organizationId,
          projectId: t.projectId,
          name: 'alice only',
          endUserId: 'alice',
          tenantId: 'acme',
        })
      ).key;
      // Bound to alice, asking for bob: refused by the server, as a tool error.
      const asBob = await connect({ 'x-api-key': aliceKey, ...scope });
      const refused = errorOf(
        (await asBob.callTool({ name: 'search_memories', arguments: { query: 'passport' } })) as CallToolResult,
      );
      expect([403, 404]).toContain(refused.status);
      await asBob.close();
      // Bound to alice, in alice's scope: bob's memory is not there, by id or by search.
      const alice = await connect({ 'x-api-key': aliceKey, 'x-end-user-id': 'alice', 'x-tenant-id': 'acme' });
      expect(
        errorOf((await alice.callTool({ name: 'get_memory', arguments: { id: bobsMemory } })) as CallToolResult).code,
      ).toBe('not_found');
      expect(
        structured(
          (await alice.callTool({ name: 'forget_memories', arguments: { ids: [bobsMemory] } })) as CallToolResult,
        ).forgotten,
      ).toEqual([]);
      expect(
        JSON.stringify(
          structured(
            (await alice.callTool({ name: 'search_memories', arguments: { query: 'passport' } })) as CallToolResult,
          ),
        ),
      ).not.toContain('passport');
      await alice.close();
      expect(await http.memories.get(bobsMemory)).toMatchObject({ text: 'Bob keeps his passport in the desk' });

      // No key: refused before any MCP exchange.
      const anonymous = await fetch(mcp.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(anonymous.status).toBe(401);
    } finally {
      await mcp.close();
    }
  });

  it('streamable HTTP on the Engram server itself (POST /mcp behind X-API-Key): every tool; a bound key reaches no other end user', async () => {
    const url = new URL(`${baseUrl}/mcp`);
    const connect = async (headers: Record<string, string>) => {
      const client = new Client({ name: 'engram-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
      return client;
    };
    const carol = await connect({
      'x-api-key': t.key,
      'x-project-id': t.projectId,
      'x-end-user-id': 'carol',
      'x-tenant-id': 'acme',
    });
    const http = new ServiceClient({
      baseUrl,
      apiKey: t.key,
      projectId: t.projectId,
      endUserId: 'carol',
      tenantId: 'acme',
    });
    await exerciseTools(carol, http, 'carol');
    const turn = structured(
      (await carol.callTool({
        name: 'add_turn',
        arguments: { text: 'I just adopted a cat named Miso.', speaker: 'user' },
      })) as CallToolResult,
    );
    expect(turn).toMatchObject({ tenant_id: 'acme', user_id: 'carol' });
    const page = (await http.v1.memories({ tenant_id: 'acme', user_id: 'carol' } as never)) as { items: unknown[] };
    expect(page.items.length).toBeGreaterThan(0);
    const carolsMemory = structured(
      (await carol.callTool({
        name: 'add_memory',
        arguments: { text: 'Carol keeps her passport in the desk' },
      })) as CallToolResult,
    ).memory_id as number;
    await carol.close();

    // Bound to dave, asking for carol: refused by the server's authentication, before any MCP message is handled.
    const daveKey = (
      await createApiKey(t.database.db, {
        organizationId: t.organizationId,
        projectId: t.projectId,
        name: 'dave only',
        endUserId: 'dave',
        tenantId: 'acme',
      })
    ).key;
    const refused = await connect({ 'x-api-key': daveKey, 'x-end-user-id': 'carol' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(String(refused)).toMatch(/"code":"not_found"/);
    // Bound to dave, no end user named: dave's scope; carol's memory is not there by id, by search or by forgetting.
    const dave = await connect({ 'x-api-key': daveKey });
    expect(
      errorOf((await dave.callTool({ name: 'get_memory', arguments: { id: carolsMemory } })) as CallToolResult),
    ).toMatchObject({ code: 'not_found', status: 404 });
    expect(
      structured(
        (await dave.callTool({ name: 'forget_memories', arguments: { ids: [carolsMemory] } })) as CallToolResult,
      ).forgotten,
    ).toEqual([]);
    expect(
      JSON.stringify(
        structured(
          (await dave.callTool({ name: 'search_memories', arguments: { query: 'passport' } })) as CallToolResult,
        ),
      ),
    ).not.toContain('passport');
    expect(
      structured((await dave.callTool({ name: 'add_memory', arguments: { text: 'Dave likes tea' } })) as CallToolResult)
        .memory.end_user_id,
    ).toBe('dave');
    await dave.close();
    expect(await http.memories.get(carolsMemory)).toMatchObject({ text: 'Carol keeps her passport in the desk' });

    // A read-only key: reads work, a write is a tool error carrying the server's 403.
    const readOnly = (
      await createApiKey(t.database.db, {
        organizationId: t.organizationId,
        projectId: t.projectId,
        name: 'reader',
        scopes: ['memories:read'],
      })
    ).key;
    const reader = await connect({ 'x-api-key': readOnly, 'x-end-user-id': 'carol', 'x-tenant-id': 'acme' });
    expect(
      structured((await reader.callTool({ name: 'get_memory', arguments: { id: carolsMemory } })) as CallToolResult)
        .memory.id,
    ).toBe(carolsMemory);
    expect(
      errorOf(
        (await reader.callTool({ name: 'forget_memories', arguments: { ids: [carolsMemory] } })) as CallToolResult,
      ),
    ).toMatchObject({ code: 'forbidden', status: 403 });
    await reader.close();
    expect(await http.memories.get(carolsMemory)).toMatchObject({ id: carolsMemory });

    // Refusals of the exchange itself are the API's error bodies: no key, a bearer token, GET (stateless: no stream).
    const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const post = (headers: Record<string, string>) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: initialize,
      });
    for (const [headers, status, code] of [
      [{}, 401, 'unauthenticated'],
      [{ authorization: `Bearer ${t.key}` }, 401, 'unauthenticated'],
      [{ 'x-api-key': t.key, accept: 'application/json' }, 400, 'validation_error'],
    ] as const) {
      const res = await post(headers);
      expect(res.status).toBe(status);
      expect(((await res.json()) as { error: unknown }).error).toMatchObject({
        code,
        request_id: res.headers.get('x-request-id'),
      });
    }
    const get = await fetch(url, { headers: { 'x-api-key': t.key, accept: 'text/event-stream' } });
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
  });
});
