import type { OutboundRequest, OutboundResponse } from '../../../core/outbound.js';
import type { SourceAccess } from './provider.js';

/**
 * Requests to a vendor API (Slack, Google, Granola) share one rate-limit rule: a 429 (or what
 * `limited` recognises, e.g. Google's 403 rateLimitExceeded) is retried after the Retry-After the
 * vendor sent (seconds or an HTTP date), else after an exponential backoff; a wait longer than
 * MAX_WAIT_MS, or more than MAX_ATTEMPTS answers, fails the sync instead (the next sync retries).
 * The wait is the caller's `pause`: a sync keeps its job lease and notices a cancel meanwhile.
 */

const MAX_ATTEMPTS = 6;
const MAX_WAIT_MS = 5 * 60_000;

export class RateLimited extends Error {}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** How long a rate-limited answer asks us to wait, in milliseconds. */
export function retryAfterMs(response: OutboundResponse, attempt: number): number {
  const header = response.headers['retry-after'];
  if (header !== undefined) {
    const seconds = Number(header);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const date = Date.parse(header);
    if (!Number.isNaN(date)) return Math.max(0, date - Date.now());
  }
  return Math.min(MAX_WAIT_MS, 1000 * 2 ** attempt);
}

export async function vendorRequest(
  access: Pick<SourceAccess, 'fetch' | 'pause'>, url: URL, request: OutboundRequest = {}, limited: (r: OutboundResponse) => boolean = () => false,
): Promise<OutboundResponse> {
  for (let attempt = 0; ; attempt++) {
    const response = await access.fetch(url, { maxRedirects: 0, ...request });
    if (response.status !== 429 && !limited(response)) return response;
    const wait = retryAfterMs(response, attempt);
    if (attempt + 1 >= MAX_ATTEMPTS || wait > MAX_WAIT_MS) {
      throw new RateLimited(`${url.host} kept answering rate limited (asked to wait ${Math.round(wait / 1000)} s); the next sync continues`);
    }
    await access.pause(wait);
  }
}

/** The JSON body of a vendor answer; a body that is not JSON is an error naming the status. */
export function jsonOf<T = any>(response: OutboundResponse, what: string): T {
  try {
    return JSON.parse(response.body.toString('utf8')) as T;
  } catch {
    throw new Error(`${what} answered ${response.status} without JSON`);
  }
}
