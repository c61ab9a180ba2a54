import type { OutboundRequest, OutboundResponse } from '../../../core/outbound.js';
import { retryAfterMs as retryAfter, retryWaitMs, withRetries } from '../../../core/retry.js';
import type { SourceAccess } from './provider.js';

/**
 * Requests to a vendor API (Slack, Google, Granola) share one rate-limit rule: a 429 (or what
 * `limited` recognises, e.g. Google's 403 rateLimitExceeded) is retried after the Retry-After the
 * vendor sent (seconds or an HTTP date), else after an exponential backoff (core/retry.ts); a wait longer
 * than five minutes, or more than six answers, fails the sync instead (the next sync retries).
 * The wait is the caller's `pause`: a sync keeps its job lease and notices a cancel meanwhile.
 */

const POLICY = { maxAttempts: 6, baseMs: 1000, maxWaitMs: 5 * 60_000 };

export class RateLimited extends Error {}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** How long a rate-limited answer asks us to wait before retry `attempt` (from 0), in milliseconds. */
export function retryAfterMs(response: OutboundResponse, attempt: number): number {
  return retryWaitMs(POLICY, attempt, retryAfter(response.headers['retry-after']));
}

export async function vendorRequest(
  access: Pick<SourceAccess, 'fetch' | 'pause'>,
  url: URL,
  request: OutboundRequest = {},
  limited: (r: OutboundResponse) => boolean = () => false,
): Promise<OutboundResponse> {
  return withRetries({ ...POLICY, pause: (ms) => access.pause(ms) }, async (attempt) => {
    const response = await access.fetch(url, { maxRedirects: 0, ...request });
    if (response.status !== 429 && !limited(response)) return { ok: true, value: response };
    const wait = retryAfterMs(response, attempt);
    const error = new RateLimited(
      `${url.host} kept answering rate limited (asked to wait ${Math.round(wait / 1000)} s); the next sync continues`,
    );
    return { ok: false, error, retry: true, waitMs: wait };
  });
}

/** The JSON body of a vendor answer; a body that is not JSON is an error naming the status. */
export function jsonOf<T = any>(response: OutboundResponse, what: string): T {
  try {
    return JSON.parse(response.body.toString('utf8')) as T;
  } catch {
    throw new Error(`${what} answered ${response.status} without JSON`);
  }
}
