import { expect } from 'vitest';
import type { TestApp } from './harness.js';
import { until } from './until.js';

const FINISHED = ['completed', 'failed', 'cancelled', 'expired'];

/** Polls a background operation's record (export, import) until `done` says it finished; answers that record. */
export async function waitFor(
  t: TestApp,
  token: string,
  path: string,
  project: string,
  done: (body: any) => boolean = (b) => FINISHED.includes(b.status),
) {
  return until(
    async () => {
      const res = await t.call('GET', path, { token, project });
      expect(res.status, res.text).toBe(200);
      return done(res.body) ? res.body : undefined;
    },
    `${path} to finish`,
    20_000,
  );
}
