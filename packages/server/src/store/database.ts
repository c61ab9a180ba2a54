import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import {
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  sql,
  SqliteDialect,
  type RawBuilder,
  type Transaction,
} from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
import type { DB } from './schema.js';

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
  close(): Promise<void>;
}

/** A PostgreSQL LISTEN under way (Database.watch). */
export interface Watch {
  /**
   * Resolves once every notification committed before the call has been reported to the watcher
   * (or the watcher was told it is deaf). A notification reaches a listener asynchronously, after
   * the notifying commit has returned: a request that arrives on the heels of a change made
   * elsewhere can come before it. This is one round trip (an empty statement) on the listening
   * connection, begun after the call (calls made meanwhile share the next one): PostgreSQL (14
   * and later) sends a listener every notification already committed before the ReadyForQuery
   * that ends a statement.
   */
  caughtUp(): Promise<void>;
  stop(): void;
}

/** What a PostgreSQL LISTEN tells its watcher. */
export interface ChannelWatcher {
  /** Listening (again): every transaction that notifies from now on is reported. */
  listening(): void;
  /** A notification arrived: some transaction committed a change. */
  notified(): void;
  /** No longer listening (connection lost, or stopped): notifications may go unreported until listening() again. */
  deaf(): void;
}

const RELISTEN_AFTER_MS = 1_000;
/** application_name of the connections that LISTEN. */
export const LISTENER_APPLICATION_NAME = 'engram-listener';
/** How the payload of a listening connection's probe begins (a test can tell one pass by). */
export const LISTENER_PROBE_PREFIX = 'probe ';
const LISTENER_TIMEOUT_MS = 5_000;

/**
 * The database's listening connection: every watched channel is LISTENed on over it, so that a
 * catch-up, one empty statement, covers every channel at once.
 */
function listener(url: string, probe: (channel: string, payload: string) => Promise<unknown>) {
  const watchers = new Map<string, Set<ChannelWatcher>>();
  const everyWatcher = () => [...watchers.values()].flatMap((set) => [...set]);
  let current: { client: pg.Client; lose: () => void; ready: boolean; probePayload: string } | undefined;
  let retry: NodeJS.Timeout | undefined;
  // LISTEN, then a probe through the pool: once it comes back here, the channel's watchers hear every later commit.
  const listen = (connection: NonNullable<typeof current>, channel: string) =>
    connection.client
      .query(`LISTEN ${pg.escapeIdentifier(channel)}`)
      .then(() => probe(channel, connection.probePayload))
      .catch(connection.lose);
  const connect = () => {
    retry = undefined;
    // Named, so that an operator (and a test) can tell it from the pool's connections. A statement
    // unanswered for LISTENER_TIMEOUT_MS loses the connection (a network that went silent), so that
    // requests waiting to catch up fall back to looking their key up instead of waiting on it.
    const own = new pg.Client({
      connectionString: url,
      application_name: LISTENER_APPLICATION_NAME,
      query_timeout: LISTENER_TIMEOUT_MS,
    });
    let lost = false;
    const lose = () => {
      if (lost) return;
      lost = true;
      own.end().catch(() => {});
      // A connection ended because nothing is watched any more is no one's loss.
      if (current?.client !== own) return;
      current = undefined;
      for (const watcher of everyWatcher()) watcher.deaf();
      if (watchers.size > 0) (retry = setTimeout(connect, RELISTEN_AFTER_MS)).unref();
    };
    const connection = {
      client: own,
      lose,
      ready: false,
      probePayload: `${LISTENER_PROBE_PREFIX}${randomBytes(12).toString('hex')}`,
    };
    current = connection;
    own.on('error', lose);
    own.on('end', lose);
    own.on('notification', (message) => {
      if (lost) return;
      for (const watcher of watchers.get(message.channel) ?? []) {
        if (message.payload === connection.probePayload) watcher.listening();
        else watcher.notified();
      }
    });
    own
      .connect()
      .then(() => {
        connection.ready = true;
        for (const channel of watchers.keys()) void listen(connection, channel);
      })
      .catch(lose);
  };

  // The round trip under way, and the one that callers arriving meanwhile wait for.
  let inFlight: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const roundTrip = async (): Promise<void> => {
    const listening = current;
    if (!listening?.ready) return; // deaf: the watchers forgot everything when told so
    // An empty statement: nothing to parse or plan, and still a ReadyForQuery after it. A failed
    // round trip may not end the connection by itself: it is lost, and the watchers told.
    await listening.client.query('').catch(listening.lose);
  };
  const caughtUp = (): Promise<void> => {
    if (!inFlight) return (inFlight = roundTrip().finally(() => (inFlight = undefined)));
    return (next ??= inFlight.then(() => {
      next = undefined;
      return caughtUp();
    }));
  };
  const unwatch = (channel: string, watcher: ChannelWatcher) => {
    const set = watchers.get(channel);
    if (!set?.delete(watcher)) return;
    if (set.size === 0) watchers.delete(channel);
    watcher.deaf();
    if (watchers.size > 0) return;
    // Nothing left to listen for.
    clearTimeout(retry);
    retry = undefined;
    const listening = current;
    current = undefined;
    listening?.client.end().catch(() => {});
  };
  return {
    watch: (channel: string, watcher: ChannelWatcher): Watch => {
      let set = watchers.get(channel);
      if (!set) watchers.set(channel, (set = new Set()));
      set.add(watcher);
      if (current?.ready) void listen(current, channel);
      else if (!current && !retry) connect();
      return { caughtUp, stop: () => unwatch(channel, watcher) };
    },
    stopAll: () => {
      for (const [channel, set] of [...watchers]) for (const watcher of [...set]) unwatch(channel, watcher);
    },
  };
}

