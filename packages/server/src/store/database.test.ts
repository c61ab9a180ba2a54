import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { freshDatabaseConfig } from '../testing/harness.js';
import { openDatabase } from './database.js';

/** A kill -9 test cannot see a lost fsync (the OS still writes the page cache), so the settings are asserted. */
it('runs SQLite in WAL mode with synchronous=FULL, so a commit is on disk before it is acknowledged', async () => {
  const fresh = await freshDatabaseConfig('sqlite');
  const database = openDatabase(fresh.config);
  try {
    const pragma = async (name: string) => Object.values((await sql.raw(`PRAGMA ${name}`).execute(database.db)).rows[0] as object)[0];
    expect(await pragma('journal_mode')).toBe('wal');
    expect(await pragma('synchronous')).toBe(2); // FULL
    expect(await pragma('foreign_keys')).toBe(1);
  } finally {
    await database.close();
    await fresh.drop();
  }
});

/**
 * PostgreSQL statements with parameters are sent named (prepared once per connection). A table that
 * changes shape under a prepared `SELECT *` (another process migrating) must not break the process:
 * outside a transaction the statement is prepared anew at once; a transaction it broke fails, and
 * the next one works.
 */
it.skipIf(!process.env.ENGRAM_TEST_DATABASE_URL)('re-prepares a named PostgreSQL statement whose table changed shape', async () => {
  const fresh = await freshDatabaseConfig('postgres');
  const database = openDatabase({ ...fresh.config, poolSize: 1 } as typeof fresh.config);
  try {
    await sql`CREATE TABLE shapes (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`.execute(database.db);
    await sql`INSERT INTO shapes VALUES (1, 'one')`.execute(database.db);
    const read = (executor: typeof database.db) => sql<Record<string, unknown>>`SELECT * FROM shapes WHERE id = ${1}`.execute(executor);
    expect((await read(database.db)).rows).toEqual([{ id: 1, name: 'one' }]);
    expect((await read(database.db)).rows).toEqual([{ id: 1, name: 'one' }]);
    // The same text, sent unnamed, would not notice; prepared, it would fail with 0A000 without the fresh name.
    await sql`ALTER TABLE shapes ADD COLUMN colour TEXT`.execute(database.db);
    expect((await read(database.db)).rows).toEqual([{ id: 1, name: 'one', colour: null }]);

    await sql`ALTER TABLE shapes ADD COLUMN size INTEGER`.execute(database.db);
    await expect(database.db.transaction().execute((trx) => read(trx))).rejects.toMatchObject({ code: '0A000' });
    expect((await database.db.transaction().execute((trx) => read(trx))).rows).toEqual([{ id: 1, name: 'one', colour: null, size: null }]);
  } finally {
    await database.close();
    await fresh.drop();
  }
});
