import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A vendor's API on loopback for the connector fakes (fake-slack.ts, ...). It imports nothing of the
 * server, so other packages' tests (the console's) can start the same fakes.
 */

export interface VendorRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  /** The body as a form (application/x-www-form-urlencoded, as OAuth token requests send it). */
  form: URLSearchParams;
}
export interface VendorAnswer {
  status?: number;
  headers?: Record<string, string>;
  json?: unknown;
  body?: string | Buffer;
}
export interface LocalVendor {
  base: string;
  requests: VendorRequest[];
  close(): Promise<void>;
}

/** A vendor API on 127.0.0.1: `handle` answers each request the way the vendor's documentation says it does. */
export async function startVendor(
  handle: (request: VendorRequest) => VendorAnswer | Promise<VendorAnswer>,
): Promise<LocalVendor> {
  const requests: VendorRequest[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://vendor');
      const request = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        form: new URLSearchParams(Buffer.concat(parts).toString('utf8')),
      };
      requests.push(request);
      void Promise.resolve(handle(request)).then(
        (answer) => {
          const body = answer.json !== undefined ? JSON.stringify(answer.json) : (answer.body ?? '');
          res.writeHead(answer.status ?? 200, {
            'content-type': answer.json !== undefined ? 'application/json; charset=utf-8' : 'text/plain',
            ...answer.headers,
          });
          res.end(body);
        },
        (error: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(error));
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
