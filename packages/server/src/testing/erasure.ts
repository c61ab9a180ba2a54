import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { getHeapSnapshot, setFlagsFromString } from 'node:v8';
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

/**
 * Whether a V8 heap snapshot (`v8.getHeapSnapshot()`, `Worker.getHeapSnapshot()`: taken after a full collection, so
 * only what is still reachable) holds `needle`, read as it streams (a snapshot of a test process is tens of MB).
 * Strings appear whole only under `heapsHolding`'s raised string limit (V8 cuts them at 1,024 characters).
 */
export async function snapshotHolds(snapshot: AsyncIterable<Buffer | string>, needle: string): Promise<boolean> {
  let tail = '';
  for await (const chunk of snapshot) {
    const text = tail + chunk.toString();
    if (text.includes(needle)) return true;
    tail = text.slice(-needle.length);
  }
  return false;
}

/**
 * What holds each string of a heap snapshot containing `needle`: the chain of retainers up from it (edge names and
 * the retaining objects' names), for a failure to say where the copy sits.
 */
export async function snapshotHolders(snapshot: AsyncIterable<Buffer | string>, needle: string): Promise<string[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of snapshot) chunks.push(Buffer.from(chunk));
  const heap = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
    snapshot: {
      meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] };
    };
    nodes: number[];
    edges: number[];
    strings: string[];
  };
  const { meta } = heap.snapshot;
  const nodeWidth = meta.node_fields.length;
  const edgeWidth = meta.edge_fields.length;
  const [typeAt, nameAt, edgeCountAt] = ['type', 'name', 'edge_count'].map((f) => meta.node_fields.indexOf(f)) as [
    number,
    number,
    number,
  ];
  const [edgeTypeAt, edgeNameAt, toAt] = ['type', 'name_or_index', 'to_node'].map((f) =>
    meta.edge_fields.indexOf(f),
  ) as [number, number, number];
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const { nodes, edges, strings } = heap;
  const nodeCount = nodes.length / nodeWidth;
  // Each node's retainers: (retaining node, edge) pairs, weak edges left out.
  const retainers: Array<Array<[number, number]>> = Array.from({ length: nodeCount }, () => []);
  for (let node = 0, edge = 0; node < nodeCount; node++) {
    const count = nodes[node * nodeWidth + edgeCountAt]!;
    for (let i = 0; i < count; i++, edge += edgeWidth) {
      if (edgeTypes[edges[edge + edgeTypeAt]!] === 'weak') continue;
      retainers[edges[edge + toAt]! / nodeWidth]!.push([node, edge]);
    }
  }
  const nameOf = (node: number) => strings[nodes[node * nodeWidth + nameAt]!]!.slice(0, 60);
  const edgeName = (edge: number) => {
    const type = edgeTypes[edges[edge + edgeTypeAt]!];
    const name = edges[edge + edgeNameAt]!;
    return type === 'element' || type === 'hidden' ? `[${name}]` : String(strings[name]);
  };
  const found: string[] = [];
  for (let node = 0; node < nodeCount && found.length < 40; node++) {
    const type = nodeTypes[nodes[node * nodeWidth + typeAt]!];
    if ((type !== 'string' && type !== 'concatenated string' && type !== 'sliced string') || !nameOf(node)) continue;
    if (!strings[nodes[node * nodeWidth + nameAt]!]!.includes(needle)) continue;
    const path = [`'${nameOf(node)}'`];
    const seen = new Set([node]);
    for (let at = node, depth = 0; depth < 12; depth++) {
      const next = retainers[at]!.find(([by]) => !seen.has(by));
      if (!next) break;
      at = next[0];
      seen.add(at);
      path.push(`${edgeName(next[1])} of ${nodeTypes[nodes[at * nodeWidth + typeAt]!]} ${nameOf(at)}`);
    }
    found.push(path.join(' <- '));
  }
  return found;
}

/**
 * A string kept as bytes outside the thread's shared Buffer pool (which `bufferPoolHolding` searches), made a string
 * (a new one each time) only where it is used: a heap snapshot holds no copy of it on the test's account.
 */
export class HeldApart {
  private readonly bytes: Buffer;
  constructor(text: string) {
    this.bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
    this.bytes.write(text);
  }
  toString(): string {
    return this.bytes.toString();
  }
  /** Whether `bytes` hold the text (UTF-8): compared as bytes (`includes` of a string cuts it from the pool). */
  in(bytes: Uint8Array): boolean {
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes(this.bytes);
  }
}

/**
 * Whether this thread's current Buffer pool holds `needle`: its whole slab, which any Buffer cut from it exposes to
 * any code (`.buffer`), handed out or not (a request's body, an idempotency key, a driver's message).
 */
export const bufferPoolHolding = (needle: HeldApart): boolean =>
  needle.in(new Uint8Array(Buffer.allocUnsafe(1).buffer));

/**
 * The threads whose heap holds `needle`: this process's main thread (the server's, in a test) and the search thread
 * (`heapSnapshot` of the retrieval engine), each snapshot taken after a full collection; with `explain`, what holds
 * each copy, for a failure to name the place. The caller's own stand-ins let go of what they were sent first.
 */
export async function heapsHolding(
  retrieval: { heapSnapshot(): Promise<Readable> | undefined },
  needle: HeldApart,
  explain = false,
): Promise<Hit[]> {
  // Strings whole: V8 cuts them at 1,024 characters in a snapshot by default, so a marker deep in a long text would
  // not be seen. The flag is the process's, so it holds for the search thread's snapshot too.
  setFlagsFromString(`--heap-snapshot-string-limit=${2 ** 24}`);
  const heaps = { 'the main thread': getHeapSnapshot, 'the search thread': () => retrieval.heapSnapshot() };
  const hits: Hit[] = [];
  for (const [thread, snapshot] of Object.entries(heaps)) {
    const taken = await snapshot();
    if (!taken) hits.push(`${thread}: no heap`);
    // The needle made a string only once the snapshot is taken (a string on the stack would be found in it).
    else if (explain)
      hits.push(...(await snapshotHolders(taken, `${needle}`)).map((path) => `${thread}'s heap: ${path}`));
    else if (await snapshotHolds(taken, `${needle}`)) hits.push(`${thread}'s heap`);
  }
  return hits;
}
