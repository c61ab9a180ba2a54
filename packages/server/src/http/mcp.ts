import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { AppError, invalid } from '../core/errors.js';
import { scopeOf, type RouteAuth } from './auth.js';
import { singleHeader } from './headers.js';
import { checkJsonInput, useJsonParser } from './input.js';

/**
 * Any valid API key, with a project (its lock or X-Project-ID); X-End-User-ID and X-Tenant-ID are checked
 * against the key's bindings here, before any tool runs, and again by every operation a tool sends.
 */
export const MCP_AUTH: RouteAuth = { project: 'required', endUser: 'optional' };

/** The base of the in-process requests' URLs; never resolved, only its path is routed. */
const IN_PROCESS = 'http://engram.internal';

/**
 * A fetch that sends a tool's request through this app in process (Fastify's inject), as the MCP
 * caller: the same authentication, scope, limits (counted against the caller's address), idempotency,
 * audit and request log as the HTTP API. Each request's id is the /mcp request's, numbered.
 */
function inProcessFetch(app: FastifyInstance, outer: FastifyRequest): typeof fetch {
  let sent = 0;
  return async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    if (init?.body != null && typeof init.body !== 'string') throw new TypeError('MCP tools send JSON bodies only');
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const id = `${outer.id}:${++sent}`;
    const answer = await app.inject({
      method: (init?.method ?? 'GET') as 'GET',
      url: url.pathname + url.search,
      remoteAddress: outer.ip,
      headers: { ...headers, ...(id.length <= 128 ? { 'x-request-id': id } : {}) },
      ...(init?.body != null ? { payload: init.body } : {}),
    });
    const answerHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers))
      if (value !== undefined) answerHeaders.set(name, String(value));
    const empty = answer.statusCode === 204 || answer.statusCode === 304 || init?.method === 'HEAD';
    return new Response(empty ? null : answer.rawPayload, { status: answer.statusCode, headers: answerHeaders });
  };
}

/** The transport's refusal of an exchange (no MCP message was handled), as the error the API answers. */
function refusal(status: number, message: string): AppError {
  if (status === 415) return new AppError('unsupported_media_type', message, 'Content-Type');
  if (/Accept/.test(message)) return invalid('Accept', `${message} (the MCP streamable-HTTP transport)`);
  if (/protocol version/i.test(message)) return invalid('MCP-Protocol-Version', message);
  return invalid('body', message);
}

const FORWARDED = ['accept', 'content-type', 'mcp-protocol-version'];

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
/** A JSON-RPC message without its tool arguments (the input rule meets those in the operation a tool sends). */
const envelopeOf = (message: unknown) =>
  isObject(message) && isObject(message.params) && 'arguments' in message.params
    ? { ...message, params: { ...message.params, arguments: null } }
    : message;

/**
 * The MCP server (@engram/mcp) at POST /mcp: streamable HTTP, stateless (a fresh MCP server per request,
 * answered as JSON), behind API-key authentication. Every tool is an operation of this API sent in
 * process with the caller's key and resolved scope, so an end-user-bound key reaches no other end user.
 * Not in the OpenAPI document: one JSON-RPC endpoint, described by the MCP specification (docs/api.md).
 */
export const mcpRoutes: FastifyPluginAsync = async (app) => {
  // This plugin's own JSON parser: the one input rule for the JSON-RPC envelope, but not for a tool's arguments,
  // which reach the operation the tool sends and are refused there (a NUL in `text`: 400 naming `text`), as a
  // tool error the model can read and correct, as over stdio.
  useJsonParser(app, (value) => checkJsonInput(Array.isArray(value) ? value.map(envelopeOf) : envelopeOf(value)));
  app.post('/mcp', { schema: { hide: true }, config: { auth: MCP_AUTH } }, async (request, reply) => {
    const scope = scopeOf(request);
    const headers = new Headers();
    for (const name of FORWARDED) {
      const value = singleHeader(request, name);
      if (value !== undefined) headers.set(name, value);
    }
    const caller = {
      apiKey: singleHeader(request, 'x-api-key')!,
      projectId: scope.projectId,
      ...(scope.tenantId ? { tenantId: scope.tenantId } : {}),
      ...(scope.endUserId ? { endUserId: scope.endUserId } : {}),
    };
    // Loaded at the first exchange: the MCP SDK (and zod) are a fifth of what a start would load.
    const { answerMcp } = await import('@engram/mcp');
    const answer = await answerMcp(
      new Request(`${IN_PROCESS}/mcp`, { method: 'POST', headers }),
      request.body,
      caller,
      {
        baseUrl: IN_PROCESS,
        fetch: inProcessFetch(app, request),
      },
    );
    if (answer.status >= 400) {
      const refused = (await answer.json().catch(() => undefined)) as { error?: { message?: string } } | undefined;
      throw refusal(answer.status, refused?.error?.message ?? 'The MCP exchange was refused');
    }
    reply.status(answer.status);
    const type = answer.headers.get('content-type');
    if (type) reply.type(type);
    return reply.send(answer.status === 202 ? undefined : await answer.text());
  });
  // Stateless: no stream the server opens (GET) and no session to end (DELETE); MCP clients expect 405.
  const notAllowed = async () => {
    throw new AppError(
      'method_not_allowed',
      'The MCP endpoint is stateless: send JSON-RPC messages with POST',
      undefined,
      { Allow: 'POST' },
    );
  };
  app.get('/mcp', { schema: { hide: true } }, notAllowed);
  app.delete('/mcp', { schema: { hide: true } }, notAllowed);
};
