import { readdirSync, readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabaseConfig } from '../testing/harness.js';
import { openDatabase, type Database, type Dialect } from './database.js';
import { migrate } from './migrate.js';

/**
 * One schema, three descriptions: the SQLite migrations, the PostgreSQL migrations and the typed
 * schema (schema.ts). Fresh databases of both dialects are migrated and introspected; tables,
 * columns, storage types, nullability and indexes must agree with each other and with schema.ts.
 */

/** Storage types, by kind: what SQLite's affinity and PostgreSQL's types have in common. */
type Kind = 'integer' | 'real' | 'text' | 'bytes' | 'json' | 'timestamp' | 'boolean';
interface Column {
  kind: Kind;
  nullable: boolean;
}
interface Index {
  table: string;
  columns: string[];
  unique: boolean;
  partial: boolean;
}
interface Schema {
  tables: Record<string, Record<string, Column>>;
  indexes: Record<string, Index>;
}

const BOOKKEEPING = new Set(['schema_migrations', 'sqlite_sequence']);

const POSTGRES_KINDS: Record<string, Kind> = {
  integer: 'integer',
  bigint: 'integer',
  smallint: 'integer',
  'double precision': 'real',
  real: 'real',
  text: 'text',
  bytea: 'bytes',
  jsonb: 'json',
  json: 'json',
  'timestamp with time zone': 'timestamp',
  boolean: 'boolean',
  xid8: 'integer',
};
const SQLITE_KINDS: Record<string, Kind> = { INTEGER: 'integer', REAL: 'real', TEXT: 'text', BLOB: 'bytes' };

