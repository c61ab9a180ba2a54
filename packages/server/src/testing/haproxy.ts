import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from './pgbouncer.js';
import { until } from './until.js';

/**
 * The shipped balancer configuration (docs/deploy/haproxy.cfg) run by Debian's `haproxy` (installed
 * by .ci/run) in front of three processes, for the fleet test and `npm run bench:fleet`.
 */
export const HAPROXY_CONFIG = fileURLToPath(new URL('../../../../docs/deploy/haproxy.cfg', import.meta.url));

const BINARY = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((path) => existsSync(path));

/** Whether HAProxy is installed (tests that need it skip without it). */
export const haproxyInstalled = BINARY !== undefined;

export interface Balancer {
  url: string;
  /** HAProxy's output so far (for a failed test's message). */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts HAProxy with `config` (the shipped file by default) on a free port of 127.0.0.1, its three
 * `server` lines pointed at `processes` (host:port each), and waits until it answers.
 */
export async function startBalancer(processes: [string, string, string], config = HAPROXY_CONFIG): Promise<Balancer> {
  if (!BINARY) throw new Error('haproxy is not installed');
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child = spawn(BINARY, ['-db', '-f', config], {
      env: {
        ...process.env,
        ENGRAM_BALANCER_BIND: `127.0.0.1:${port}`,
        ENGRAM_PROCESS_1: processes[0],
        ENGRAM_PROCESS_2: processes[1],
        ENGRAM_PROCESS_3: processes[2],
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    child.stdout!.on('data', (d) => (log += d));
    child.stderr!.on('data', (d) => (log += d));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const url = `http://127.0.0.1:${port}`;
    const state = await until(
      async () => {
        if (child.exitCode !== null) return 'exited';
        try {
          await fetch(`${url}/`);
          return 'up';
        } catch {
          return undefined;
        }
      },
      `haproxy on port ${port} to answer`,
      15_000,
    );
    if (state === 'exited') {
      // The port was taken between probing and binding: another one.
      if (attempt < 3 && /Address already in use|cannot bind/i.test(log)) continue;
      throw new Error(`haproxy exited:\n${log}`);
    }
    return {
      url,
      log: () => log,
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      },
    };
  }
}
