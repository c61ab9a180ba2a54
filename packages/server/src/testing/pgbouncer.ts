import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { until } from './until.js';

/**
 * A real PgBouncer (Debian's `pgbouncer`, installed by .ci/run) in transaction mode in front of a
 * PostgreSQL server, for tests and benchmarks of Engram behind a connection pooler: each transaction
 * (or statement outside one) may run on another server connection, prepared statements are not kept
 * (PgBouncer 1.18 has no max_prepared_statements) and notifications are not passed on.
 */
export interface PgBouncer {
  port: number;
  /** `url` with its host and port replaced by the pooler's. */
  through(url: string): string;
  /** The pooler's log so far (for a failed test's message). */
  log(): string;
  stop(): Promise<void>;
}

const BINARY = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path));

/** Whether PgBouncer is installed (tests that need it skip without it). */
export const pgbouncerInstalled = BINARY !== undefined;

/** A port of 127.0.0.1 free a moment ago (a caller binding it retries if it was taken meanwhile). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts PgBouncer on a free port of 127.0.0.1 in front of the server of `url` (every database name
 * passes through; the users named may log in without a password, as the test server trusts
 * 127.0.0.1). `poolSize`: server connections per database and user (PgBouncer's default_pool_size).
 */
export async function startPgBouncer(url: string, { poolSize = 20, users = [] as string[] } = {}): Promise<PgBouncer> {
  if (!BINARY) throw new Error('pgbouncer is not installed');
  const target = new URL(url);
  const dir = mkdtempSync(join(tmpdir(), 'engram-pgbouncer-'));
  const names = [...new Set([decodeURIComponent(target.username || 'postgres'), ...users])];
  writeFileSync(join(dir, 'users.txt'), `${names.map((name) => `"${name}" ""`).join('\n')}\n`);
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    writeFileSync(
      join(dir, 'pgbouncer.ini'),
      `${[
        '[databases]',
        `* = host=${target.hostname} port=${target.port || 5432}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${join(dir, 'users.txt')}`,
        'pool_mode = transaction',
        `default_pool_size = ${poolSize}`,
        'max_client_conn = 1000',
        // node-pg sends none of these today; a driver that does must not be refused.
        'ignore_startup_parameters = extra_float_digits,options',
        'server_reset_query =',
        'log_connections = 0',
        'log_disconnections = 0',
      ].join('\n')}\n`,
    );
    // PgBouncer will not run as root: the files must be readable by the user it switches to.
    chmodSync(dir, 0o755);
    const asRoot = process.getuid?.() === 0;
    const child: ChildProcess = spawn(BINARY, [...(asRoot ? ['-u', 'nobody'] : []), join(dir, 'pgbouncer.ini')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    child.stdout!.on('data', (d) => (log += d));
    child.stderr!.on('data', (d) => (log += d));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const through = (u: string) => {
      const next = new URL(u);
      next.hostname = '127.0.0.1';
      next.port = String(port);
      return next.toString();
    };
    const answers = async () => {
      if (child.exitCode !== null) return 'exited';
      const client = new pg.Client({ connectionString: through(url) });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('SELECT 1');
        return 'up';
      } catch {
        return undefined;
      } finally {
        await client.end().catch(() => {});
      }
    };
    const state = await until(answers, `pgbouncer on port ${port} to answer`, 15_000);
    if (state === 'exited') {
      // The port was taken between probing and binding: another one.
      if (attempt < 3 && /Address already in use/.test(log)) continue;
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pgbouncer exited:\n${log}`);
    }
    return {
      port,
      through,
      log: () => log,
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
        await exited;
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}