async function introspectSqlite(database: Database): Promise<Schema> {
  const schema: Schema = { tables: {}, indexes: {} };
  const tables = await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`.execute(
    database.db,
  );
  for (const { name } of tables.rows) {
    if (BOOKKEEPING.has(name)) continue;
    const columns = await sql<{
      name: string;
      type: string;
      notnull: number;
      pk: number;
    }>`SELECT * FROM pragma_table_info(${name})`.execute(database.db);
    schema.tables[name] = Object.fromEntries(
      columns.rows.map((c) => [
        c.name,
        { kind: SQLITE_KINDS[c.type.toUpperCase()] ?? (c.type as Kind), nullable: c.notnull === 0 && c.pk === 0 },
      ]),
    );
    const indexes = await sql<{
      name: string;
      unique: number;
      origin: string;
      partial: number;
    }>`SELECT * FROM pragma_index_list(${name})`.execute(database.db);
    for (const index of indexes.rows) {
      if (index.origin === 'pk') continue;
      const cols = await sql<{
        name: string;
      }>`SELECT name FROM pragma_index_info(${index.name}) ORDER BY seqno`.execute(database.db);
      // Unique constraints get generated names; name them by their columns on both sides.
      const key = index.origin === 'u' ? `${name}(${cols.rows.map((c) => c.name).join(',')}) unique` : index.name;
      schema.indexes[key] = {
        table: name,
        columns: cols.rows.map((c) => c.name),
        unique: index.unique === 1,
        partial: index.partial === 1,
      };
    }
  }
  return schema;
}

async function introspectPostgres(database: Database): Promise<Schema> {
  const schema: Schema = { tables: {}, indexes: {} };
  const columns = await sql<{ table_name: string; column_name: string; data_type: string; is_nullable: string }>`
    SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
    WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`.execute(database.db);
  for (const c of columns.rows) {
    if (BOOKKEEPING.has(c.table_name)) continue;
    (schema.tables[c.table_name] ??= {})[c.column_name] = {
      kind: POSTGRES_KINDS[c.data_type] ?? (c.data_type as Kind),
      nullable: c.is_nullable === 'YES',
    };
  }
  const indexes = await sql<{
    table: string;
    name: string;
    columns: string[];
    unique: boolean;
    primary: boolean;
    partial: boolean;
    constraint: boolean;
  }>`
    SELECT t.relname AS table, i.relname AS name, ix.indisunique AS unique, ix.indisprimary AS primary,
           ix.indpred IS NOT NULL AS partial,
           EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = ix.indexrelid AND k.contype = 'u') AS constraint,
           ARRAY(SELECT a.attname FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, n)
                 JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns
    FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid
    JOIN pg_namespace ns ON ns.oid = t.relnamespace WHERE ns.nspname = 'public'`.execute(database.db);
  for (const index of indexes.rows) {
    if (index.primary || BOOKKEEPING.has(index.table)) continue;
    const key = index.constraint ? `${index.table}(${index.columns.join(',')}) unique` : index.name;
    schema.indexes[key] = { table: index.table, columns: index.columns, unique: index.unique, partial: index.partial };
  }
  return schema;
}

/** Tables and columns of schema.ts: each `interface XTable { column: type; … }` named in `interface DB`. */
function typedSchema(): Record<string, Record<string, { ts: string; nullable: boolean }>> {
  const text = readFileSync(new URL('./schema.ts', import.meta.url), 'utf8');
  const interfaces = new Map<string, string>();
  for (const m of text.matchAll(/export interface (\w+) \{([^}]*)\}/g)) interfaces.set(m[1]!, m[2]!);
  const tables: Record<string, Record<string, { ts: string; nullable: boolean }>> = {};
  for (const [, table, type] of interfaces.get('DB')!.matchAll(/(\w+): (\w+);/g)) {
    tables[table!] = Object.fromEntries(
      [...interfaces.get(type!)!.matchAll(/(\w+): ([^;]+?)\s*(?:;|$)/gm)].map(([, column, ts]) => [
        column!,
        { ts: ts!.replace(/\s*\|\s*null$/, ''), nullable: /\|\s*null$/.test(ts!) },
      ]),
    );
  }
  return tables;
}

/** The storage kinds a schema.ts type may have. */
const TYPED_KINDS: Record<string, Kind[]> = {
  string: ['text', 'timestamp'],
  number: ['integer', 'real'],
  'Generated<number>': ['integer'],
  Json: ['json', 'text'],
  Bool: ['boolean', 'integer'],
  'Generated<Bool>': ['boolean', 'integer'],
  Buffer: ['bytes'],
  TransactionId: ['integer'],
  'Generated<TransactionId>': ['integer'],
};

/** A union of string literals ('user' | 'api_key'), generated (a default) or not: stored as text. */
const STRING_LITERALS = /^(Generated<)?'[^']*'(\s*\|\s*'[^']*')*>?$/;

const sorted = <T>(record: Record<string, T>) =>
  Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));

describe('one schema', () => {
  const databases: Partial<Record<Dialect, { database: Database; drop: () => Promise<void> }>> = {};
  const schemas: Partial<Record<Dialect, Schema>> = {};
  beforeAll(async () => {
    for (const dialect of ['sqlite', 'postgres'] as const) {
      if (dialect === 'postgres' && !process.env.ENGRAM_TEST_DATABASE_URL) continue;
      const fresh = await freshDatabaseConfig(dialect);
      const database = openDatabase(fresh.config);
      databases[dialect] = { database, drop: fresh.drop };
      await migrate(database);
      schemas[dialect] = dialect === 'sqlite' ? await introspectSqlite(database) : await introspectPostgres(database);
    }
  });
  afterAll(async () => {
    for (const entry of Object.values(databases)) {
      await entry.database.close();
      await entry.drop();
    }
  });

  it('has one file per change per dialect, with the same names', () => {
    const names = (dialect: Dialect) => readdirSync(new URL(`./migrations/${dialect}/`, import.meta.url)).sort();
    expect(names('sqlite')).toEqual(names('postgres'));
    for (const name of names('sqlite')) expect(name).toMatch(/^\d{4}_[a-z0-9_]+\.sql$/);
    const numbers = names('sqlite').map((n) => n.slice(0, 4));
    expect(new Set(numbers).size, 'one file per migration number').toBe(numbers.length);
  });

  it('takes no foreign-key lock when memories and their history rows are inserted (PostgreSQL; migration 0017)', async (context) => {
    const postgres = databases.postgres?.database;
    if (!postgres) return context.skip();
    const keys = await sql<{ table: string; references: string }>`
      SELECT conrelid::regclass::text AS table, confrelid::regclass::text AS references FROM pg_constraint
      WHERE contype = 'f' AND conrelid::regclass::text IN ('memories', 'memory_history', 'feedback') ORDER BY 1, 2`.execute(
      postgres.db,
    );
    // feedback's reference to memories stays: it is off the write path.
    expect(keys.rows).toEqual([{ table: 'feedback', references: 'memories' }]);
  });

  it('matches schema.ts: the same tables, columns, nullability and compatible types', () => {
    const typed = typedSchema();
    expect(Object.keys(typed).length).toBeGreaterThan(20);
    expect(Object.keys(schemas.sqlite!.indexes).length).toBeGreaterThan(15);
    for (const [dialect, schema] of Object.entries(schemas)) {
      expect(Object.keys(schema.tables).sort(), dialect).toEqual(Object.keys(typed).sort());
      for (const [table, columns] of Object.entries(typed)) {
        const actual = schema.tables[table]!;
        expect(Object.keys(actual).sort(), `${dialect} ${table}`).toEqual(Object.keys(columns).sort());
        for (const [column, { ts, nullable }] of Object.entries(columns)) {
          const where = `${dialect} ${table}.${column}`;
          expect(actual[column]!.nullable, `${where} nullable`).toBe(nullable);
          expect(
            TYPED_KINDS[ts] ?? (STRING_LITERALS.test(ts) ? ['text'] : [`unknown schema.ts type ${ts}`]),
            `${where}: ${ts} stored as ${actual[column]!.kind}`,
          ).toContain(actual[column]!.kind);
        }
      }
    }
  });

  /** SQLite's webhook claim reads pending deliveries across endpoints in due order; PostgreSQL's walks each endpoint's (0075). */
  const SQLITE_ONLY_INDEX = 'webhook_deliveries_due';

  it.runIf(process.env.ENGRAM_TEST_DATABASE_URL)(
    'is the same on SQLite and PostgreSQL: columns, nullability, types and indexes (but one)',
    () => {
      const { sqlite, postgres } = schemas as Record<Dialect, Schema>;
      // SQLite stores timestamps and JSON as text and booleans as integers: compare at that resolution.
      const coarse = (kind: Kind): Kind =>
        kind === 'timestamp' || kind === 'json' ? 'text' : kind === 'boolean' ? 'integer' : kind;
      const flatten = (schema: Schema) =>
        sorted(
          Object.fromEntries(
            Object.entries(schema.tables).flatMap(([table, columns]) =>
              Object.entries(columns).map(([column, c]) => [
                `${table}.${column}`,
                { kind: coarse(c.kind), nullable: c.nullable },
              ]),
            ),
          ),
        );
      expect(flatten(sqlite)).toEqual(flatten(postgres));
      const { [SQLITE_ONLY_INDEX]: sqliteOnly, ...shared } = sqlite.indexes;
      expect(sqliteOnly, SQLITE_ONLY_INDEX).toBeDefined();
      expect(sorted(shared)).toEqual(sorted(postgres.indexes));
    },
  );
});
