import { sql } from 'kysely';
import { readdirSync, statSync } from 'node:fs';
import { expect, it, vi } from 'vitest';
import { freshDatabaseConfig } from '../testing/harness.js';
import { holdSqliteWriteLock } from '../testing/faults.js';
import { watchSocketWrites } from '../testing/socket-writes.js';
import { until } from '../testing/until.js';
import { type Database, openDatabase, postgresArray } from './database.js';
import { LOCK_ATTEMPT_MS, SQLITE_BUSY_TIMEOUT_MS } from './sqlite-connection.js';
import { LAST_IN_TRANSACTION, timestamptzToIso } from './postgres-connections.js';

/** A kill -9 test cannot see a lost fsync (the OS still writes the page cache), so the settings are asserted. */
it('runs SQLite in WAL mode with synchronous=FULL, so a commit is on disk before it is acknowledged', async () => {
  const fresh = await freshDatabaseConfig('sqlite');
  const database = openDatabase(fresh.config);
  try {
    const pragma = async (name: string) =>
      Object.values((await sql.raw(`PRAGMA ${name}`).execute(database.db)).rows[0] as object)[0];
    expect(await pragma('journal_mode')).toBe('wal');
    expect(await pragma('synchronous')).toBe(2); // FULL
    expect(await pragma('foreign_keys')).toBe(1);
    expect(await pragma('cache_size')).toBe(-65536); // 64 MiB: an import's transaction stays in it
  } finally {
    await database.close();
    await fresh.drop();
  }
});

/**
 * Checkpoints run on the checkpointer's connection, not inside a serving COMMIT: the serving
 * connection would checkpoint only at 10,000 WAL pages, yet the pages written land in the database
 * file on their own; and closing the database ends the checkpointer's thread.
 */
it('checkpoints the SQLite WAL from a thread of its own', async () => {
  const fresh = await freshDatabaseConfig('sqlite');
  const database = openDatabase(fresh.config);
  const path = fresh.config.dialect === 'sqlite' ? fresh.config.path : '';
  try {
    const pragma = async (name: string) =>
      Object.values((await sql.raw(`PRAGMA ${name}`).execute(database.db)).rows[0] as object)[0];
    expect(await pragma('wal_autocheckpoint')).toBe(10_000);
    await sql`CREATE TABLE filler (body TEXT NOT NULL)`.execute(database.db);
    const before = statSync(path).size;
    // About 2 MB in 200 commits: 500 WAL pages, half the serving connection's old checkpoint point.
    for (let i = 0; i < 200; i++)
      await sql`INSERT INTO filler VALUES (${`${i}`.padEnd(10_000, 'x')})`.execute(database.db);
    await until(
      () => statSync(path).size >= before + 2_000_000,
      'the checkpointer to copy the WAL into the database file',
      10_000,
    );
    const threads = () => readdirSync('/proc/self/task').length;
    const running = threads();
    await database.close();
    expect(threads()).toBeLessThan(running);
  } finally {
    await database.close().catch(() => {});
    await fresh.drop();
  }
});

/**
 * PostgreSQL statements with parameters are sent named (prepared once per connection). A table that
 * changes shape under a prepared `SELECT *` (another process migrating) must not break the process:
 * outside a transaction the statement is prepared anew at once; a transaction it broke fails, and
 * the next one works.
 */
it.skipIf(!process.env.ENGRAM_TEST_DATABASE_URL)(
  're-prepares a named PostgreSQL statement whose table changed shape',
  async () => {
    const fresh = await freshDatabaseConfig('postgres');
    const database = openDatabase({ ...fresh.config, poolSize: 1 } as typeof fresh.config);
    try {
      await sql`CREATE TABLE shapes (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`.execute(database.db);
      await sql`INSERT INTO shapes VALUES (1, 'one')`.execute(database.db);
      const read = (executor: typeof database.db) =>
        sql<Record<string, unknown>>`SELECT * FROM shapes WHERE id = ${1}`.execute(executor);
      expect((await read(database.db)).rows).toEqual([{ id: 1, name: 'one' }]);
      expect((await read(database.db)).rows).toEqual([{ id: 1, name: 'one' }]);
      // The same text, sent unnamed, would not notice; prepared, it would fail with 0A000 without the fresh name.
      await sql`ALTER TABLE shapes ADD COLUMN colour TEXT`.execute(database.db);
      expect((await read(database.db)).rows).toEqual([{ id: 1, name: 'one', colour: null }]);

      await sql`ALTER TABLE shapes ADD COLUMN size INTEGER`.execute(database.db);
      await expect(database.db.transaction().execute((trx) => read(trx))).rejects.toMatchObject({ code: '0A000' });
      expect((await database.db.transaction().execute((trx) => read(trx))).rows).toEqual([
        { id: 1, name: 'one', colour: null, size: null },
      ]);
    } finally {
      await database.close();
      await fresh.drop();
    }
  },
);

