/**
 * Faults under write load, shared by test/faults.test.ts and `npm run bench:faults`: writers that
 * record every answer (status and times), a TCP proxy in front of PostgreSQL that can be cut (the
 * database unreachable: connections refused, open ones reset), and another process holding SQLite's
 * write lock.
 */
import { spawn } from 'node:child_process';
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface Answer {
  started: number;
  ended: number;
  /** The HTTP status; 0: no answer (the process gone, the request hung past its timeout). */
  status: number;
  retryAfter: string | null;
}

export interface WriteLoad {
  /** end user -> texts the server acknowledged (201). */
  acknowledged: Map<string, string[]>;
  answers: Answer[];
  acked(): number;
  /** Stops the writers and waits for the requests in flight. */
  stop(): Promise<void>;
}

/**
 * `clients` writers adding memories back to back, each as its own end user, until stopped. A write
 * not acknowledged is retried after 50 ms, not after its Retry-After: how soon the server answers
 * again is what a fault's recovery is measured by.
 */
export function writeLoad(
  target: { url: string; key: string },
  trial: string,
  clients = 8,
  requestTimeoutMs = 30_000,
): WriteLoad {
  const acknowledged = new Map<string, string[]>();
  const answers: Answer[] = [];
  let stopped = false;
  let acked = 0;
  const done = Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      const endUser = `fault-${trial}-c${client}`;
      const mine: string[] = [];
      acknowledged.set(endUser, mine);
      for (let n = 0; !stopped; n++) {
        const text = `fault fact ${n} of client ${client} in trial ${trial}`;
        const started = performance.now();
        let status = 0;
        let retryAfter: string | null = null;
        try {
          const res = await fetch(`${target.url}/memory/add`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': target.key, 'x-end-user-id': endUser },
            body: JSON.stringify({ text }),
            signal: AbortSignal.timeout(requestTimeoutMs),
          });
          status = res.status;
          retryAfter = res.headers.get('retry-after');
          await res.arrayBuffer();
          if (status === 201) {
            mine.push(text);
            acked++;
          }
        } catch {
          /* no answer */
        }
        answers.push({ started, ended: performance.now(), status, retryAfter });
        if (status !== 201) await new Promise((r) => setTimeout(r, 50));
      }
    }),
  );
  return {
    acknowledged,
    answers,
    acked: () => acked,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

/** Resolves once `acked()` of the load has grown by `n` (the server is writing). */
export async function untilAcknowledged(load: WriteLoad, n: number, limitMs = 30_000): Promise<void> {
  const target = load.acked() + n;
  const deadline = Date.now() + limitMs;
  while (load.acked() < target) {
    if (Date.now() > deadline) throw new Error(`fewer than ${n} writes acknowledged within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The first write started after `since` (performance.now()) that was acknowledged, or undefined. */
export const firstAcknowledgedAfter = (load: WriteLoad, since: number) =>
  load.answers.find((a) => a.status === 201 && a.started >= since);

export interface TcpProxy {
  port: number;
  /** Connections refused from now on, and those open reset (the database unreachable); nothing when cut already. */
  cut(): Promise<void>;
  /** Accepts and forwards again, on the same port (nothing when it does already). */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** A TCP proxy on 127.0.0.1 to `host:port` that can be cut and restored. */
export async function tcpProxy(host: string, port: number): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let server: Server;
  let listenPort = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer((client) => {
        const upstream = connect(port, host);
        open.add(client).add(upstream);
        const end = () => {
          client.destroy();
          upstream.destroy();
          open.delete(client);
          open.delete(upstream);
        };
        client.on('error', end).on('close', end);
        upstream.on('error', end).on('close', end);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      server.once('error', reject);
      server.listen(listenPort, '127.0.0.1', () => {
        listenPort = (server.address() as { port: number }).port;
        resolve();
      });
    });
  let listening = false;
  const restore = async () => {
    if (listening) return;
    await listen();
    listening = true;
  };
  const cut = async () => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of open) socket.resetAndDestroy();
    open.clear();
    await closed;
  };
  await restore();
  return { port: listenPort, cut, restore, close: cut };
}

/** A PostgreSQL URL with its host and port replaced (to go through a proxy). */
export function throughProxy(url: string, proxy: TcpProxy): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(proxy.port);
  return u.toString();
}

/**
 * Another process holding the SQLite file's write lock (BEGIN IMMEDIATE) for at most `ms`: resolves once
 * it holds it, with a promise of its release and `release()` to let it go earlier (a test that waits for
 * what the lock must cause holds it until then, not for a time guessed to be long enough).
 */
export async function holdSqliteWriteLock(
  path: string,
  ms: number,
): Promise<{ released: Promise<void>; release: () => Promise<void> }> {
  const script = `
    const Database = require('better-sqlite3');
    const db = new Database(process.argv[1], { timeout: 30000 });
    db.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked\\n');
    const release = () => { db.exec('ROLLBACK'); db.close(); process.exit(0); };
    setTimeout(release, Number(process.argv[2]));
    process.stdin.once('data', release);
  `;
  const child = spawn(process.execPath, ['-e', script, path, String(ms)], {
    cwd: new URL('../../', import.meta.url).pathname, // where better-sqlite3 resolves
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const released = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`lock holder exited ${code}`)));
  });
  const release = async () => {
    if (child.exitCode === null && child.signalCode === null) child.stdin!.end('release\n');
    await released;
  };
  return { released, release };
}
