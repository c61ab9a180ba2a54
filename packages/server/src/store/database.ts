import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresAdapter, PostgresDialect, sql, type RawBuilder, type Transaction } from 'kysely';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Config } from '../config.js';
import { type Watch, type ChannelWatcher, listener } from './listener.js';
import { postgresTypes, sessionsPooled, withNamedStatements } from './postgres-connections.js';
import type { DB } from './schema.js';
import {
  SQLITE_BUSY_TIMEOUT_MS,
  CHECKPOINT_BOUND_PAGES,
  startCheckpointer,
  LockWaitingSqliteDialect,
  LOCK_ATTEMPT_MS,
} from './sqlite-connection.js';

export type Dialect = 'sqlite' | 'postgres';
export type Executor = Kysely<DB> | Transaction<DB>;

export interface Database {
  readonly dialect: Dialect;
  /** What it was opened with (another connection to the same database opens it the same way: modules/retrieval/thread.ts). */
  readonly config: Config['database'];
  readonly db: Kysely<DB>;
  /** Booleans: SQLite cannot bind them, so they travel as 0/1 there. */
  bool(value: boolean): boolean | number;
  ping(): Promise<void>;
  /**
   * Whether a connection's session state (prepared statements, LISTEN, session locks) is lost between
   * its transactions: PostgreSQL reached through a transaction-mode pooler (PgBouncer), as found by a
   * probe when the pool starts (sessionsPooled). False on SQLite and when reached directly.
   */
  pooled(): Promise<boolean>;
  /** PostgreSQL connection pool figures (for /metrics); SQLite has one connection and no pool. */
  pool(): { total: number; idle: number; waiting: number; max: number } | null;
  /**
   * PostgreSQL: report what `channel` notifies to `watcher` until stopped (or the database closed).
   * Every channel watched is LISTENed on over ONE connection of the database's own (to
   * ENGRAM_DATABASE_DIRECT_URL when set), reconnecting when it is lost, so one catch-up
   * (Watch.caughtUp) serves them all. Listening is reported per channel only once a probe notified
   * on it through the pool has come back on that connection: through a transaction-mode pooler, which
   * does not pass notifications on, it never is. null on SQLite, which has no notifications, and
   * behind such a pooler with no direct URL (found pooled by the time of the call): the caller then
   * keeps nothing it would need notifications to keep exact (the credentials clock instead:
   * modules/org/resolved-keys.ts).
   */
  watch(channel: string, watcher: ChannelWatcher): Watch | null;
  /**
   * SQLite: after an erasure commits, the WAL still holds the pages as they were before it; this asks the
   * checkpointer thread to copy the WAL back and truncate it (retrying until no reader holds it), in the
   * background. Nothing on PostgreSQL (dead row versions are vacuum's: docs/api.md, What forgetting removes).
   */
  erased(): void;
  /**
   * SQLite: lets go of the pages this connection's cache holds (`PRAGMA shrink_memory`), which may be versions from
   * before an erasure, read before it committed; once per erasure, on each thread's connection. Nothing on PostgreSQL.
   */
  releaseCache(): void;
  close(): Promise<void>;
}

/** Whether another connection (another thread or process) can open the same database: not an in-memory SQLite one. */
export const opensAgain = (config: Config['database']): boolean =>
  config.dialect === 'postgres' || (config.path !== ':memory:' && config.path !== '');

/**
 * `checkpoints: false` for a further connection to a SQLite file whose serving connection runs the
 * checkpointer thread (modules/retrieval/thread-worker.ts): one checkpointer a file is enough.
 */