it.skipIf(!process.env.ENGRAM_TEST_DATABASE_URL)(
  'postgresArray: PostgreSQL reads its literal back as the values given (quotes, backslashes, braces, NULL, empty, control characters, booleans)',
  async () => {
    const fresh = await freshDatabaseConfig('postgres');
    const database = openDatabase(fresh.config);
    try {
      // Without control characters or lone surrogates JSON writes the literal; with them (the second), the loop.
      const plain = [
        'plain',
        'say "hi"',
        'back\\slash\\',
        '{a,b}',
        '{"k": ["v"]}',
        '',
        'NULL',
        null,
        'ünï 😀',
        'a\u007fb',
      ];
      for (const texts of [plain, [...plain, 'new\nline, comma', 'tab\there', 'lone \ud800 surrogate']]) {
        const read = await sql<{
          value: string | null;
        }>`SELECT unnest(${postgresArray(texts)}::text[]) AS value`.execute(database.db);
        expect(read.rows.map((r) => r.value)).toEqual(texts.map((t) => t?.replace('\ud800', '\ufffd') ?? null));
      }
      const flags = await sql<{
        value: boolean | null;
      }>`SELECT unnest(${postgresArray([true, false, null])}::boolean[]) AS value`.execute(database.db);
      expect(flags.rows.map((r) => r.value)).toEqual([true, false, null]);
      const numbers = await sql<{
        value: number;
      }>`SELECT unnest(${postgresArray([0.5, 1e-7, -3])}::float8[]) AS value`.execute(database.db);
      expect(numbers.rows.map((r) => r.value)).toEqual([0.5, 1e-7, -3]);
    } finally {
      await database.close();
      await fresh.drop();
    }
  },
);

/**
 * In this 2-core VM a socket write costs the server tens of microseconds and wakes the backend
 * once more, so a PostgreSQL transaction sends its BEGIN with its first statement and its last
 * statement (LAST_IN_TRANSACTION) with its COMMIT, one write each; one that sends nothing sends no
 * BEGIN, and a SET LOCAL before the first statement waits with the BEGIN. Counted on the pool's
 * real socket: every write to the database's port while it runs.
 */
it.skipIf(!process.env.ENGRAM_TEST_DATABASE_URL)(
  'sends a PostgreSQL BEGIN with the first statement and the COMMIT with the last, one socket write each',
  async () => {
    const fresh = await freshDatabaseConfig('postgres');
    const database = openDatabase({ ...fresh.config, poolSize: 1 } as typeof fresh.config);
    const port = Number(new URL((fresh.config as { url: string }).url).port || 5432);
    let watching: ReturnType<typeof watchSocketWrites> | undefined;
    try {
      await sql`CREATE TABLE pipelined (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`.execute(database.db);
      await sql`SELECT ${1}::int AS warm`.execute(database.db);
      watching = watchSocketWrites(port);
      const { written } = watching;

      await database.db.transaction().execute(async (trx) => {
        await sql`INSERT INTO pipelined VALUES (${1}, ${'one'})`.execute(trx);
        await sql`INSERT INTO pipelined VALUES (${2}, ${'two'})`.execute(trx);
        await sql.raw(`${LAST_IN_TRANSACTION}INSERT INTO pipelined VALUES (3, 'three')`).execute(trx);
      });
      expect(written).toHaveLength(3); // BEGIN + the first; the second; the third + COMMIT
      expect((await sql<{ n: number }>`SELECT count(*)::int AS n FROM pipelined`.execute(database.db)).rows[0]!.n).toBe(
        3,
      );

      written.length = 0;
      expect(await database.db.transaction().execute(async () => 'nothing sent')).toBe('nothing sent');
      expect(written).toEqual([]);

      // A first statement that fails, sent with its BEGIN: its own error, nothing of the transaction kept, the connection usable.
      await expect(
        database.db.transaction().execute(async (trx) => {
          await sql`INSERT INTO pipelined VALUES (${1}, ${'again'})`.execute(trx);
        }),
      ).rejects.toMatchObject({ code: '23505' });
      await expect(
        database.db.transaction().execute(async (trx) => {
          await sql`INSERT INTO pipelined VALUES (${4}, ${'four'})`.execute(trx);
          await sql.raw(`${LAST_IN_TRANSACTION}INSERT INTO pipelined VALUES (1, 'duplicate')`).execute(trx);
        }),
      ).rejects.toMatchObject({ code: '23505' });
      expect(
        (await sql<{ id: number }>`SELECT id FROM pipelined ORDER BY id`.execute(database.db)).rows.map((r) => r.id),
      ).toEqual([1, 2, 3]);

      // A SET LOCAL before the first statement goes out with it and the BEGIN; when it fails, its error is the one seen.
      written.length = 0;
      const setting = await database.db.transaction().execute(async (trx) => {
        await sql`SET LOCAL enable_sort = off`.execute(trx);
        return (await sql.raw<{ enable_sort: string }>(`${LAST_IN_TRANSACTION}SHOW enable_sort`).execute(trx)).rows;
      });
      expect(setting).toEqual([{ enable_sort: 'off' }]);
      expect(written).toHaveLength(1);
      await expect(
        database.db.transaction().execute(async (trx) => {
          await sql`SET LOCAL enable_sort = sideways`.execute(trx);
          await sql`INSERT INTO pipelined VALUES (${5}, ${'five'})`.execute(trx);
        }),
      ).rejects.toMatchObject({ code: '22023' });
      expect((await sql<{ n: number }>`SELECT count(*)::int AS n FROM pipelined`.execute(database.db)).rows[0]!.n).toBe(
        3,
      );
    } finally {
      watching?.stop();
      await database.close();
      await fresh.drop();
    }
  },
);

