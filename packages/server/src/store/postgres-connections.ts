import pg from 'pg';
import { randomBytes } from 'node:crypto';

/** PostgreSQL connections as openDatabase sets them up: value types, the pooler probe, named statements and pipelined BEGIN/COMMIT. */

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
export function postgresTypes(): pg.CustomTypesConfig {
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
 * Whether `url` leads to a connection pooler (PgBouncer, and any pooler that hands a client's
 * transactions to whichever server connection is free): then nothing a session keeps (a prepared
 * statement, a LISTEN, a session lock) may be relied on past the transaction that made it. At connect
 * PostgreSQL tells a client its backend's pid (BackendKeyData, for cancelling); a pooler, which binds
 * the client to no backend, answers with a key of its own, so the pid a statement reads differs. A
 * TCP proxy passes the server's key on and is not a pooler. Deterministic, unlike comparing backends
 * across transactions, which N processes starting together through one pooler could make look direct
 * (the statements of another process take the backend the probe expected to be given). A pooler in
 * session mode counts as pooled too: statements go unnamed there, which costs speed, not correctness.
 */
export async function sessionsPooled(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, application_name: 'engram-pooler-probe' });
  client.on('error', () => {});
  try {
    await client.connect();
    const { pid } = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!;
    return (client as unknown as { processID: number | null }).processID !== pid;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Marks the last statement of a transaction (core/unit-of-work.ts): with named statements on, its
 * COMMIT is sent right behind it (pipeline mode), one round trip for both, and the COMMIT Kysely
 * sends next is answered by that one. Should the statement fail, that COMMIT ends the aborted
 * transaction as a rollback, and the statement's error is what the caller sees.
 */
export const LAST_IN_TRANSACTION = '/* last in transaction */ ';

/**
 * Marks a statement whose rows are wanted as arrays of the selected columns in order (node-pg's rowMode
 * 'array', better-sqlite3's raw rows), placed after LAST_IN_TRANSACTION when both are: no object with keys is
 * built for each row, which the caller would copy into its own at once (an export page's 1,000 rows of 16
 * columns). Honoured on SQLite (sqlite-connection.ts#withStatementCache) and on PostgreSQL with named
 * statements on (withNamedStatements); without them rows come as objects, so the caller reads either.
 */
export const ROWS_AS_ARRAYS = '/* rows as arrays */ ';
const asArrays = (text: string) =>
  text.startsWith(ROWS_AS_ARRAYS) ||
  (text.startsWith(LAST_IN_TRANSACTION) && text.startsWith(ROWS_AS_ARRAYS, LAST_IN_TRANSACTION.length));

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
export function withNamedStatements(pool: pg.Pool, decide: () => Promise<boolean>, limit = 300): pg.Pool {
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
    // for the BEGIN's, and fails if it failed. A transaction that sends nothing sends no BEGIN. A
    // SET LOCAL asked for before anything was sent waits with it (a keyset page's enable_sort = off,
    // core/paging.ts: its statement is sent at once, not after the setting's answer).
    let unsent: string[] | undefined;
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
        if (unsent !== undefined) {
          begun = Promise.all(unsent.map((statement) => client.query(statement)));
          begun.catch(() => {}); // reported by the statement that follows it
          unsent = undefined;
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
      const arrays = asArrays(text);
      const send = (config: pg.QueryConfig) =>
        (arrays ? client.query({ ...config, rowMode: 'array' }) : client.query(config)) as Promise<pg.QueryResult>;
      if (name === undefined) return send({ text, values });
      try {
        return await send({ name, text, values });
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code === POOLER_LOST_STATEMENT || code === POOLER_DUPLICATE_STATEMENT) {
          naming = false;
          names.clear();
          if (inTransaction) throw error;
          return send({ text, values });
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
              unsent = [text];
              return Promise.resolve(noCommand('BEGIN'));
            }
            if (unsent !== undefined && statement.startsWith('set local ')) {
              unsent.push(text);
              return Promise.resolve(noCommand('SET'));
            }
            if (statement === 'commit' || statement === 'rollback') {
              inTransaction = false;
              // Nothing was sent since the BEGIN: there is no transaction to end.
              if (unsent !== undefined) {
                unsent = undefined;
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
