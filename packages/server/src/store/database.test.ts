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
