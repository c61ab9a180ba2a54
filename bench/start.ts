/**
 * Time from `npm start` to a 200 from /readyz, with the build already up to date (the second
 * start after install) and the database already migrated and bootstrapped by a first, unmeasured
 * start: prints JSON. Runs use one data directory and a free port each.
 *   npm run bench:start [-- --runs 3]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { option } from './lib/args.js';

const runs = Number(option('--runs') ?? 3);
const ROOT = new URL('..', import.meta.url).pathname;

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });

const dir = mkdtempSync(join(tmpdir(), 'engram-start-'));

async function once(): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    detached: true,
    stdio: 'ignore',
    env: { ...process.env, ENGRAM_DATA_DIR: dir, ENGRAM_PORT: String(port), ENGRAM_LOG_LEVEL: 'warn' },
  });
  try {
    for (;;) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200) return performance.now() - started;
      } catch {
        /* not listening yet */
      }
      if (child.exitCode !== null) throw new Error('npm start exited');
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

await once();
const timesMs: number[] = [];
for (let i = 0; i < runs; i++) timesMs.push(Math.round(await once()));
const sorted = [...timesMs].sort((a, b) => a - b);
rmSync(dir, { recursive: true, force: true });
console.log(
  JSON.stringify({ bench: 'start', runs, times_ms: timesMs, median_ms: sorted[Math.floor(sorted.length / 2)] }),
);
