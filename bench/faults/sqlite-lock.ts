/** Another process holds SQLite's write lock (BEGIN IMMEDIATE) past the 5 s busy timeout: a backup, a migration, an operator's sqlite3 shell. */
import { join } from 'node:path';
import { holdSqliteWriteLock } from '../../packages/server/src/testing/faults.js';
import type { FaultScenario } from './scenario.js';

const HOLD_MS = 6000;

export const scenario: FaultScenario = {
  name: 'sqlite-write-lock',
  description: `another process holds the write lock (BEGIN IMMEDIATE) for ${HOLD_MS / 1000} s`,
  databases: ['sqlite'],
  async inject(ctx) {
    const lock = await holdSqliteWriteLock(join(ctx.dataDir, 'engram.db'), HOLD_MS);
    await lock.released;
    return { lock_held_s: HOLD_MS / 1000 };
  },
};
