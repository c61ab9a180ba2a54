import { expect } from 'vitest';
import type { TestApp } from './harness.js';

const FINISHED = ['completed', 'failed', 'cancelled', 'expired'];

/** Polls a background operation's record (export, import) until `done` says it finished; answers that record. */
export async function waitFor(t: TestApp, token: string, path: string, project: string, done: (body: any) => boolean = (b) => FINISHED.includes(b.status)) {
  for (let i = 0; i < 1000; i++) {
    const res = await t.call('GET', path, { token, project });
    expect(res.status, res.text).toBe(200);
    if (done(res.body)) return res.body;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${path} did not finish`);
}

