import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../testing/harness.js';
import { until } from '../testing/until.js';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Every HTTP response in what a server wrote on one connection. */
function parseResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const headEnd = rest.indexOf('\r\n\r\n');
    const [statusLine, ...lines] = rest.slice(0, headEnd).split('\r\n');
    const headers = Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    );
    const length = Number(headers['content-length'] ?? 0);
    const body = rest.slice(headEnd + 4, headEnd + 4 + length);
    responses.push({ status: Number(statusLine!.split(' ')[1]), headers, body: JSON.parse(body) });
    rest = rest.slice(headEnd + 4 + length);
  }
  return responses;
}

forEachDialect('connections: parser errors, slow bodies and the per-client cap', (dialect) => {
  const t = useTestApp(dialect, { http: { requestTimeoutMs: 1_000, maxConnectionsPerClient: 4 } });
  let port = 0;
  beforeAll(async () => {
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as AddressInfo).port;
  });
  const sockets: Socket[] = [];
  afterAll(() => sockets.forEach((s) => s.destroy()));

  const open = () =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(socket));
      socket.once('error', reject);
      sockets.push(socket);
    });
  /** Sends raw bytes and collects everything the server writes until it closes the connection. */
  async function exchange(data: string, socket?: Socket): Promise<RawResponse[]> {
    const s = socket ?? (await open());
    let received = '';
    s.on('data', (chunk) => (received += chunk));
    const closed = new Promise((resolve) => s.once('close', resolve));
    s.write(data);
    await closed;
    return parseResponses(received);
  }
  const expectDocumentedError = (res: RawResponse | undefined, status: number, code: string) => {
    expect(res?.status).toBe(status);
    expect(res!.headers['content-type']).toMatch(/^application\/json/);
    expect(res!.body.error).toMatchObject({
      code,
      message: expect.any(String),
      request_id: res!.headers['x-request-id'],
    });
    expect(res!.headers['x-request-id']).toMatch(/^req_/);
  };
  const head = (lines: string[]) => `${lines.join('\r\n')}\r\n\r\n`;

  it('answers errors of the HTTP parser with the documented error body and X-Request-ID', async () => {
    const control = await exchange(head(['GET /healthz HTTP/1.1', 'Host: x', 'X-Bad: a\u0001b']));
    expectDocumentedError(control[0], 400, 'validation_error');
    expect(control[0]!.body.error.field).toBe('request');

    const huge = await exchange(head(['GET /healthz HTTP/1.1', 'Host: x', `X-Big: ${'x'.repeat(20_000)}`]));
    expectDocumentedError(huge[0], 431, 'headers_too_large');

    // A Content-Length shorter than the body: the rest is read as a (malformed) next request.
    const short = await exchange(
      `${head([
        'POST /memory/add HTTP/1.1',
        'Host: x',
        'Content-Type: application/json',
        'Content-Length: 5',
        `X-API-Key: ${t.key}`,
        `X-Project-ID: ${t.projectId}`,
        'X-End-User-ID: u',
      ])}{"text":"hello"}`,
    );
    // Node parses the leftover while the first request is still being handled and the connection closes,
    // so the first answer may be lost; whatever is answered has the documented body.
    expect(short.length).toBeGreaterThan(0);
    for (const res of short) expectDocumentedError(res, 400, 'validation_error');
  });

  it('times out a request whose body does not arrive (408) and closes the connection', async () => {
    const slow = await exchange(
      `${head([
        'POST /memory/add HTTP/1.1',
        'Host: x',
        'Content-Type: application/json',
        'Content-Length: 100',
        `X-API-Key: ${t.key}`,
        `X-Project-ID: ${t.projectId}`,
        'X-End-User-ID: u',
      ])}{"text":`,
    );
    expectDocumentedError(slow[0], 408, 'request_timeout');
  });

  it('caps the connections one client holds open: one over the cap is 429', async () => {
    const held = [await open(), await open(), await open(), await open()];
    const refused = await exchange(head(['GET /healthz HTTP/1.1', 'Host: x']));
    expectDocumentedError(refused[0], 429, 'rate_limited');
    expect(refused[0]!.headers['retry-after']).toBe('1');
    for (const s of held) s.destroy();
    // Served again once the server has seen them close (on a loaded machine, not within any fixed time).
    await until(
      async () => (await exchange(head(['GET /healthz HTTP/1.1', 'Host: x', 'Connection: close'])))[0]!.status === 200,
      'a request served after the held connections closed',
      5_000,
    );
  });
});
