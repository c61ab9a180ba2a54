import { randomBytes, randomInt } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { sql } from 'kysely';
import type { Database, Executor } from './database.js';

/**
 * A process's presence, as the database's own locks prove it: while this process runs, it holds a lock
 * that the operating system or the database server releases the moment it dies (kill -9 included), so
 * another process can tell a mark of a dead one from a mark of one merely slow. http/idempotency.ts records
 * the mark with each claim, so that a retry after a crash takes the claim over at once instead of
 * waiting out its lease.
 *
 * - PostgreSQL: a transaction-scoped advisory lock (PRESENCE_LOCK_CLASS, a random key) in a transaction
 *   kept open on a connection of its own; it takes no transaction id or snapshot, so it holds back no
 *   vacuum. Proven gone: the lock is in no backend's pg_locks. The connection goes to
 *   ENGRAM_DATABASE_DIRECT_URL when set. Through a transaction-mode pooler without one, none is held: a
 *   transaction kept open there would pin one of the pooler's server connections per process for good
 *   (N processes on a pool of N would leave none for statements), and an idle-transaction timeout
 *   of the pooler would end it; claims then wait out their lease.
 * - SQLite: an exclusive lock on a small file of its own beside the database (`<db>-presence/`), kept by an
 *   open exclusive transaction. The kernel drops it with the process, across containers sharing the volume.
 *   Proven gone: another connection can take that file's lock (or the file was removed at a clean stop).
 *
 * A mark is null while the lock is not held (starting, reconnecting, a read-only data directory): a claim
 * without one is taken over only when its lease lapses.
 */
export interface Presence {
  /** What a claim records of this process now, or null when its presence is not held at this moment. */
  mark(): string | null;
  /** Whether the process that recorded `mark` is provably gone (false when it cannot be told). */
  gone(db: Executor, mark: string): Promise<boolean>;
  close(): Promise<void>;
}

/** The first key of the presence advisory locks (migrations hold 724991, exports 724992, the audit sealer 724993). */
export const PRESENCE_LOCK_CLASS = 724_994;
/** application_name of the presence connection (an operator can tell it, idle in transaction, from the pool's). */
export const PRESENCE_APPLICATION_NAME = 'engram-presence';
const RECONNECT_MS = 1_000;
/** A statement on the presence connection now and then: an idle-in-transaction timeout of the server does not end it. */
const KEEPALIVE_MS = 15_000;

export async function startPresence(database: Database): Promise<Presence> {
  const { config } = database;
  if (config.dialect === 'postgres') {
    const direct = config.directUrl;
    return postgresPresence(direct ?? config.url, direct ? async () => false : database.pooled);
  }
  // An in-memory database is seen by this process only: no other process can find its claims.
  if (config.path === ':memory:' || config.path === '')
    return { mark: () => null, gone: async () => false, close: async () => {} };
  return sqlitePresence(`${config.path}-presence`);
}

/** `pooled`: whether `url` leads to a transaction-mode pooler (Database.pooled), asked before each attempt until it answers. */
async function postgresPresence(url: string, pooled: () => Promise<boolean>): Promise<Presence> {
  let key = randomInt(1, 2 ** 31 - 1);
  let held: pg.Client | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let keepalive: NodeJS.Timeout | undefined;

  const acquire = async (): Promise<void> => {
    retry = undefined;
    const own = new pg.Client({
      connectionString: url,
      application_name: PRESENCE_APPLICATION_NAME,
      query_timeout: 10_000,
    });
    let lost = false;
    const lose = () => {
      if (lost) return;
      lost = true;
      clearInterval(keepalive);
      if (held === own) held = null;
      own.end().catch(() => {});
      if (!closed) (retry = setTimeout(() => void acquire(), RECONNECT_MS)).unref();
    };
    own.on('error', lose);
    own.on('end', lose);
    try {
      if (await pooled()) {
        // No lock to hold without pinning a server connection of the pooler: marks stay null (above).
        closed = true;
        return lose();
      }
      await own.connect();
      await own.query('BEGIN');
      // Another live process drew the same key (1 in 2^31): draw again.
      while (
        !(await own.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(${PRESENCE_LOCK_CLASS}, ${key}) AS ok`))
          .rows[0]!.ok
      )
        key = randomInt(1, 2 ** 31 - 1);
      if (closed || lost) return lose();
      held = own;
      (keepalive = setInterval(() => void own.query('SELECT 1').catch(lose), KEEPALIVE_MS)).unref();
    } catch {
      lose();
    }
  };
  await acquire();

  return {
    mark: () => (held ? `pg:${key}` : null),
    gone: async (db, mark) => {
      const match = /^pg:(\d+)$/.exec(mark);
      if (!match) return false;
      const { rows } = await sql<{
        held: number;
      }>`SELECT count(*)::int AS held FROM pg_locks WHERE locktype = 'advisory'
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND classid::int8 = ${PRESENCE_LOCK_CLASS} AND objid::int8 = ${Number(match[1])} AND objsubid = 2 AND granted`.execute(
        db,
      );
      return rows[0]!.held === 0;
    },
    close: async () => {
      closed = true;
      clearTimeout(retry);
      clearInterval(keepalive);
      const own = held;
      held = null;
      await own?.end().catch(() => {});
    },
  };
}

/** A presence file's name: random, so a mark names one run of one process. */
const PRESENCE_FILE = /^[0-9a-f]{24}$/;

function sqlitePresence(dir: string): Presence {
  /** Whether the presence file `name` is locked by a live connection; a file no one holds is removed. */
  const held = (name: string): boolean => {
    const path = join(dir, name);
    let probe: BetterSqlite3.Database;
    try {
      probe = new BetterSqlite3(path, { fileMustExist: true, timeout: 0 });
    } catch {
      return false; // removed at a clean stop, or by an earlier probe
    }
    try {
      probe.exec('BEGIN IMMEDIATE');
      probe.exec('ROLLBACK');
    } catch {
      probe.close();
      return true; // SQLITE_BUSY: its process still holds it
    }
    probe.close();
    rmSync(path, { force: true });
    return false;
  };

  let own: { name: string; connection: BetterSqlite3.Database } | null = null;
  try {
    mkdirSync(dir, { recursive: true });
    // The files of processes that died since are removed as they are found.
    for (const name of readdirSync(dir)) if (PRESENCE_FILE.test(name)) held(name);
    // Locked under a name no sweep looks at, then renamed (the lock is the file's, not the name's): a
    // process sweeping meanwhile never takes a file not yet locked for one whose process died.
    const name = randomBytes(12).toString('hex');
    const connection = new BetterSqlite3(join(dir, `${name}.new`));
    connection.exec('BEGIN EXCLUSIVE');
    renameSync(join(dir, `${name}.new`), join(dir, name));
    own = { name, connection };
  } catch {
    // A read-only data directory: claims carry no mark and wait out their lease.
    own = null;
  }

  return {
    mark: () => (own ? `sqlite:${own.name}` : null),
    gone: async (_db, mark) => {
      const match = /^sqlite:([0-9a-f]{24})$/.exec(mark);
      return match !== null && !held(match[1]!);
    },
    close: async () => {
      if (!own) return;
      const { name, connection } = own;
      own = null;
      connection.close();
      rmSync(join(dir, name), { force: true });
    },
  };
}
