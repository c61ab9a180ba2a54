import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.js';

/** Runs the real CLI (from source) as a child process: for tests that need a listening server or a kill. */

const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));
const TEST_SECRET = 'engram-test-secret-0123456789abcdef0123456789';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

/** A port the OS just handed out, so parallel test files do not pick the same one. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startServerProcess(env: Record<string, string>, attempts = 3): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'serve'], {
    // PostgreSQL deployments must share one secret between processes (see README); tests use a fixed one.
    env: { ...process.env, ENGRAM_HOST: '127.0.0.1', ENGRAM_PORT: String(port), ENGRAM_SECRET_KEY: TEST_SECRET, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  for (let i = 0; ; i++) {
    try {
      // Ready only while our child runs: an answer from another process on a reused port does not count.
      if ((await fetch(`${url}/readyz`)).status === 200 && child.exitCode === null) break;
    } catch {
      /* not listening yet */
    }
    if (child.exitCode !== null) {
      // Another process took the port between our probe and the child's listen: try another.
      if (stderr.includes('EADDRINUSE') && attempts > 1) return startServerProcess(env, attempts - 1);
      throw new Error(`server did not start:\n${stderr}`);
    }
    if (i > 300) throw new Error(`server did not start:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export interface BackgroundProcess {
  child: ChildProcess;
  stderr: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `engram worker` as a child process on the given environment (no port: it serves no HTTP). */
export function startWorkerProcess(env: Record<string, string>): BackgroundProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'worker'], {
    env: { ...process.env, ENGRAM_SECRET_KEY: TEST_SECRET, ...env },
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  child.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    stderr: () => stderr,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** The ENGRAM_DATABASE_URL that points a server process at a test database. */
export function databaseEnv(config: Config['database']): Record<string, string> {
  return { ENGRAM_DATABASE_URL: config.dialect === 'postgres' ? config.url : config.path };
}
