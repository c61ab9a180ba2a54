import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Config } from '../config.js';
import { PROGRAM_ENV } from './global-setup.js';

/** Engram run as a program (the CLI, `engram serve`, `engram worker`): for tests that need a listening server or a kill. */

const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));
const TEST_SECRET = 'engram-test-secret-0123456789abcdef0123456789';
/** What `engram serve` prints on stdout once it accepts connections, at every log level (main.ts). */
const LISTENING = /^engram: listening on (http:\/\/\S+)$/m;
/** A start's deadline, under the 60 s of a test or hook: 30 s was passed on a busy machine (load 14, session 20). */
const START_LIMIT_MS = 55_000;

/**
 * Node's arguments that start Engram: its compiled build, brought up to date by the test run's
 * setup (global-setup.ts), or its source under tsx when there is none (a failed build).
 */
export function programArgs(): string[] {
  const built = process.env[PROGRAM_ENV];
  return built ? [built] : ['--import', 'tsx', MAIN];
}

/** A module of that build (`path` relative to its dist/), or undefined when there is none. */
export function compiledModule(path: string): URL | undefined {
  const built = process.env[PROGRAM_ENV];
  return built ? new URL(path, pathToFileURL(built)) : undefined;
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...programArgs(), ...args], { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

/**
 * `engram serve`, ready. It listens on a port the OS picks (ENGRAM_PORT=0) and is spoken to at the
 * address it prints: a port probed free and handed over could be taken meanwhile by another test
 * file's server, which would then answer for ours.
 */
export async function startServerProcess(
  env: Record<string, string>,
  {
    limitMs = START_LIMIT_MS,
    onStderr,
  }: {
    limitMs?: number /** Sees stderr while the server starts (what it logs before it is ready). */;
    onStderr?: (chunk: string) => void;
  } = {},
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...programArgs(), 'serve'], {
    // PostgreSQL deployments must share one secret between processes (see README); tests use a fixed one.
    env: { ...process.env, ENGRAM_HOST: '127.0.0.1', ENGRAM_PORT: '0', ENGRAM_SECRET_KEY: TEST_SECRET, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => {
    stderr += d;
    onStderr?.(String(d));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const running = () => child.exitCode === null && child.signalCode === null;
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (running()) child.kill(signal);
    return exited;
  };
  const deadline = Date.now() + limitMs;
  for (;;) {
    const url = LISTENING.exec(stdout)?.[1];
    // The port stays our child's while it runs: an answer there, with the child still running, is its own.
    if (url && (await answersReady(url)) && running())
      return { url, child, stdout: () => stdout, stderr: () => stderr, stop };
    if (!running()) throw new Error(`server exited before it was ready:\n${stderr}`);
    if (Date.now() > deadline) {
      await stop('SIGKILL');
      throw new Error(`server not ready within ${limitMs} ms:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function answersReady(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/readyz`)).status === 200;
  } catch {
    return false;
  }
}

export interface BackgroundProcess {
  child: ChildProcess;
  stderr: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `engram worker` as a child process on the given environment (no port: it serves no HTTP). */
export function startWorkerProcess(env: Record<string, string>): BackgroundProcess {
  const child = spawn(process.execPath, [...programArgs(), 'worker'], {
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
