import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ServiceClient } from '@engram/client';
import { createEngramMcpServer } from './tools.js';

export interface McpHttpSettings {
  /** Where the Engram server answers. */
  baseUrl: string;
  /** How the client reaches it (the Engram server's own mount passes its in-process fetch). */
  fetch?: typeof fetch;
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** The caller's API key: X-API-Key, or Authorization: Bearer (what MCP clients' config sends). */
export function apiKeyOf(req: IncomingMessage): string | undefined {
  const bearer = /^Bearer\s+(\S+)$/i.exec(header(req, 'authorization') ?? '')?.[1];
  return header(req, 'x-api-key') ?? bearer;
}

/**
 * One stateless streamable-HTTP exchange: a fresh MCP server whose client carries the caller's own
 * key and scope headers, so every tool is exactly as allowed as the caller's HTTP requests are.
 */
export async function handleMcpRequest(req: IncomingMessage, res: ServerResponse, body: unknown, settings: McpHttpSettings): Promise<void> {
  const apiKey = apiKeyOf(req);
  if (!apiKey) {
    res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'unauthorized', message: 'an API key is required (X-API-Key or Authorization: Bearer)' } }));
    return;
  }
  const tenantId = header(req, 'x-tenant-id');
  const endUserId = header(req, 'x-end-user-id');
  const client = new ServiceClient({
    baseUrl: settings.baseUrl, apiKey, projectId: header(req, 'x-project-id'), endUserId, tenantId,
    ...(settings.fetch ? { fetch: settings.fetch } : {}),
    // The MCP client retries as it sees fit; a tool call answers at once.
    maxRetries: 0,
  });
  const server = createEngramMcpServer({ client, tenantId, endUserId });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

/** A standalone MCP endpoint at POST /mcp, in front of an Engram server. */
export async function startMcpHttpServer(settings: McpHttpSettings & { port?: number; host?: string }): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/mcp') return void res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'not_found', message: 'the MCP endpoint is /mcp' } }));
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST', 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'method_not_allowed', message: 'stateless: only POST' } }));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
      }
      handleMcpRequest(req, res, body, settings).catch(() => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(settings.port ?? 8765, settings.host ?? '127.0.0.1', resolve));
  const { address, port } = server.address() as AddressInfo;
  return { url: `http://${address}:${port}/mcp`, server, close: () => new Promise((r) => server.close(() => r())) };
}
