import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
import type { DB } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';
export type Executor = Kysely<DB> | Transaction<DB>;

export interface Database {
  readonly dialect: Dialect;
  readonly db: Kysely<DB>;
  /** Booleans: SQLite cannot bind them, so they travel as 0/1 there. */
  bool(value: boolean): boolean | number;
  ping(): Promise<void>;
  /** PostgreSQL connection pool figures (for /metrics); SQLite has one connection and no pool. */
  pool(): { total: number; idle: number; waiting: number; max: number } | null;
  close(): Promise<void>;
}

/** PostgreSQL values come back in the same shapes SQLite gives: numbers and RFC 3339 strings. */
function postgresTypes(): pg.CustomTypesConfig {
  const parsers: Record<number, (value: string) => unknown> = {
    20: (v) => Number(v), // int8 (ids, counts): our ids stay far below 2^53
    1700: (v) => Number(v), // numeric
    1184: (v) => new Date(v).toISOString(), // timestamptz
    1114: (v) => new Date(`${v}Z`).toISOString(), // timestamp
  };
  return {
    getTypeParser: ((oid: number, format?: string) =>
      parsers[oid] ?? pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
  };
}

export function openDatabase(config: Config['database']): Database {
  if (config.dialect === 'postgres') {
    const pool = new pg.Pool({ connectionString: config.url, max: config.poolSize, types: postgresTypes() });
    // An idle client's connection error must not crash the process; the next query reports it.
    pool.on('error', () => {});
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    return {
      dialect: 'postgres',
      db,
      bool: (value) => value,
      ping: async () => {
        await pool.query('SELECT 1');
      },
      pool: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: config.poolSize }),
      close: () => db.destroy(),
    };
  }
  mkdirSync(dirname(config.path), { recursive: true });
  const sqlite = new BetterSqlite3(config.path);
  // WAL with synchronous=FULL: a commit is on disk before the response that acknowledges it.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  return {
    dialect: 'sqlite',
    db,
    bool: (value) => (value ? 1 : 0),
    ping: async () => {
      sqlite.prepare('SELECT 1').get();
    },
    pool: () => null,
    close: () => db.destroy(),
  };
}

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
      let statement = cache.get(source);
      if (!statement) {
        statement = prepare(source);
        if (cache.size >= limit) cache.delete(cache.keys().next().value!);
        cache.set(source, statement);
      }
      return statement;
    },
    close: () => sqlite.close(),
  });
}

/** JSON columns: text on SQLite, parsed jsonb on PostgreSQL. */
export function decodeJson<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

export function encodeJson(value: unknown): string {
  return JSON.stringify(value);
}

export function nowIso(): string {
  return new Date().toISOString();
}

export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE';
}