/**
 * SQLite rows are built from raw arrays (store/sqlite-connection.ts#withRowsBuiltInJs): the same objects as
 * better-sqlite3's, a repeated name keeping its last value, and still right after a migration
 * changed the shape of the table a kept statement reads.
 */
it('builds SQLite rows as better-sqlite3 would, across changes of the schema', async () => {
  const fresh = await freshDatabaseConfig('sqlite');
  const database = openDatabase(fresh.config);
  try {
    await sql`CREATE TABLE shapes (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`.execute(database.db);
    await sql`INSERT INTO shapes VALUES (1, 'one'), (2, 'two')`.execute(database.db);
    const read = () =>
      sql<Record<string, unknown>>`SELECT * FROM shapes WHERE id >= ${1} ORDER BY id`.execute(database.db);
    expect((await read()).rows).toEqual([
      { id: 1, name: 'one' },
      { id: 2, name: 'two' },
    ]);
    expect(Object.keys((await read()).rows[0]!)).toEqual(['id', 'name']);
    // better-sqlite3 assigns each column in turn: the last of a name wins, and __proto__ (a number) sets nothing.
    const repeated = await sql<
      Record<string, unknown>
    >`SELECT id AS "__proto__", name AS x, id AS x FROM shapes WHERE id = ${2}`.execute(database.db);
    expect(repeated.rows).toEqual([{ x: 2 }]);
    expect(Object.getOwnPropertyNames(repeated.rows[0])).toEqual(['x']);
    expect(Object.getPrototypeOf(repeated.rows[0])).toBe(Object.prototype);
    await sql`ALTER TABLE shapes ADD COLUMN colour TEXT`.execute(database.db);
    expect((await read()).rows).toEqual([
      { id: 1, name: 'one', colour: null },
      { id: 2, name: 'two', colour: null },
    ]);
    expect(
      (await sql`INSERT INTO shapes (id, name) VALUES (${3}, 'three') RETURNING id, name`.execute(database.db)).rows,
    ).toEqual([{ id: 3, name: 'three' }]);
  } finally {
    await database.close();
    await fresh.drop();
  }
});

it('reads PostgreSQL timestamptz text as Date would, without Date where it can', () => {
  for (const value of [
    '2023-05-08 13:56:01+00',
    '2023-05-08 13:56:01.5+00',
    '2023-05-08 13:56:01.123456+00',
    '2024-02-29 23:59:59.9999+00',
  ]) {
    expect(timestamptzToIso(value)).toBe(new Date(value).toISOString());
  }
  // Forms left to Date: another offset, and years Date reads its own way.
  expect(timestamptzToIso('2023-05-08 15:56:01.25+02')).toBe('2023-05-08T13:56:01.250Z');
  expect(timestamptzToIso('0099-01-01 00:00:00+00')).toBe(new Date('0099-01-01 00:00:00+00').toISOString());
});

