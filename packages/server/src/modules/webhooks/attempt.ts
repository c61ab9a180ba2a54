import { createHmac } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { checkAddress, OutboundRefused } from '../../core/outbound.js';
import { policyOf, type WebhookSettings } from './endpoints.js';

/** Response bodies are kept (and read) up to this many bytes; the rest is never read. */
export const RESPONSE_CAPTURE_BYTES = 2048;
/** Deliveries attempted at once by one process (the delivery loop's slots). */
export const CONCURRENCY = 64;

// Keep-alive pools (sockets are keyed by host and port, each connected to an address checked when it was
// opened), as large as the loop's concurrency, so a request never waits in a pool behind a slow receiver.
const httpAgent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
const httpsAgent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

/**
 * A lookup that answers `address`: the connection goes to the address checked, whatever a second resolution would
 * say. Made here, not beside the request, so that the keep-alive socket holding it keeps nothing of the request's
 * scope (the delivery's body, the receiver's answer: a forgotten memory's copies).
 */
function resolvingTo(address: string): LookupFunction {
  return (_hostname, options, callback) => {
    const family = isIP(address);
    if ((options as { all?: boolean }).all)
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
        { address, family },
      ]);
    else callback(null, address, family);
  };
}

/** Standard Webhooks: `v1,<base64 HMAC-SHA256 of id.timestamp.body>` under the secret's base64 key. */
export function sign(secret: string, messageId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestamp}.${body}`).digest('base64')}`;
}

export interface Outcome {
  statusCode: number | null;
  body: string | null;
  error: string | null;
  latencyMs: number;
}

/**
 * One attempt: the host is resolved and every address checked again (SSRF), and the socket goes
 * to the checked address; redirects are not followed (a 3xx fails); a 2xx within the deadline
 * succeeds; at most RESPONSE_CAPTURE_BYTES of the answer are read, then the connection is dropped.
 */
export async function attempt(
  settings: WebhookSettings,
  target: string,
  headers: Record<string, string>,
  body: string,
): Promise<Outcome> {
  const started = performance.now();
  const done = (statusCode: number | null, text: string | null, error: string | null): Outcome => ({
    statusCode,
    body: text,
    error,
    latencyMs: Math.round(performance.now() - started),
  });
  let url: URL;
  let address: string;
  try {
    url = new URL(target);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && settings.allowHttp))
      throw new OutboundRefused(`${url.protocol} receivers are not allowed`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
    if (addresses.length === 0) throw new OutboundRefused(`${host} does not resolve`);
    for (const a of addresses) checkAddress(policyOf(settings), host, a);
    address = addresses[0]!;
  } catch (error) {
    return done(null, null, error instanceof Error ? error.message : String(error));
  }
  return new Promise<Outcome>((resolve) => {
    let settled = false;
    // A connection whose answer was read to the end goes back to the keep-alive pool; any other is dropped.
    const finish = (outcome: Outcome, reusable = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (!reusable) req.destroy();
      resolve(outcome);
    };
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
        lookup: resolvingTo(address),
        agent: url.protocol === 'https:' ? httpsAgent : httpAgent,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const parts: Buffer[] = [];
        let size = 0;
        const complete = (reusable: boolean) =>
          finish(
            done(
              status,
              Buffer.concat(parts).subarray(0, RESPONSE_CAPTURE_BYTES).toString('utf8'),
              status >= 200 && status < 300 ? null : `HTTP ${status}`,
            ),
            reusable,
          );
        res.on('data', (chunk: Buffer) => {
          parts.push(chunk);
          size += chunk.length;
          if (size > RESPONSE_CAPTURE_BYTES) complete(false);
        });
        res.on('end', () => complete(true));
        res.on('error', () => complete(false));
      },
    );
    const deadline = setTimeout(
      () => finish(done(null, null, `no answer within ${settings.timeoutMs / 1000} s`)),
      settings.timeoutMs,
    );
    req.on('error', (error) => finish(done(null, null, error.message)));
    req.end(body);
  });
}