/**
 * A timestamptz as PostgreSQL writes it in a UTC session ("2023-05-08 13:56:01.5+00"), as
 * `new Date(value).toISOString()` gives it, by rearranging the text: a query's rows carry two each,
 * and parsing them into dates cost 8 times as much. Any other form (another time zone, a year
 * outside 1000-9999, which Date reads differently) goes through Date.
 */
const UTC_TIMESTAMP = /^([1-9]\d{3}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?\+00$/;
export function timestamptzToIso(value: string): string {
  const utc = UTC_TIMESTAMP.exec(value);
  if (!utc) return new Date(value).toISOString();
  // Date keeps the first three digits of the fraction, dropping the rest.
  return `${utc[1]}T${utc[2]}.${(utc[3] ?? '').padEnd(3, '0').slice(0, 3)}Z`;
}

/** PostgreSQL values come back in the same shapes SQLite gives: numbers and RFC 3339 strings. */
function postgresTypes(): pg.CustomTypesConfig {
  const parsers: Record<number, (value: string) => unknown> = {
    20: (v) => Number(v), // int8 (ids, counts): our ids stay far below 2^53
    1700: (v) => Number(v), // numeric
    1184: timestamptzToIso, // timestamptz
    1114: (v) => new Date(`${v}Z`).toISOString(), // timestamp
  };
  return {
    getTypeParser: ((oid: number, format?: string) =>
      parsers[oid] ?? pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
  };
}

/**
 * Whether `url` leads to a transaction-mode pooler (PgBouncer's pool_mode=transaction), which hands
 * each transaction of a client connection to whichever server connection is free: then nothing a
 * session keeps (a prepared statement, a LISTEN, a session lock) lasts past the transaction that
 * made it. Two connections of the probe's own: one reads its backend, the other holds a transaction
 * open and reads its own, and the first reads its backend again meanwhile. Directly, each connection
 * is one backend throughout; through such a pooler the held transaction is given the backend the
 * first just released (PgBouncer reuses the last one freed), or the first is given another.
 */
export async function sessionsPooled(url: string): Promise<boolean> {
  const [first, second] = [0, 1].map(
    () => new pg.Client({ connectionString: url, application_name: 'engram-pooler-probe' }),
  );
  for (const client of [first!, second!]) client.on('error', () => {});
  try {
    await Promise.all([first!.connect(), second!.connect()]);
    const backend = async (client: pg.Client) =>
      (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const before = await backend(first!);
    await second!.query('BEGIN');
    const held = await backend(second!);
    // Not awaited before the COMMIT: a pooler with one server connection gives it only then.
    const after = backend(first!);
    await second!.query('COMMIT').finally(() => after.catch(() => {}));
    const again = await after;
    return held === before || again !== before;
  } finally {
    await Promise.all([first!.end().catch(() => {}), second!.end().catch(() => {})]);
  }
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
  // Group commit (core/unit-of-work.ts) runs each write of a group in a savepoint, and SQLite copies
  // every page a savepoint changes again into a sub-journal, a temporary file past 64 KiB: a write
  // syscall per page. Kept in memory, it halved the system CPU of a SQLite add at 16 clients. Other
  // temporary data (sorts without an index) is held in memory too, as the retrieval indexes are.
  sqlite.pragma('temp_store = MEMORY');
  sqlite.pragma('foreign_keys = ON');
  // Deleted and overwritten content is zeroed in its page, so a forgotten memory's text does not linger in
  // free pages and free space of the file (bench/README.md: its cost on writes).
  sqlite.pragma('secure_delete = ON');
  // Should the checkpointer's thread fail, the serving connection checkpoints as SQLite does by default.
  const checkpointer = checkpoints
    ? startCheckpointer(config.path, () => void (sqlite.open && sqlite.pragma('wal_autocheckpoint = 1000')))
    : null;
  if (checkpointer) sqlite.pragma(`wal_autocheckpoint = ${CHECKPOINT_BOUND_PAGES}`);
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
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
    close: async () => {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}

const SQLITE_BUSY_TIMEOUT_MS = 5_000;
/** The WAL size (pages) at which the serving connection checkpoints itself, should the checkpointer fall behind. */
const CHECKPOINT_BOUND_PAGES = 10_000;
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
 * None for an in-memory database, which no other connection can open.
 */
function startCheckpointer(path: string, failed: () => void): { truncate(): void; stop(): Promise<void> } | null {
  if (!opensAgain({ dialect: 'sqlite', path })) return null;
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
 * SQL true when the text of `column` (text or JSON) contains `needle`, a plain string (no pattern characters):
 * for finding the stored JSON that names a removed end user (their id JSON-encoded, quotes included).
 */
export function containsText(db: Executor, column: string, needle: string): RawBuilder<boolean> {
  return db.getExecutor().adapter instanceof PostgresAdapter
    ? sql<boolean>`strpos(CAST(${sql.ref(column)} AS TEXT), ${needle}) > 0`
    : sql<boolean>`instr(${sql.ref(column)}, ${needle}) > 0`;
}

/** A constant string as an SQL literal, for statements of fixed text that hold no request's values (core/unit-of-work.ts#groupedInsert). */
export const sqlLiteral = (value: string) => `'${value.replace(/'/g, "''")}'`;

/**
 * Marks the last statement of a transaction (core/unit-of-work.ts): with named statements on, its
 * COMMIT is sent right behind it (pipeline mode), one round trip for both, and the COMMIT Kysely
 * sends next is answered by that one. Should the statement fail, that COMMIT ends the aborted
 * transaction as a rollback, and the statement's error is what the caller sees.
 */
export const LAST_IN_TRANSACTION = '/* last in transaction */ ';

/**
 * node-pg sends unnamed statements, which PostgreSQL parses and plans on every execution (for the
 * small statements of a write, planning costs more than running them). Statements with parameters
 * are sent named instead, one name per SQL text, so each connection prepares a text once; the first
 * `limit` texts only (texts vary with list lengths, and each prepared one holds server memory).
 * A prepared statement whose table changed shape under it (another process migrated) fails with
 * 0A000; its text then gets a fresh name, so it is prepared anew: at once outside a transaction,
 * while a transaction it broke fails (it is aborted) and the next one prepares it.
 * Whether to name at all is decided before the pool's first statement (`decide`: by default, not
 * behind a transaction-mode pooler, whose server connections keep another client's statements and
 * lack this one's), and again by the server: a statement answered 26000 (no such prepared statement)
 * or 42P05 (already exists) met such a pooler, and from then on nothing is named (the statement is
 * sent again unnamed outside a transaction; a transaction it broke fails, 503, and is retried).
 * Names carry a tag drawn for the pool, so that two processes' statements never share a name. Off,
 * with pipelining, with ENGRAM_DATABASE_PREPARED_STATEMENTS=false.
 */
function withNamedStatements(pool: pg.Pool, decide: () => Promise<boolean>, limit = 300): pg.Pool {
  const names = new Map<string, string>();
  const tag = randomBytes(4).toString('hex');
  let issued = 0;
  let naming: boolean | undefined;
  const nameOf = (text: string) => {
    if (!naming) return undefined;
    let name = names.get(text);
    if (name === undefined && names.size < limit) names.set(text, (name = `engram_${tag}_${++issued}`));
    return name;
  };
  const clients = new WeakMap<pg.PoolClient, pg.PoolClient>();
  const named = (client: pg.PoolClient): pg.PoolClient => {
    let inTransaction = false;
    // A BEGIN is not sent when asked for: it goes out with the transaction's first statement, in
    // the same socket write (pipeline mode), one round trip for both; that statement's answer waits
    // for the BEGIN's, and fails if it failed. A transaction that sends nothing sends no BEGIN.
    let unsentBegin: string | undefined;
    let begun: Promise<unknown> | undefined;
    let committing: Promise<pg.QueryResult> | undefined;
    const connection = client as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } };
    /**
     * Sends the statement `send` submits with the BEGIN waiting before it and the COMMIT that may
     * follow it, as one socket write: in this 2-core VM a socket write costs the server ~70 µs and
     * wakes the backend once more, and node-pg writes each statement on its own.
     */
    const inOneWrite = (text: unknown, send: () => Promise<pg.QueryResult>): Promise<pg.QueryResult> => {
      const stream = connection.connection?.stream;
      stream?.cork?.();
      try {
        if (unsentBegin !== undefined) {
          begun = client.query(unsentBegin);
          begun.catch(() => {}); // reported by the statement that follows it
          unsentBegin = undefined;
        }
        return afterBegin(thenCommit(text, send()));
      } finally {
        stream?.uncork?.();
      }
    };
    const thenCommit = (text: unknown, result: Promise<pg.QueryResult>): Promise<pg.QueryResult> => {
      if (!inTransaction || typeof text !== 'string' || !text.startsWith(LAST_IN_TRANSACTION)) return result;
      committing = client.query('commit');
      committing.catch(() => {}); // awaited by the COMMIT that follows, or by the ROLLBACK after a failure
      return result;
    };
    const afterBegin = (result: Promise<pg.QueryResult>): Promise<pg.QueryResult> => {
      if (!begun) return result;
      const begin = begun;
      begun = undefined;
      return Promise.all([begin, result]).then(([, r]) => r);
    };
    const run = async (text: string, values: unknown[], retry: boolean): Promise<pg.QueryResult> => {
      const name = nameOf(text);
      if (name === undefined) return client.query(text, values);
      try {
        return await client.query({ name, text, values });
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code === POOLER_LOST_STATEMENT || code === POOLER_DUPLICATE_STATEMENT) {
          naming = false;
          names.clear();
          if (inTransaction) throw error;
          return client.query(text, values);
        }
        if (code !== '0A000') throw error;
        if (names.get(text) === name) names.delete(text);
        if (!retry || inTransaction) throw error;
        return run(text, values, false);
      }
    };
    const noCommand = (command: string) =>
      ({ command, rowCount: null, rows: [], fields: [], oid: 0 }) as unknown as pg.QueryResult;
    return Object.assign(Object.create(client) as pg.PoolClient, {
      query: (text: unknown, values?: unknown[]) => {
        if (typeof text !== 'string' || !values || values.length === 0) {
          if (typeof text === 'string') {
            const statement = text.trim().toLowerCase();
            if (statement.startsWith('begin') || statement.startsWith('start transaction')) {
              inTransaction = true;
              unsentBegin = text;
              return Promise.resolve(noCommand('BEGIN'));
            }
            if (statement === 'commit' || statement === 'rollback') {
              inTransaction = false;
              // Nothing was sent since the BEGIN: there is no transaction to end.
              if (unsentBegin !== undefined) {
                unsentBegin = undefined;
                return Promise.resolve(noCommand(statement === 'commit' ? 'COMMIT' : 'ROLLBACK'));
              }
              const sent = committing;
              committing = undefined;
              if (sent && statement === 'commit') return sent;
              if (sent) return sent.then(() => noCommand('ROLLBACK'));
            }
          }
          return inOneWrite(text, () => client.query(text as string, values));
        }
        return inOneWrite(text, () => run(text, values, true));
      },
      release: (error?: Error | boolean) => client.release(error),
    });
  };
  return Object.assign(Object.create(pool) as pg.Pool, {
    connect: async () => {
      naming ??= await decide();
      const client = await pool.connect();
      let wrapped = clients.get(client);
      if (!wrapped) clients.set(client, (wrapped = named(client)));
      return wrapped;
    },
    end: () => pool.end(),
  });
}

/** What a statement named on one server connection meets on another: 26000 (no such prepared statement), 42P05 (one of that name exists). */
const POOLER_LOST_STATEMENT = '26000';
const POOLER_DUPLICATE_STATEMENT = '42P05';

/**
 * Kysely prepares every statement anew; preparing is a measurable share of a small write, so
 * statements are kept by SQL text (bounded) and reused. better-sqlite3 runs them synchronously,
 * so a cached statement is never in use twice at once (Kysely's streaming `iterate`, which could
 * hold one open, is not used).
 */
function withStatementCache(sqlite: BetterSqlite3.Database, limit = 500): BetterSqlite3.Database {
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
        statement = prepared.reader ? withRowsBuiltInJs(prepared) : prepared;
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
 */
function withRowsBuiltInJs(statement: BetterSqlite3.Statement): BetterSqlite3.Statement {
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
      if (rows.length > 0 && rows[0]!.length !== columns.length) build = builderFor((columns = names()));
      return rows.map(build);
    },
    run: (...parameters: unknown[]) => statement.run(...parameters),
  };
  return reading as unknown as BetterSqlite3.Statement;
}

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
