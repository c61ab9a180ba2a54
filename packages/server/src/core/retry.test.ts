import { describe, expect, it } from 'vitest';
import { retryAfterMs, retryWaitMs, withRetries, type Attempted } from './retry.js';

describe('withRetries', () => {
  const policy = (waits: number[]) => ({
    maxAttempts: 4,
    baseMs: 100,
    maxWaitMs: 1000,
    pause: async (ms: number) => void waits.push(ms),
  });
  const failing = (retry: boolean, waitMs?: number): Attempted<string> => ({
    ok: false,
    error: new Error(`failed ${retry}`),
    retry,
    waitMs,
  });

  it('retries after the asked wait, else an exponential backoff, until an attempt succeeds', async () => {
    const waits: number[] = [];
    const answers = [failing(true), failing(true, 700), failing(true), { ok: true as const, value: 'done' }];
    expect(await withRetries(policy(waits), async (n) => answers[n]!)).toBe('done');
    expect(waits).toEqual([100, 700, 400]);
  });

  it("fails with the attempt's error on a last attempt, an error not to retry, or a wait past maxWaitMs", async () => {
    let waits: number[] = [];
    let attempts = 0;
    await expect(withRetries(policy(waits), async () => (attempts++, failing(true)))).rejects.toThrow('failed true');
    expect([attempts, waits]).toEqual([4, [100, 200, 400]]);
    waits = [];
    await expect(withRetries(policy(waits), async () => failing(false))).rejects.toThrow('failed false');
    await expect(withRetries(policy(waits), async () => failing(true, 20_000))).rejects.toThrow('failed true');
    expect(waits).toEqual([]);
  });
});

it('reads Retry-After as seconds or an HTTP date, and caps the backoff', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  expect(retryAfterMs('2', now)).toBe(2000);
  expect(retryAfterMs('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5000);
  expect([retryAfterMs(undefined), retryAfterMs(''), retryAfterMs('soon')]).toEqual([undefined, undefined, undefined]);
  expect([
    retryWaitMs({ baseMs: 1000, maxWaitMs: 5000 }, 10),
    retryWaitMs({ baseMs: 1000, maxWaitMs: 5000 }, 10, 60_000),
  ]).toEqual([5000, 60_000]);
});
