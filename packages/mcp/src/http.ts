import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { ServiceClient } from '@engram/client';
import { createEngramMcpServer } from './tools.js';

/** Who an MCP exchange acts as: the caller's own key and scope, sent unchanged with every tool's request. */
export interface McpCaller {
  apiKey: string;
  projectId?: string;
  endUserId?: string;
  tenantId?: string;
}

export interface McpHttpSettings {
  /** Where the Engram server answers. */
  baseUrl: string;
  /** How the client reaches it (the Engram server's own /mcp passes an in-process fetch). */
  fetch?: typeof fetch;
}

/**
 * One stateless streamable-HTTP exchange (a POST of JSON-RPC messages, answered as JSON): a fresh MCP
 * server whose client carries the caller's key and scope, so every tool is exactly as allowed as the
 * caller's own HTTP requests are. `body` is the parsed POST body; `request` gives its headers
 * (Accept, Content-Type, MCP-Protocol-Version), which the SDK's transport checks.
 */
export async function answerMcp(
  request: Request,
  body: unknown,
  caller: McpCaller,
  settings: McpHttpSettings,
): Promise<Response> {
  const client = new ServiceClient({
    baseUrl: settings.baseUrl,
    apiKey: caller.apiKey,
    projectId: caller.projectId,
    endUserId: caller.endUserId,
    tenantId: caller.tenantId,
    ...(settings.fetch ? { fetch: settings.fetch } : {}),
    // The MCP client retries as it sees fit; a tool call answers at once.
    maxRetries: 0,
  });
  const server = createEngramMcpServer({ client, tenantId: caller.tenantId, endUserId: caller.endUserId });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    // JSON responses: the answer is whole when this resolves, so the server can close at once.
    return await transport.handleRequest(request, { parsedBody: body });
  } finally {
    await server.close();
  }
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** The caller's API key: X-API-Key, or Authorization: Bearer (what MCP clients' remote-server config sends). */
export function apiKeyOf(req: IncomingMessage): string | undefined {
  const bearer = /^Bearer\s+(\S+)$/i.exec(header(req, 'authorization') ?? '')?.[1];
  return header(req, 'x-api-key') ?? bearer;
}

const json = (status: number, body: unknown, extra: Record<string, string> = {}) =>
  [status, { 'content-type': 'application/json', ...extra }, JSON.stringify(body)] as const;

/** A standalone MCP endpoint at POST /mcp, in front of an Engram server (`engram-mcp --http`). */
export async function startMcpHttpServer(
  settings: McpHttpSettings & { port?: number; host?: string },
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const send = ([status, headers, text]: readonly [number, Record<string, string>, string]) =>
      void res.writeHead(status, headers).end(text);
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/mcp') return send(json(404, { error: { code: 'not_found', message: 'the MCP endpoint is /mcp' } }));
    // Stateless: no server-initiated stream (GET) and no session to end (DELETE).
    if (req.method !== 'POST')
      return send(
        json(405, { error: { code: 'method_not_allowed', message: 'stateless: only POST' } }, { allow: 'POST' }),
      );
    const apiKey = apiKeyOf(req);
    if (!apiKey)
      return send(
        json(401, {
          error: { code: 'unauthenticated', message: 'an API key is required (X-API-Key or Authorization: Bearer)' },
        }),
      );
    const chunks: Buffer[] = [];
    req
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return send(json(400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
        }
        const headers = new Headers();
        for (const name of ['accept', 'content-type', 'mcp-protocol-version'])
          if (header(req, name)) headers.set(name, header(req, name)!);
        const caller = {
          apiKey,
          projectId: header(req, 'x-project-id'),
          endUserId: header(req, 'x-end-user-id'),
          tenantId: header(req, 'x-tenant-id'),
        };
        answerMcp(new Request(`http://127.0.0.1${req.url}`, { method: 'POST', headers }), body, caller, settings)
          .then(
            async (answer) =>
              void res
                .writeHead(answer.status, Object.fromEntries(answer.headers))
                .end(Buffer.from(await answer.arrayBuffer())),
          )
          .catch(() =>
            send(json(500, { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } })),
          );
      });
  });
  await new Promise<void>((resolve) => server.listen(settings.port ?? 8765, settings.host ?? '127.0.0.1', resolve));
  const { address, port } = server.address() as AddressInfo;
  return { url: `http://${address}:${port}/mcp`, server, close: () => new Promise((r) => server.close(() => r())) };
}
