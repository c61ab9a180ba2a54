/**
 * A stored index snapshot as byte planes against as it is (issue 51, modules/retrieval/byte-planes.ts), in process,
 * on the largest snapshot of a SQLite database file (a copy of a `bench/latency.ts --data` fill, formats 407 or 408).
 * Stored bytes a piece both ways; then `--rounds` alternated rounds of a load as loadSnapshot does it on SQLite (each
 * piece read from a scratch SQLite file beside the copy, decompressed in the thread pool while the next is read): wall
 * and process CPU (thread pool included), and the planes' decode alone. JSON.
 *
 *   node --import tsx bench/snapshot-planes.ts --data DIR [--rounds 6] [--arrays]
 *
 * `--arrays`: each array of 256 KB or more compressed alone, as it is and as planes.
 */
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { zstdDecompress } from 'node:zlib';
import BetterSqlite3 from 'better-sqlite3';
import { snapshotArrays, snapshotCuts } from '../packages/server/src/engine/index.js';
import { fromPlanes, planesOf, readPlanesTable } from '../packages/server/src/modules/retrieval/byte-planes.js';
import {
  compressed,
  compressedPieces,
  decompressedPiece,
  type StoredPiece,
} from '../packages/server/src/modules/retrieval/snapshots.js';
import { option } from './lib/args.js';

const dir = option('--data');
if (!dir) throw new Error('--data DIR (a copy of a latency.ts fill with stored snapshots) is required');
const rounds = Number(option('--rounds') ?? 6);
const db = new BetterSqlite3(join(dir, 'engram.db'), { readonly: true });
const head = db
  .prepare(
    `SELECT s.project_id, s.tenant_id, s.end_user_id, s.format, s.revision FROM index_snapshots s
     ORDER BY s.memories DESC LIMIT 1`,
  )
  .get() as { project_id: string; tenant_id: string; end_user_id: string; format: number; revision: number };
const rows = db
  .prepare(
    `SELECT piece, length, data FROM index_snapshot_pieces WHERE project_id = ? AND tenant_id = ? AND end_user_id = ?
     ORDER BY piece`,
  )
  .all(head.project_id, head.tenant_id, head.end_user_id) as Array<{ piece: number; length: number; data: Buffer }>;
db.close();
const plain = async ({ length, data }: StoredPiece) => promisify(zstdDecompress)(data, { chunkSize: length + 1 });
const stored = await Promise.all(rows.map((r) => (head.format >= 408 ? decompressedPiece : plain)(r)));
const [meta, ...indexPieces] = stored;
const index = Buffer.concat(indexPieces);
const cuts = snapshotCuts(index, 4 << 20);

const t0 = performance.now();
const planesIndex = await planesOf(index, compressed);
const planesMeta = await planesOf(meta!, compressed);
const forms = {
  as_is: [...(await compressedPieces(meta!, [])), ...(await compressedPieces(index, cuts))],
  planes: [...(await compressedPieces(meta!, [], planesMeta)), ...(await compressedPieces(index, cuts, planesIndex))],
};
const storeMs = performance.now() - t0;
const bytes = (pieces: StoredPiece[]) => pieces.map((p) => p.data.length);

// A scratch SQLite file with both forms' pieces, read as loadSnapshot reads them.
const scratch = join(dir, 'planes-probe.db');
rmSync(scratch, { force: true });
const out = new BetterSqlite3(scratch);
out.exec('CREATE TABLE pieces (form TEXT, piece INTEGER, length INTEGER, data BLOB, PRIMARY KEY (form, piece))');
const insert = out.prepare('INSERT INTO pieces VALUES (?, ?, ?, ?)');
for (const [form, pieces] of Object.entries(forms)) pieces.forEach((p, i) => insert.run(form, i, p.length, p.data));
out.close();

const read = new BetterSqlite3(scratch, { readonly: true });
const one = read.prepare('SELECT length, data FROM pieces WHERE form = ? AND piece = ?');
async function load(form: string): Promise<{ wall: number; cpu: number }> {
  const [t, c] = [performance.now(), process.cpuUsage()];
  const decompressing: Array<Promise<Buffer>> = [];
  for (let i = 0; i < forms.as_is.length; i++) {
    // A turn of the event loop a piece, as kysely's async statements give.
    await new Promise((resolve) => setImmediate(resolve));
    const row = one.get(form, i) as StoredPiece;
    decompressing.push(decompressedPiece(row));
  }
  const pieces = await Promise.all(decompressing);
  const cpu = process.cpuUsage(c);
  if (!Buffer.concat(pieces.slice(1)).equals(index)) throw new Error(`${form}: not the snapshot`);
  return { wall: performance.now() - t, cpu: (cpu.user + cpu.system) / 1000 };
}
/** The planes' decode alone, on the thread (the decompressed pieces given). */
async function decodeOnly(): Promise<number> {
  const pieces = await Promise.all(
    forms.planes.map(async (p) => {
      const { planes, rest } = readPlanesTable(p.data, p.length);
      return { planes, bytes: await plain({ length: p.length, data: rest }) };
    }),
  );
  const t = performance.now();
  for (const p of pieces) fromPlanes(p.bytes, p.planes);
  return performance.now() - t;
}

/** With --arrays: each array of 256 KB or more compressed alone, as it is and as planes. */
const arrays: Array<Record<string, unknown>> = [];
if (process.argv.includes('--arrays')) {
  for (const [part, bytes] of [
    ['meta', meta!],
    ['index', index],
  ] as const) {
    const runs = await planesOf(bytes, compressed);
    for (const { kind, at, length } of snapshotArrays(bytes)) {
      const run = runs.find((r) => r.at === at);
      if (!length || !run || run.bytes < 1 << 18) continue;
      const alone = bytes.subarray(at, at + run.bytes);
      const [asIs] = await compressedPieces(alone, []);
      const [planed] = await compressedPieces(alone, [], [{ ...run, at: 0 }]);
      arrays.push({
        part,
        kind,
        at,
        bytes: run.bytes,
        delta: run.delta,
        as_is: asIs!.data.length,
        planes: planed!.data.length,
      });
    }
  }
}

const results: Record<string, number[]> = {
  as_is_wall: [],
  as_is_cpu: [],
  planes_wall: [],
  planes_cpu: [],
  decode: [],
};
for (let round = 0; round < rounds; round++) {
  for (const form of round % 2 ? ['planes', 'as_is'] : ['as_is', 'planes']) {
    const { wall, cpu } = await load(form);
    results[`${form}_wall`]!.push(Math.round(wall));
    results[`${form}_cpu`]!.push(Math.round(cpu));
  }
  results.decode!.push(Math.round(await decodeOnly()));
}
read.close();
rmSync(scratch, { force: true });
console.log(
  JSON.stringify(
    {
      stored_format: head.format,
      uncompressed: meta!.length + index.length,
      stored_as_is: bytes(forms.as_is),
      stored_planes: bytes(forms.planes),
      total_as_is: bytes(forms.as_is).reduce((a, b) => a + b),
      total_planes: bytes(forms.planes).reduce((a, b) => a + b),
      planes_runs: planesIndex.length + planesMeta.length,
      delta_runs: planesIndex.filter((p) => p.delta).length,
      both_forms_stored_ms: Math.round(storeMs),
      ms: results,
      arrays,
    },
    null,
    1,
  ),
);
