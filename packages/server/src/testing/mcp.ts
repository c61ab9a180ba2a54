import type { TestApp, Response } from './harness.js';
import { marker, placeHeaders, type Credential, type Place, type World } from './probe-places.js';
import { landing } from './probe-targets.js';

/**
 * The MCP tools served at POST /mcp (packages/mcp), as the probes call them: the HTTP operation each
 * tool sends (whose declaration in testing/operations.ts says who may do what, where) and a
 * well-formed call aimed at a place. The authorization matrix and the fuzz test take their MCP cells
 * from here; a tool the endpoint lists without an entry here fails both.
 */
export interface McpToolDeclaration {
  /** The operation the tool sends, a key of DECLARATIONS. */
  operation: string;
  /** Scope headers of the /mcp request and the tool's arguments, aimed at `place`. */
  build: (
    w: World,
    place: Place,
    c: Credential,
  ) => Promise<{ headers: Record<string, string>; args: Record<string, unknown> }>;
}

let serial = 0;
const inPlace =
  (args: (place: Place) => Record<string, unknown>) => async (_w: World, place: Place, c: Credential) => ({
    headers: placeHeaders(place),
    args: args(landing(place, c)),
  });
/** Aimed at a place by its scope headers, with a memory of the place there to be found (or not). */
const overPlace = (args: Record<string, unknown>) => async (w: World, place: Place) => (
  await w.memory(place), { headers: placeHeaders(place), args }
);
/** Aimed at a memory of the place by id, from the own scope. */
const onMemory =
  (args: Record<string, unknown> = {}) =>
  async (w: World, place: Place) => ({ headers: placeHeaders('own'), args: { id: await w.memory(place), ...args } });

export const MCP_TOOLS: Record<string, McpToolDeclaration> = {
  add_memory: {
    operation: 'POST /memory/add',
    build: inPlace((p) => ({ text: `${marker(p)} added over MCP ${serial++}` })),
  },
  add_turn: {
    operation: 'POST /v1/memory/add_turn',
    build: inPlace((p) => ({ text: `${marker(p)} said over MCP ${serial++}`, speaker: 'user' })),
  },
  search_memories: { operation: 'POST /memory/query', build: overPlace({ query: 'fact', k: 5 }) },
  get_memory: { operation: 'GET /memory/{memory_id}', build: onMemory() },
  update_memory: { operation: 'PATCH /memory/{memory_id}', build: onMemory({ importance: 0.8 }) },
  forget_memories: {
    operation: 'DELETE /memory/forget',
    build: async (w, place) => ({ headers: placeHeaders('own'), args: { ids: [await w.memory(place)] } }),
  },
  list_recent_memories: { operation: 'GET /memory', build: overPlace({ limit: 5 }) },
  compose_context: { operation: 'POST /memory/compose', build: overPlace({ task: 'fact' }) },
  synthesize_answer: { operation: 'POST /memory/synthesize', build: overPlace({ question: 'which fact?' }) },
  entity_graph: { operation: 'GET /memory/graph', build: overPlace({ entity: 'probe' }) },
  open_decisions: { operation: 'GET /memory/decisions', build: overPlace({}) },
  // No conflict exists in the fixtures: a permitted call finds none (404), as the operation's declaration says.
  resolve_decision: {
    operation: 'POST /memory/decision/{decision_id}/resolve',
    build: async () => ({ headers: placeHeaders('own'), args: { id: 1, resolution: 'dismiss' } }),
  },
};

/** What an MCP client sends with every POST (the streamable-HTTP transport requires both types). */
export const MCP_HEADERS = { accept: 'application/json, text/event-stream' } as const;

/** One JSON-RPC request to POST /mcp, with exactly `headers` (credential and scope). */
export function mcpRequest(
  t: TestApp,
  headers: Record<string, string | string[]>,
  method: string,
  params: unknown,
): Promise<Response> {
  return t.call('POST', '/mcp', {
    key: null,
    project: null,
    endUser: null,
    headers: { ...MCP_HEADERS, ...headers },
    body: { jsonrpc: '2.0', id: ++serial, method, ...(params !== undefined ? { params } : {}) },
  });
}

export interface ToolAnswer {
  /** The result of tools/call, when the exchange was answered with one. */
  result?: { isError?: boolean; content: Array<{ type: string; text: string }>; structuredContent?: unknown };
  /** A JSON-RPC error of the exchange. */
  rpcError?: { code: number; message: string };
  /** The tool error's body (the operation's error, or the SDK's refusal of the arguments as text). */
  error?: { code?: string; status?: number; field?: string; message?: string } | string;
}

/** The MCP answer in an HTTP answer to POST /mcp. */
export function toolAnswer(res: { body: unknown }): ToolAnswer {
  const body = res.body as { result?: ToolAnswer['result']; error?: ToolAnswer['rpcError'] } | undefined;
  if (body?.error) return { rpcError: body.error };
  const result = body?.result;
  if (!result?.isError) return { ...(result ? { result } : {}) };
  const text = result.content?.[0]?.text ?? '';
  let error: ToolAnswer['error'];
  try {
    error = (JSON.parse(text) as { error: ToolAnswer['error'] }).error;
  } catch {
    error = text;
  }
  return { result, error };
}
