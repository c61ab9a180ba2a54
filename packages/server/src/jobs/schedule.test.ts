import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { FIRST_RUN_WITHIN_MS, Schedule } from './schedule.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

const log = { warn: () => {} };

it('runs a chore first after its interval or five minutes, whichever is shorter, then every interval', async () => {
  const runs: Record<string, number[]> = { hourly: [], second: [] };
  const schedule = new Schedule(
    [
      { name: 'hourly', everyMs: 3_600_000, run: async () => runs.hourly!.push(Date.now()) },
      { name: 'second', everyMs: 1_000, run: async () => runs.second!.push(Date.now()) },
    ],
    log,
  );
  const start = Date.now();
  schedule.start();
  await vi.advanceTimersByTimeAsync(FIRST_RUN_WITHIN_MS + 3_600_000);
  expect(runs.hourly!.map((t) => t - start)).toEqual([FIRST_RUN_WITHIN_MS, FIRST_RUN_WITHIN_MS + 3_600_000]);
  expect(runs.second!.slice(0, 3).map((t) => t - start)).toEqual([1_000, 2_000, 3_000]);
  await schedule.stop();
  const after = runs.second!.length;
  await vi.advanceTimersByTimeAsync(10_000);
  expect(runs.second!.length).toBe(after);
});

it('never runs a chore twice at once, and stops before a first run that has not come', async () => {
  let inFlight = 0;
  let most = 0;
  let release!: () => void;
  const slow = new Promise<void>((resolve) => (release = resolve));
  const schedule = new Schedule(
    [
      {
        name: 'slow',
        everyMs: 1_000,
        run: async () => {
          most = Math.max(most, ++inFlight);
          await slow;
          inFlight--;
        },
      },
    ],
    log,
  );
  schedule.start();
  await vi.advanceTimersByTimeAsync(5_000);
  expect(most).toBe(1);
  release();
  await schedule.stop();

  let ran = false;
  const early = new Schedule([{ name: 'later', everyMs: 3_600_000, run: async () => void (ran = true) }], log);
  early.start();
  await early.stop();
  await vi.advanceTimersByTimeAsync(FIRST_RUN_WITHIN_MS * 2);
  expect(ran).toBe(false);
});

it('runs the chores through the shared database only while the process leads the fleet, its own chores always', async () => {
  const runs = { shared: 0, own: 0 };
  let leads = false;
  const schedule = new Schedule(
    [
      { name: 'shared', everyMs: 1_000, run: async () => void runs.shared++ },
      { name: 'own', everyMs: 1_000, run: async () => void runs.own++, perProcess: true },
    ],
    log,
    () => leads,
  );
  schedule.start();
  await vi.advanceTimersByTimeAsync(3_000);
  expect(runs).toEqual({ shared: 0, own: 3 });
  leads = true;
  await vi.advanceTimersByTimeAsync(2_000);
  expect(runs).toEqual({ shared: 2, own: 5 });
  await schedule.stop();
});
