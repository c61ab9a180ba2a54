import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql, type Transaction } from 'kysely';
import type { Database } from './database.js';
import type { DB } from './schema.js';

const migrationsDir = (dialect: string) => fileURLToPath(new URL(`./migrations/${dialect}/`, import.meta.url));

/**
 * Applies the plain-SQL migrations of the database's dialect that are not yet recorded,
 * each in its own transaction, in file-name order. Safe to run from several processes at once,
 * on an empty database too: every transaction, the one that creates schema_migrations first,
 * begins by taking the migration lock, PostgreSQL a transaction-scoped advisory lock (released by
 * its COMMIT, so a transaction-mode pooler cannot leave it held on another backend) and SQLite an
 * immediate write lock. `through`: the last file to apply (a test of one migration prepares the
 * database as the one before left it).
 */
export async function migrate(database: Database, { through }: { through?: string } = {}): Promise<string[]> {
  const { db, dialect } = database;
  const dir = migrationsDir(dialect);
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql') && (through === undefined || f <= through))
    .sort();
  const locked = async <T>(work: (trx: Transaction<DB>) => Promise<T>): Promise<T> =>
    db.transaction().execute(async (trx) => {
      await takeMigrationLock(database, trx);
      return work(trx);
    });
  await locked((trx) =>
    sql`CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`.execute(trx),
  );
  const applied: string[] = [];
  for (const file of files) {
    await locked(async (trx) => {
      const done = await sql<{ name: string }>`SELECT name FROM schema_migrations WHERE name = ${file}`.execute(trx);
      if (done.rows.length > 0) return;
      const text = readFileSync(dir + file, 'utf8');
      if (dialect === 'postgres') {
        await sql.raw(text).execute(trx);
      } else {
        // better-sqlite3 prepares one statement at a time; split on statement ends outside triggers.
        for (const statement of splitSqlite(text)) await sql.raw(statement).execute(trx);
      }
      await sql`INSERT INTO schema_migrations (name, applied_at) VALUES (${file}, ${new Date().toISOString()})`.execute(
        trx,
      );
      applied.push(file);
    });
  }
  return applied;
}

/**
 * Holds the migration lock until `trx` ends: migrations, and the first-run bootstrap (modules/org),
 * which several processes starting together on an empty database would otherwise all attempt.
 * SQLite: `begin` is sent as `begin immediate` (store/sqlite-connection.ts); a first statement makes it take effect.
 */
export async function takeMigrationLock(database: Database, trx: Transaction<DB>): Promise<void> {
  await sql.raw(database.dialect === 'postgres' ? 'SELECT pg_advisory_xact_lock(724991)' : 'SELECT 1').execute(trx);
}

/** Which migrations of this build the database has, and which it still lacks (for `engram status`); applies none. */
export async function migrationStatus(database: Database): Promise<{ applied: string[]; pending: string[] }> {
  const files = readdirSync(migrationsDir(database.dialect))
    .filter((f) => f.endsWith('.sql'))
    .sort();
  let recorded: string[] = [];
  try {
    recorded = (await sql<{ name: string }>`SELECT name FROM schema_migrations`.execute(database.db)).rows.map(
      (r) => r.name,
    );
  } catch {
    // No schema_migrations table yet: nothing applied.
  }
  const done = new Set(recorded);
  return { applied: files.filter((f) => done.has(f)), pending: files.filter((f) => !done.has(f)) };
}

function splitSqlite(text: string): string[] {
  const statements: string[] = [];
  let current = '';
  let inTrigger = false;
  for (const line of text.split('\n')) {
    const bare = line.replace(/--.*$/, '').trim();
    if (bare === '' && current === '') continue;
    current += `${line}\n`;
    if (/^CREATE TRIGGER/i.test(bare)) inTrigger = true;
    if (inTrigger ? /END;$/i.test(bare) : bare.endsWith(';')) {
      statements.push(current.trim());
      current = '';
      inTrigger = false;
    }
  }
  if (current.trim()) statements.push(current.trim());
  return statements;
}
