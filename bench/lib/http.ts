import http from 'node:http';

/**
 * A lean keep-alive JSON client for load generation: fetch costs the client more CPU per request
 * than the server spends on a small one, and client and server share this machine's cores.
 */
export function jsonClient(baseUrl: string, headers: Record<string, string>, sockets = 64) {
  const url = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  return function request(method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<{ status: number; body: string }> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: url.hostname, port: url.port, method, path, agent,
          headers: { ...headers, ...extra, ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  };
}
