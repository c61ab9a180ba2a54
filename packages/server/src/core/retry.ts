/**
 * One retry rule for calls to outside providers (the chat model, connector vendors): retry what the
 * attempt says may be retried, after the wait the provider asked for (Retry-After) or an exponential
 * backoff; a wait longer than `maxWaitMs`, or a last attempt, fails with the attempt's error instead.
 */

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** The first backoff, doubled per retry (capped at maxWaitMs). */
  baseMs: number;
  /** The longest wait between attempts; a provider asking for more fails the call at once. */
  maxWaitMs: number;
  /** How to wait (a connector sync keeps its job lease meanwhile); a timer by default. */
  pause?: (ms: number) => Promise<void>;
}

export type Attempted<T> =
  | { ok: true; value: T }
  | { ok: false; error: Error; retry: boolean; waitMs?: number | undefined };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Milliseconds a Retry-After value asks for (seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The wait before retry `retry` (0 for the first): what the provider asked for, else exponential backoff. */
export function retryWaitMs(
  policy: Pick<RetryPolicy, 'baseMs' | 'maxWaitMs'>,
  retry: number,
  askedMs?: number,
): number {
  return askedMs ?? Math.min(policy.maxWaitMs, policy.baseMs * 2 ** retry);
}

/** Runs `attempt` (given its number, from 0) until it succeeds or fails in a way the policy does not retry. */
export async function withRetries<T>(policy: RetryPolicy, attempt: (n: number) => Promise<Attempted<T>>): Promise<T> {
  for (let n = 0; ; n++) {
    const outcome = await attempt(n);
    if (outcome.ok) return outcome.value;
    const wait = retryWaitMs(policy, n, outcome.waitMs);
    if (!outcome.retry || n + 1 >= policy.maxAttempts || wait > policy.maxWaitMs) throw outcome.error;
    await (policy.pause ?? sleep)(wait);
  }
}
