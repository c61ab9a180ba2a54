import type BetterSqlite3 from 'better-sqlite3';
import { type DatabaseConnection, SqliteDialect, SqliteDriver } from 'kysely';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { ROWS_AS_ARRAYS } from './postgres-connections.js';

/** The SQLite connection as openDatabase sets it up: the checkpointer thread, the statement cache and rows built in JavaScript. */

export const SQLITE_BUSY_TIMEOUT_MS = 5_000;
/** The WAL size (pages) at which the serving connection checkpoints itself, should the checkpointer fall behind. */
export const CHECKPOINT_BOUND_PAGES = 10_000;
const CHECKPOINT_EVERY_MS = 100;

const CHECKPOINTER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const BetterSqlite3 = require(workerData.module);
const db = new BetterSqlite3(workerData.path);
db.pragma('synchronous = FULL');
db.pragma('secure_delete = ON');
// An erasure asked for the WAL to be emptied: a truncating checkpoint, tried each round until no reader is in the way.
let truncate = false;
const timer = setInterval(() => {
  try {
    if (truncate) truncate = db.pragma('wal_checkpoint(TRUNCATE)')[0].busy !== 0;
    else db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or locked: the next round checkpoints.
  }
}, workerData.everyMs);
parentPort.on('message', (message) => {
  if (message === 'truncate') {
    truncate = true;
    return;
  }
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * SQLite checkpoints (copying the WAL's pages back into the database file, with an fsync of each)
 * run on a connection of their own in a worker thread, every 100 ms: on the serving connection
 * they ran inside the COMMIT that took the WAL past 1,000 pages, and blocked the event loop for
 * it (a third of a bulk import's time). A passive checkpoint never waits for a reader or a writer;
 * the serving connection still checkpoints at CHECKPOINT_BOUND_PAGES, should this one fall behind,
 * and at SQLite's usual 1,000 once the thread failed (`failed`).
 * Not for an in-memory database, which no other connection can open (openDatabase checks opensAgain).
 */
export function startCheckpointer(path: string, failed: () => void): { truncate(): void; stop(): Promise<void> } {
  const worker = new Worker(CHECKPOINTER_SOURCE, {
    eval: true,
    workerData: {
      path,
      module: createRequire(import.meta.url).resolve('better-sqlite3'),
      everyMs: CHECKPOINT_EVERY_MS,
    },
  });
  // It must not keep a process alive that has nothing else to do.
  worker.unref();
  worker.on('error', failed);
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    truncate: () => worker.postMessage('truncate'),
    stop: () => {
      // Held again while it closes, so that a process awaiting this does not end before it has.
      worker.ref();
      worker.postMessage('stop');
      return exited;
    },
  };
}

/**
 * Kysely prepares every statement anew; preparing is a measurable share of a small write, so
 * statements are kept by SQL text (bounded) and reused. better-sqlite3 runs them synchronously,
 * so a cached statement is never in use twice at once (Kysely's streaming `iterate`, which could
 * hold one open, is not used).
 */
export function withStatementCache(sqlite: BetterSqlite3.Database, limit = 500): BetterSqlite3.Database {
  const cache = new Map<string, BetterSqlite3.Statement>();
  const prepare = sqlite.prepare.bind(sqlite);
  return Object.assign(Object.create(sqlite) as BetterSqlite3.Database, {
    prepare: (text: string) => {
      // Kysely opens transactions with a deferred `begin`; take the write lock at once instead, so a
      // transaction that reads and then writes waits (busy_timeout) for another process's writer rather
      // than failing with SQLITE_BUSY when that process committed in between (two servers, or a worker).
      const source = text === 'begin' ? 'begin immediate' : text;
      // SQLite ends a transaction itself on some errors (a full disk, an I/O error): Kysely's ROLLBACK
      // after it would fail with "no transaction is active" and hide the error that ended it.
      if (source === 'rollback') return rollbackIfActive(sqlite, prepare);
      let statement = cache.get(source);
      if (!statement) {
        const prepared = prepare(source);
        // A statement that changes the schema (a migration) may change what `select *` returns: the
        // statements kept so far, and the column names their row builders hold, are prepared anew.
        if (!prepared.reader && SCHEMA_CHANGE.test(source)) cache.clear();
        statement = prepared.reader ? withRowsBuiltInJs(prepared, source.startsWith(ROWS_AS_ARRAYS)) : prepared;
        if (cache.size >= limit) cache.delete(cache.keys().next().value!);
        cache.set(source, statement);
      }
      return statement;
    },
    close: () => sqlite.close(),
  });
}

const SCHEMA_CHANGE = /^\s*(create|alter|drop)\b/i;

function rollbackIfActive(
  sqlite: BetterSqlite3.Database,
  prepare: (text: string) => BetterSqlite3.Statement,
): BetterSqlite3.Statement {
  return {
    reader: false,
    run: () => (sqlite.inTransaction ? prepare('rollback').run() : { changes: 0, lastInsertRowid: 0 }),
  } as unknown as BetterSqlite3.Statement;
}

/**
 * A reading statement whose rows are built here from better-sqlite3's raw arrays. better-sqlite3
 * builds each row object through V8's embedder API, one property at a time (a key lookup and a
 * map transition per column): for the ten memory rows a query reads that cost more than running
 * the statement. A function compiled once per statement builds the same objects (same keys in
 * the same order, a repeated name keeping its last value) as one object literal. The column names
 * are read again whenever a row's width differs from them (the schema changed under a statement
 * another process's migration recompiled). Kysely calls only `reader`, `all` and `run` on a statement.
 * A statement marked ROWS_AS_ARRAYS answers the raw arrays themselves.
 */
function withRowsBuiltInJs(statement: BetterSqlite3.Statement, asArrays: boolean): BetterSqlite3.Statement {
  const names = () => statement.columns().map((column) => column.name);
  // A column named __proto__ sets the prototype in the literal as better-sqlite3's assignment does.
  const builderFor = (columns: string[]) =>
    new Function('v', `return {${columns.map((name, i) => `${JSON.stringify(name)}: v[${i}]`).join(', ')}};`) as (
      values: unknown[],
    ) => Record<string, unknown>;
  let columns = names();
  let build = builderFor(columns);
  statement.raw(true);
  const reading = {
    reader: true,
    all: (...parameters: unknown[]) => {
      const rows = statement.all(...parameters) as unknown[][];
      if (asArrays) return rows;
      if (rows.length > 0 && rows[0]!.length !== columns.length) build = builderFor((columns = names()));
      return rows.map(build);
    },
    run: (...parameters: unknown[]) => statement.run(...parameters),
  };
  return reading as unknown as BetterSqlite3.Statement;
}

/**
 * SQLite's write lock, waited for without holding the event loop. better-sqlite3 runs a statement
 * synchronously, so a `begin immediate` under a 5 s busy_timeout blocked the whole process until the
 * lock was free: with another process holding it 15 s, each queued write stalled everything (health
 * checks, index-only queries, other requests) for the full 5 s. The connection's busy_timeout is
 * LOCK_ATTEMPT_MS instead (openDatabase), and a statement outside a transaction (a `begin immediate`,
 * or a write on its own) that meets the lock is tried again, the event loop running in between, until
 * SQLITE_BUSY_TIMEOUT_MS have passed since the lock was first refused (to this statement or one queued before it);
 * then SQLITE_BUSY is the caller's (503 database_unavailable). Such a
 * statement changed nothing, so trying it again is safe; inside a transaction the lock is already held.
 * Kysely's connection lock is held while waiting, as it was while blocked: one connection, one transaction.
 */
export class LockWaitingSqliteDialect extends SqliteDialect {
  readonly #sqlite: BetterSqlite3.Database;
  constructor(sqlite: BetterSqlite3.Database) {
    super({ database: sqlite }); // unused: createDriver builds the driver
    this.#sqlite = sqlite;
  }
  override createDriver(): SqliteDriver {
    return new LockWaitingSqliteDriver({ database: withStatementCache(this.#sqlite) }, this.#sqlite);
  }
}

/** How long one attempt at SQLite's write lock may block the event loop (the connection's busy_timeout). */
export const LOCK_ATTEMPT_MS = 25;

class LockWaitingSqliteDriver extends SqliteDriver {
  readonly #sqlite: BetterSqlite3.Database;
  #waiting: DatabaseConnection | undefined;
  /**
   * When the lock was first refused since a write last got it. Statements queue on the one connection, so each
   * waiting the timeout on its own made the nth in the queue wait n timeouts (a write unanswered for 30 s behind
   * background statements); with one clock, those still queued once the timeout has passed are refused at once.
   */
  #refusedSince: number | undefined;
  #lastRefusal = 0;
  constructor(config: ConstructorParameters<typeof SqliteDriver>[0], sqlite: BetterSqlite3.Database) {
    super(config);
    this.#sqlite = sqlite;
  }
  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    this.#waiting ??= {
      executeQuery: (query) => this.#waitingForTheLock(query.sql, () => connection.executeQuery(query)),
      streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
    };
    return this.#waiting;
  }
  async #waitingForTheLock<T>(text: string, run: () => Promise<T>): Promise<T> {
    for (let pause = 2; ; pause = Math.min(pause * 2, 100)) {
      try {
        const result = await run();
        // A read succeeds while another process writes (WAL): only a statement that took the lock restarts the clock.
        if (this.#sqlite.inTransaction || !READ.test(text)) this.#refusedSince = undefined;
        return result;
      } catch (error) {
        const busy = (error as { code?: unknown }).code === 'SQLITE_BUSY' && !this.#sqlite.inTransaction;
        if (!busy) throw error;
        const now = performance.now();
        // A refusal after a pause in which nothing waited (the clock's last refusal long past) starts a new clock.
        if (this.#refusedSince === undefined || now - this.#lastRefusal > REFUSALS_APART_MS) this.#refusedSince = now;
        this.#lastRefusal = now;
        if (now - this.#refusedSince >= SQLITE_BUSY_TIMEOUT_MS) throw error;
      }
      await sleep(pause);
    }
  }
}

/** On the global timer, not node:timers/promises: database.test.ts runs these waits on vitest's clock. */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const READ = /^\s*select\b/i;
/** Refusals further apart than this had no statement waiting between them (a waiting one tries every 100 ms at most). */
const REFUSALS_APART_MS = 1_000;
