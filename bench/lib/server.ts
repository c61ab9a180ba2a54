import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** Starts a real `engram serve` process (the built one) on a fresh database, for benchmarks. */

const MAIN = fileURLToPath(new URL('../../packages/server/dist/main.js', import.meta.url));
export const BENCH_KEY = `egm_bench_${'k'.repeat(32)}`;

export interface BenchServer {
  url: string;
  key: string;
  dialect: 'sqlite' | 'postgres';
  /** ENGRAM_DATABASE_URL for other processes on the same database ('' with the data directory, for SQLite). */
  databaseUrl: string;
  process: ChildProcess;
  stop(): Promise<void>;
  /** SIGKILL, keeping the database (for restarts on the same data). */
  kill(): Promise<void>;
}

export async function freshPostgres(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `engram_bench_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A fresh data directory for a benchmark server (removed by the caller, or by `stop` when startServer made it). */
export const freshDataDir = () => mkdtempSync(join(tmpdir(), 'engram-bench-'));

export async function startServer(
  opts: {
    postgresUrl?: string;
    port?: number;
    env?: Record<string, string>;
    dataDir?: string;
    nodeArgs?: string[];
    /** An existing PostgreSQL database to serve (kept on stop), instead of a fresh one. */
    databaseUrl?: string;
    /** Another build's dist/main.js (bench/pair.ts's baseline), instead of this checkout's. */
    main?: string;
  } = {},
): Promise<BenchServer> {
  const ownDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? freshDataDir();
  const pgdb = opts.databaseUrl
    ? { url: opts.databaseUrl, drop: async () => {} }
    : opts.postgresUrl
      ? await freshPostgres(opts.postgresUrl)
      : undefined;
  const port = opts.port ?? 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.main ?? MAIN, 'serve'], {
    env: {
      ...process.env,
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_PORT: String(port),
      ENGRAM_LOG_LEVEL: 'warn',
      ENGRAM_BOOTSTRAP_API_KEY: BENCH_KEY,
      ENGRAM_SECRET_KEY: 'engram-bench-secret-0123456789abcdef0123456789',
      ENGRAM_RATE_LIMIT_MAX: '10000000',
      ...(pgdb ? { ENGRAM_DATABASE_URL: pgdb.url } : { ENGRAM_DATABASE_URL: '' }),
      ...opts.env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (i > 900 || child.exitCode !== null) {
      // Not left running behind the benchmark's error (a loaded machine can take long to start one).
      child.kill('SIGKILL');
      throw new Error('server did not become ready');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    key: BENCH_KEY,
    dialect: pgdb ? 'postgres' : 'sqlite',
    databaseUrl: pgdb?.url ?? '',
    process: child,
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
      await pgdb?.drop();
    },
  };
}