export function openDatabase(
  config: Config['database'],
  { checkpoints = true }: { checkpoints?: boolean } = {},
): Database {
  if (config.dialect === 'postgres') {
    const pipelined = config.preparedStatements !== false;
    // Pipeline mode: a statement sent while another is unanswered goes out at once (BEGIN below).
    const pool = new pg.Pool({
      connectionString: config.url,
      max: config.poolSize,
      types: postgresTypes(),
      pipeline: pipelined,
    } as pg.PoolConfig);
    // A connection error (a terminated backend, a reset socket) must not crash the process, whether
    // the client is idle in the pool or checked out between two statements: node-pg emits it as an
    // 'error' event, and the statement under way or the next one reports it (503, http/error-handler.ts);
    // the pool discards a client that errored when it is released.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    // Probed once, before the pool's first statement (a failed probe, the database unreachable, is tried again).
    let pooledProbe: Promise<boolean> | undefined;
    let foundPooled: boolean | undefined;
    const pooled = (): Promise<boolean> =>
      (pooledProbe ??= sessionsPooled(config.url).then(
        (found) => (foundPooled = found),
        (error: unknown) => {
          pooledProbe = undefined;
          throw error;
        },
      ));
    const naming =
      config.preparedStatements === true ? { decide: async () => true } : { decide: async () => !(await pooled()) };
    const db = new Kysely<DB>({
      dialect: new PostgresDialect({ pool: pipelined ? withNamedStatements(pool, naming.decide) : pool }),
    });
    const direct = config.directUrl;
    const listening = listener(direct ?? config.url, (channel, payload) =>
      pool.query('SELECT pg_notify($1, $2)', [channel, payload]),
    );
    return {
      dialect: 'postgres',
      config,
      db,
      bool: (value) => value,
      ping: async () => {
        await pool.query('SELECT 1');
      },
      pooled,
      pool: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: config.poolSize }),
      // A pooler passes no notification on, and drops a server connection for each it gets: no LISTEN through it.
      watch: (channel, watcher) => (foundPooled && !direct ? null : listening.watch(channel, watcher)),
      erased: () => {},
      releaseCache: () => {},
      close: () => {
        listening.stopAll();
        return db.destroy();
      },
    };
  }
  mkdirSync(dirname(config.path), { recursive: true });
  // The busy timeout first: switching a new file to WAL takes its write lock, which another process
  // opening the same new file at the same moment (N processes started together) may hold.
  const sqlite = new BetterSqlite3(config.path, { timeout: SQLITE_BUSY_TIMEOUT_MS });
  sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  // WAL with synchronous=FULL: a commit is on disk before the response that acknowledges it.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  // Group commit (core/commit-group.ts) runs each write of a group in a savepoint, and SQLite copies
  // every page a savepoint changes again into a sub-journal, a temporary file past 64 KiB: a write
  // syscall per page. Kept in memory, it halved the system CPU of a SQLite add at 16 clients. Other
  // temporary data (sorts without an index) is held in memory too, as the retrieval indexes are.
  sqlite.pragma('temp_store = MEMORY');
  // A 64 MiB page cache (SQLite's default is 2 MiB): a write of many end users (an import's transaction) dirties
  // a leaf page of each owner-keyed index per end user, which spilled from the default cache into the WAL
  // before its COMMIT and was read back from it (bench/README.md, imports round 3).
  sqlite.pragma('cache_size = -65536');
  sqlite.pragma('foreign_keys = ON');
  // Deleted and overwritten content is zeroed in its page, so a forgotten memory's text does not linger in
  // free pages and free space of the file (bench/README.md: its cost on writes).
  sqlite.pragma('secure_delete = ON');
  // Should the checkpointer's thread fail, the serving connection checkpoints as SQLite does by default.
  const checkpointer =
    checkpoints && opensAgain(config)
      ? startCheckpointer(config.path, () => void (sqlite.open && sqlite.pragma('wal_autocheckpoint = 1000')))
      : null;
  if (checkpointer) sqlite.pragma(`wal_autocheckpoint = ${CHECKPOINT_BOUND_PAGES}`);
  // From here a statement meeting another process's write lock waits without blocking (LockWaitingSqliteDialect).
  sqlite.pragma(`busy_timeout = ${LOCK_ATTEMPT_MS}`);
  const db = new Kysely<DB>({ dialect: new LockWaitingSqliteDialect(sqlite) });
  return {
    dialect: 'sqlite',
    config,
    db,
    bool: (value) => (value ? 1 : 0),
    ping: async () => {
      sqlite.prepare('SELECT 1').get();
    },
    pooled: async () => false,
    pool: () => null,
    watch: () => null,
    erased: () => checkpointer?.truncate(),
    releaseCache: () => void (sqlite.open && sqlite.pragma('shrink_memory')),
    close: async () => {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}

/**
 * SQL true when the text of `column` (text or JSON) contains `needle`, a plain string (no pattern characters):
 * for finding the stored JSON that names a removed end user (their id JSON-encoded, quotes included).
 */
export function containsText(db: Executor, column: string, needle: string): RawBuilder<boolean> {
  return db.getExecutor().adapter instanceof PostgresAdapter
    ? sql<boolean>`strpos(CAST(${sql.ref(column)} AS TEXT), ${needle}) > 0`
    : sql<boolean>`instr(${sql.ref(column)}, ${needle}) > 0`;
}

/** A constant string as an SQL literal, for statements of fixed text that hold no request's values (core/grouped-statements.ts#groupedInsert). */
export const sqlLiteral = (value: string) => `'${value.replace(/'/g, "''")}'`;

/**
 * A PostgreSQL array literal (`{"a","b",NULL}`) of strings, numbers, booleans and nulls, for a parameter
 * cast to an array type: node-pg's own encoding ran two regular expressions over every element, a
 * tenth of an import's JavaScript; most elements need no escape at all.
 */
export function postgresArray(values: readonly unknown[]): string {
  // JSON escapes a string's quotes and backslashes as the literal does, and writes the whole array in one native
  // pass; it writes other escapes of its own (control characters, lone surrogates), so such arrays take the loop.
  // A replace per element of JSON text (every one has quotes) was ~7 µs: 70 ms of a 10,000-row import batch.
  if (values.every(isJsonSafe)) return `{${JSON.stringify(values).slice(1, -1)}}`;
  let literal = '{';
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) literal += ',';
    if (value === null || value === undefined) literal += 'NULL';
    else {
      const text = String(value);
      literal += `"${NEEDS_ESCAPE.test(text) ? text.replace(ESCAPED, '\\$&') : text}"`;
    }
  }
  return `${literal}}`;
}
const NEEDS_ESCAPE = /["\\]/;
const ESCAPED = /["\\]/g;
/** Written by JSON.stringify as the array literal reads it (its null, unquoted, is the literal's NULL). */
const isJsonSafe = (value: unknown) =>
  value === null ||
  value === undefined ||
  typeof value === 'boolean' ||
  (typeof value === 'number' && Number.isFinite(value)) ||
  (typeof value === 'string' && !JSON_ESCAPED.test(value));
/** Control characters and lone surrogates (with the u flag a pair is one code point, not Cs). */
const JSON_ESCAPED = /[\u0000-\u001f]|\p{Cs}/u;

/** JSON columns: text on SQLite, parsed json or jsonb on PostgreSQL. */
export function decodeJson<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

export function encodeJson(value: unknown): string {
  return JSON.stringify(value);
}

/**
 * Rows as a FROM item `alias` with typed columns, from ONE parameter (their JSON): PostgreSQL's
 * json_to_recordset, SQLite's json_each. One statement text whatever the number of rows, so a batch
 * of changes to many rows is one prepared statement (an UPDATE … FROM of them, for one).
 */
export function jsonRows(
  dialect: Dialect,
  alias: string,
  columns: readonly (readonly [name: string, postgresType: string])[],
  rows: readonly Record<string, unknown>[],
): RawBuilder<unknown> {
  const json = JSON.stringify(rows.map((row) => columns.map(([name]) => row[name] ?? null)));
  if (dialect === 'postgres') {
    // Arrays rather than objects: the names are said once, in the column list.
    const list = columns.map(([name, type], i) => `(r ->> ${i})::${type} AS ${name}`).join(', ');
    return sql`(SELECT ${sql.raw(list)} FROM json_array_elements(${json}::json) AS r) AS ${sql.raw(alias)}`;
  }
  const list = columns.map(([name], i) => `json_extract(value, '$[${i}]') AS ${name}`).join(', ');
  return sql`(SELECT ${sql.raw(list)} FROM json_each(${json})) AS ${sql.raw(alias)}`;
}

export function nowIso(): string {
  return new Date().toISOString();
}

export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/**
 * Lets go of what the last statement compiled on this thread held: Kysely's compiler keeps its parameters (a memory's
 * text, an end user's id) until it compiles the next, so after an erasure a statement of nothing is compiled; and
 * of the pages the connection's cache holds (SQLite: `releaseCache`).
 */
export function forgetLastQuery(database: Database): void {
  database.db.selectNoFrom(sql.lit(0).as('nothing')).compile();
  database.releaseCache();
}
