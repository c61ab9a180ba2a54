import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { Gather } from './grouped-statements.js';

/**
 * When a grouped insert's next statement waits for the writers its last one answered (Gather): the
 * statements themselves are exercised over HTTP on both databases (memories/grouped-add.test.ts).
 * The clock is vitest's: a busy machine (CI) must not decide what these timings show.
 */
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

it('joins two small halves when their writers return faster than a statement takes, for no longer than it took', () => {
  const flushed: number[] = [];
  const gather = new Gather(() => flushed.push(performance.now()));
  const started = performance.now();
  vi.advanceTimersByTime(3);
  gather.answered(4, 4, started);
  for (let i = 0; i < 4; i++) gather.arrived();
  // The four answered came back at once: the next statement waits for as many as the two halves held.
  expect([gather.holds(0), gather.holds(4), gather.holds(7)]).toEqual([true, true, true]);
  expect(gather.holds(8)).toBe(false);
  const waitFrom = performance.now();
  vi.advanceTimersByTime(2);
  expect(flushed).toHaveLength(0);
  vi.advanceTimersByTime(1);
  // The wait ended with the time the last statement took (3 ms), and the writes waiting then were sent.
  expect(flushed).toEqual([waitFrom + 3]);
  expect(gather.holds(4)).toBe(false);
});

it('does not wait for writers slower to return than a statement, nor to join halves past eight writes', () => {
  const slow = new Gather(() => {});
  let started = performance.now();
  vi.advanceTimersByTime(1);
  slow.answered(4, 4, started);
  vi.advanceTimersByTime(5);
  for (let i = 0; i < 4; i++) slow.arrived();
  started = performance.now();
  vi.advanceTimersByTime(1);
  slow.answered(4, 4, started);
  expect(slow.holds(4)).toBe(false);

  const large = new Gather(() => {});
  started = performance.now();
  vi.advanceTimersByTime(3);
  large.answered(8, 8, started);
  for (let i = 0; i < 8; i++) large.arrived();
  expect(large.holds(8)).toBe(false);

  // Nothing measured yet (a first statement): nothing waits.
  const fresh = new Gather(() => {});
  started = performance.now();
  vi.advanceTimersByTime(3);
  fresh.answered(2, 2, started);
  expect(fresh.holds(1)).toBe(false);
});
