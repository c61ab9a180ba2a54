/**
 * The ceiling of webhook delivery (bench/webhooks.ts): a bare keep-alive POST loop, in a process of
 * its own as the server is, through node:http with a keep-alive agent of as many sockets as the
 * delivery loop's concurrency, posting a body of the same size to the same receiver. Prints
 * `{"per_second": N}`.
 *
 *   node --import tsx bench/lib/post-loop.ts URL REQUESTS CONCURRENCY BODY_BYTES
 */
import http from 'node:http';

const [url, requests, concurrency, bodyBytes] = process.argv.slice(2) as [string, string, string, string];
const total = Number(requests);
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(concurrency) });
const body = JSON.stringify({ type: 'memory.created', data: 'x'.repeat(Math.max(0, Number(bodyBytes) - 40)) });
const post = () =>
  new Promise<void>((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode! < 300 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
let next = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (next++ < total) await post();
  }),
);
console.log(JSON.stringify({ per_second: Math.round(total / ((performance.now() - started) / 1000)) }));
agent.destroy();
