/** Another process holds SQLite's write lock (BEGIN IMMEDIATE) for 6 s: a backup, a migration, an operator's sqlite3 shell. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { FaultScenario } from './scenario.js';

const HOLD_MS = 6000;

export const scenario: FaultScenario = {
  name: 'sqlite-write-lock',
  description: `another process holds the write lock (BEGIN IMMEDIATE) for ${HOLD_MS / 1000} s`,
  databases: ['sqlite'],
  async inject(ctx) {
    const file = join(ctx.dataDir, 'engram.db');
    const script = `
      const Database = require('better-sqlite3');
      const db = new Database(process.argv[1], { timeout: 30000 });
      db.exec('BEGIN IMMEDIATE');
      process.stdout.write('locked\\n');
      setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, ${HOLD_MS});
    `;
    const child = spawn(process.execPath, ['-e', script, file], {
      cwd: new URL('../../packages/server/', import.meta.url).pathname,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout!.once('data', () => resolve());
      child.once('exit', (code) => reject(new Error(`lock holder exited ${code}`)));
    });
    await new Promise((r) => child.once('exit', r));
    return { lock_held_s: HOLD_MS / 1000 };
  },
};
