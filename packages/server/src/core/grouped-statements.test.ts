import { expect, it } from 'vitest';
import { Gather } from './grouped-statements.js';

/**
 * When a grouped insert's next statement waits for the writers its last one answered (Gather): the
 * statements themselves are exercised over HTTP on both databases (memories/grouped-add.test.ts).
 */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('joins two small halves when their writers return faster than a statement takes, for no longer than it took', async () => {
  const flushed: number[] = [];
  const gather = new Gather(() => flushed.push(performance.now()));
  gather.answered(4, 4, performance.now() - 3);
  for (let i = 0; i < 4; i++) gather.arrived();
  // The four answered came back at once: the next statement waits for as many as the two halves held.
  expect([gather.holds(0), gather.holds(4), gather.holds(7)]).toEqual([true, true, true]);
  expect(gather.holds(8)).toBe(false);
  const start = performance.now();
  await pause(10);
  // The wait ended with the time the last statement took (3 ms), and the writes waiting then were sent.
  expect(flushed).toHaveLength(1);
  expect(flushed[0]! - start).toBeLessThan(8);
  expect(gather.holds(4)).toBe(false);
});

it('does not wait for writers slower to return than a statement, nor to join halves past eight writes', async () => {
  const slow = new Gather(() => {});
  slow.answered(4, 4, performance.now() - 1);
  await pause(5);
  for (let i = 0; i < 4; i++) slow.arrived();
  slow.answered(4, 4, performance.now() - 1);
  expect(slow.holds(4)).toBe(false);

  const large = new Gather(() => {});
  large.answered(8, 8, performance.now() - 3);
  for (let i = 0; i < 8; i++) large.arrived();
  expect(large.holds(8)).toBe(false);

  // Nothing measured yet (a first statement): nothing waits.
  const fresh = new Gather(() => {});
  fresh.answered(2, 2, performance.now() - 3);
  expect(fresh.holds(1)).toBe(false);
});
