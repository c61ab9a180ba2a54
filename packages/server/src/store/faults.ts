import { sql } from 'kysely';
import type { Database } from './database.js';

/**
 * Database errors that say the database cannot serve now, as opposed to a statement that is wrong:
 * the connection refused, cut or timed out, the server shutting down, the database or role gone
 * (or not migrated: a re-created empty database, see schemaAbsent), SQLite's lock held by another process or its file
 * unwritable. They answer 503 database_unavailable with Retry-After and are retried by background
 * loops; a full disk answers 507 insufficient_storage (http/error-handler.ts).
 */
export type DatabaseFault = 'unavailable' | 'storage_full';

/** SQLSTATE classes and codes: 08 connection exception, 57P0x shutdown and cannot-connect-now, 3D000 no such database, 28 authorization (a role that may not log in), 53300 too many connections, 25006 read-only transaction (a standby after failover), 26000 and 42P05 a prepared statement lost or doubled by a transaction-mode pooler (the pool stops naming statements at once: store/postgres-connections.ts#withNamedStatements, so a retry goes through). */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-4]|3D000|28...|53300|53400|25006|26000|42P05)$/;
const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
]);
/** node-pg's own errors for a connection that is gone (they carry no code). */
const LOST_CONNECTION =
  /Connection terminated|not queryable|timeout exceeded when trying to connect|Connection ended unexpectedly|terminating connection/i;

export function databaseFault(error: unknown): DatabaseFault | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    // SQLite: full disk (SQLITE_FULL; a write past a file-size limit surfaces as an I/O error on write).
    if (code === 'SQLITE_FULL' || code === 'SQLITE_IOERR_WRITE' || code === '53100') return 'storage_full';
    if (/^SQLITE_(BUSY|LOCKED|READONLY|CANTOPEN|IOERR)/.test(code)) return 'unavailable';
    if (UNAVAILABLE_SQLSTATE.test(code) || NETWORK.has(code)) return 'unavailable';
  }
  if (LOST_CONNECTION.test(error.message)) return 'unavailable';
  // A connection attempt refused on every address (AggregateError of ECONNREFUSED).
  if (error instanceof AggregateError)
    return error.errors.some((e) => databaseFault(e) === 'unavailable') ? 'unavailable' : undefined;
  return undefined;
}

/** PostgreSQL's "relation does not exist": a bug in a statement, unless the whole schema is gone (schemaAbsent). */
export const isUndefinedTable = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === '42P01';

/**
 * Whether the database has no schema at all (no `schema_migrations`: re-created empty under a
 * running server), which makes a missing table the database's state, not a statement's bug; a
 * database that cannot answer the question counts as absent too.
 */
export async function schemaAbsent(database: Database): Promise<boolean> {
  if (database.config.dialect !== 'postgres') return false;
  try {
    const { rows } = await sql<{ t: string | null }>`SELECT to_regclass('schema_migrations')::text AS t`.execute(
      database.db,
    );
    return rows[0]?.t == null;
  } catch {
    return true;
  }
}

/**
 * Runs `start` (open the database, migrate, bootstrap) again while it fails because the database is
 * unavailable, waiting 0.5 s doubling to 5 s between tries and logging each, for at most `waitSeconds`;
 * then, or on any other error, the error is the caller's. A process started before its database (a
 * deploy racing a database restart, a container up before its database) comes up when the database does.
 */
export async function whileDatabaseUnavailable<T>(
  start: () => Promise<T>,
  waitSeconds: number,
  log: { warn(obj: object, msg: string): void },
): Promise<T> {
  const deadline = Date.now() + waitSeconds * 1000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      const wait = Math.min(5_000, 500 * 2 ** (attempt - 1));
      if (databaseFault(error) === undefined || Date.now() + wait > deadline) throw error;
      log.warn(
        {
          err: (error as Error).message,
          attempt,
          retry_in_ms: wait,
          gives_up_in_s: Math.round((deadline - Date.now()) / 1000),
        },
        'database unavailable at start-up; waiting for it',
      );
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
