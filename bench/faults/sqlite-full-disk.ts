/**
 * A full disk for 2 s: the server's file-size limit lowered to 4 KiB (prlimit), so every commit's
 * WAL frame write fails as on a full disk, then lifted. Designed answer: 507 insufficient_storage.
 */
import { execFileSync } from 'node:child_process';
import type { FaultScenario } from './scenario.js';

const FULL_MS = 2000;

export const scenario: FaultScenario = {
  name: 'sqlite-full-disk',
  description: `no room to write for ${FULL_MS / 1000} s (the process's file-size limit at 4 KiB)`,
  databases: ['sqlite'],
  allowedStatuses: [507],
  async inject(ctx) {
    const fsize = (limit: string) =>
      execFileSync('prlimit', ['--pid', String(ctx.server.process.pid), `--fsize=${limit}:`]);
    fsize('4096');
    try {
      await ctx.sleep(FULL_MS);
    } finally {
      if (ctx.server.process.exitCode === null && ctx.server.process.signalCode === null) fsize('unlimited');
    }
    return { full_s: FULL_MS / 1000 };
  },
};