/**
 * Another process holding SQLite's write lock must not stop this one: a transaction waits for the lock
 * between short attempts, so a timer set after the transaction started fires before it ends (with
 * busy_timeout alone, `begin immediate` blocked the event loop until the lock was free), and the
 * transaction still commits once the lock is released.
 */
it('waits for another process’s SQLite write lock without blocking the event loop', () =>
  withMarks(async (database, path) => {
    const lock = await holdSqliteWriteLock(path, 60_000);
    const order: string[] = [];
    const write = mark(database, 1).then(() => order.push('write'));
    // The lock is let go once the timer has fired (not after a time a busy machine could outlast): with the event
    // loop held by the write, the timer could not fire, and the write would be refused when its wait ran out.
    await new Promise<void>((resolve) => setTimeout(resolve, 50)).then(() => order.push('timer'));
    await lock.release();
    await write;
    expect(order).toEqual(['timer', 'write']);
    expect(await marks(database)).toBe(1);
    const busy = await sql.raw('PRAGMA busy_timeout').execute(database.db);
    expect(Object.values(busy.rows[0] as object)[0]).toBe(LOCK_ATTEMPT_MS);
  }));

/**
 * Writes queued behind one another on the connection share one wait: once the lock has been refused for the busy
 * timeout, the writes still queued are refused at their first attempt rather than each waiting the timeout anew (a
 * queue of background statements and requests then waited 5 s apiece: one CI run saw a write unanswered for 30 s).
 * A write that gets the lock starts the clock again.
 */
it(
  'writes queued behind another process’s write lock are refused together after one busy timeout',
  () =>
    withMarks(async (database, path) => {
      const lock = await holdSqliteWriteLock(path, 60_000);
      // The waits between attempts, and the clock they are counted on, are vitest's (each attempt still blocks for
      // up to LOCK_ATTEMPT_MS of real time, which this clock does not count): a busy machine cannot move them.
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      try {
        const started = performance.now();
        const ended: Array<{ after: number; code: unknown }> = [];
        const writes = [1, 2, 3, 4].map((n) =>
          mark(database, n).then(
            () => ended.push({ after: performance.now() - started, code: 'committed' }),
            (error: { code?: unknown }) => ended.push({ after: performance.now() - started, code: error.code }),
          ),
        );
        await vi.advanceTimersByTimeAsync(5 * SQLITE_BUSY_TIMEOUT_MS);
        await Promise.all(writes);
        expect(ended.map((e) => e.code)).toEqual(['SQLITE_BUSY', 'SQLITE_BUSY', 'SQLITE_BUSY', 'SQLITE_BUSY']);
        // One timeout for the four, not four in turn (the last refused after 20 s): the last refused within the
        // longest pause between attempts (100 ms) of the first.
        for (const { after } of ended) expect(after).toBeGreaterThanOrEqual(SQLITE_BUSY_TIMEOUT_MS);
        expect(Math.max(...ended.map((e) => e.after))).toBeLessThanOrEqual(SQLITE_BUSY_TIMEOUT_MS + 100);
        // A write coming after a pause gets a timeout of its own (the lock still held): it waits, and commits once
        // the lock is released.
        await vi.advanceTimersByTimeAsync(1_500);
        let fifthEnded = false;
        const fifth = mark(database, 5).finally(() => (fifthEnded = true));
        await vi.advanceTimersByTimeAsync(1_000);
        expect(fifthEnded).toBe(false);
        await lock.release();
        await vi.advanceTimersByTimeAsync(200);
        await fifth;
      } finally {
        vi.useRealTimers();
      }
      expect(await marks(database)).toBe(1);
    }),
  40_000,
);

/** A fresh SQLite database with a table of marks, closed and dropped after `run`. */
async function withMarks(run: (database: Database, path: string) => Promise<void>) {
  const fresh = await freshDatabaseConfig('sqlite');
  const database = openDatabase(fresh.config);
  try {
    await sql`CREATE TABLE marks (at INTEGER NOT NULL)`.execute(database.db);
    await run(database, fresh.config.dialect === 'sqlite' ? fresh.config.path : '');
  } finally {
    await database.close();
    await fresh.drop();
  }
}

/** A mark written in a transaction of its own (a `begin immediate`, which meets another process's write lock). */
const mark = (database: Database, at: number) =>
  database.db.transaction().execute((trx) => sql`INSERT INTO marks (at) VALUES (${at})`.execute(trx));

async function marks(database: Database): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM marks`.execute(database.db);
  return Number(rows[0]!.n);
}
