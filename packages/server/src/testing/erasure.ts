import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync, inflateRawSync } from 'node:zlib';
import { sql } from 'kysely';
import type { Database } from '../store/database.js';

/**
 * Test support for erasure (issue 47): finding a marker wherever a database, a directory or a log may keep it.
 * Every search covers everything there is (every table and column, every file, every byte), never a list of
 * the places known to copy content, so a new table or copy path is caught the day it is added.
 */

/** Where a marker was found: `table.column`, a file's path, `pg_dump`, `log`. */
export type Hit = string;

/** Every table of the database, from its catalogue. */
async function tablesOf(database: Database): Promise<string[]> {
  const { rows } =
    database.dialect === 'sqlite'
      ? await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`.execute(
          database.db,
        )
      : await sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables
          WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`.execute(database.db);
  return rows.map((r) => r.name);
}

/** The bytes as stored and, when they read as compressed (a deflated blob chunk, a gzip artifact), as they read. */
function readings(bytes: Buffer): Buffer[] {
  try {
    return [bytes, bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : inflateRawSync(bytes)];
  } catch {
    return [bytes];
  }
}

const holds = (value: unknown, needle: string): boolean => {
  if (value === null || value === undefined) return false;
  if (Buffer.isBuffer(value)) return readings(value).some((bytes) => bytes.includes(needle));
  return (typeof value === 'string' ? value : JSON.stringify(value)).includes(needle);
};

/** `table.column` of every column of every table holding `needle` in some row, as the database answers them. */
export async function columnsHolding(database: Database, needle: string): Promise<Hit[]> {
  const hits: Hit[] = [];
  for (const table of await tablesOf(database)) {
    const { rows } = await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)}`.execute(database.db);
    const columns = new Set<string>();
    for (const row of rows)
      for (const [column, value] of Object.entries(row)) if (holds(value, needle)) columns.add(column);
    for (const column of columns) hits.push(`${table}.${column}`);
  }
  return hits;
}

/** Every file under `dir` (at any depth) whose bytes hold `needle`: a SQLite file, its WAL, blobs, exports. */
export function filesHolding(dir: string, needle: string): Hit[] {
  const hits: Hit[] = [];
  const walk = (path: string) => {
    if (!existsSync(path)) return;
    const stat = statSync(path);
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
    else if (stat.isFile() && readFileSync(path).includes(needle)) hits.push(path);
  };
  walk(dir);
  return hits;
}

/**
 * The lines of a plain pg_dump of the database at `url` that hold `needle` (a COPY row names its table in the
 * COPY line before it), as `pg_dump <table>: <line start>`: the whole database, catalogue and data.
 */
export async function pgDumpHolding(url: string, needle: string): Promise<Hit[]> {
  const { stdout } = await promisify(execFile)('pg_dump', ['--no-owner', '--no-privileges', url], {
    maxBuffer: 1 << 30,
  });
  const hits: Hit[] = [];
  // bytea is dumped as hex (index snapshots hold text in their bytes).
  const hex = Buffer.from(needle).toString('hex');
  let table = '(schema)';
  for (const line of stdout.split('\n')) {
    const copy = /^COPY (\S+)/.exec(line);
    if (copy) table = copy[1]!;
    else if (line === '\\.') table = '(schema)';
    if (line.includes(needle) || line.includes(hex)) hits.push(`pg_dump ${table}: ${line.slice(0, 120)}`);
  }
  return hits;
}

/** The captured log lines holding `needle`. */
export function logLinesHolding(logs: string[], needle: string): Hit[] {
  return logs
    .join('')
    .split('\n')
    .filter((line) => line.includes(needle))
    .map((line) => `log: ${line.slice(0, 200)}`);
}
