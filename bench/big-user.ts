/**
 * One very large end user's index in process (issue 51): `--docs` memories of bench:latency's kind
 * (1-3 LoCoMo sentences, 20 a session) built by upserts; the build's time, the heap it holds after a
 * collection and its approxBytes; search p50 over the LoCoMo questions (k 10); a snapshot, its
 * restore and the first search of the restored index. `--check FILE` writes every search's hits
 * (ids and scores) to FILE, or compares them with FILE when it exists: results identical. JSON.
 *
 * With FILE from another build, also the share of searches whose ids agree and the mean overlap@10.
 * `--context-share` sets the index's contextCacheShare.
 *
 *   node --expose-gc --import tsx bench/big-user.ts [--docs 300000] [--queries 400] [--check /tmp/hits.json]
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { MemoryIndex } from '../packages/server/src/engine/index.js';
import { option } from './lib/args.js';
import { bigUserRows } from './lib/big-user-rows.js';

const docs = Number(option('--docs') ?? 300_000);
const queries = Number(option('--queries') ?? 400);
const check = option('--check');
const contextCacheShare = option('--context-share') === undefined ? undefined : Number(option('--context-share'));
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const heap = () => {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const ms = (t: number) => Math.round((performance.now() - t) * 100) / 100;
/** CPU time of the process (ms): the machine is shared, so wall time alone says little. */
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const mb = (b: number) => Math.round(b / 1e5) / 10;

const { rows, questions, now } = bigUserRows(docs);
const before = heap();
let t = performance.now();
let c = cpu();
const indexOptions = contextCacheShare === undefined ? {} : { contextCacheShare };
let index: MemoryIndex | null = new MemoryIndex(indexOptions);
for (const row of rows) index.upsert(row);
// As the index cache does after a build from rows.
index.fit();
const buildMs = ms(t);
const buildCpuMs = Math.round(cpu() - c);
const heldBytes = heap() - before;
const approx = index.approxBytes();

const hits: number[][] = [];
const search = (ix: MemoryIndex, i: number) => ix.search(questions[i % questions.length]!, { k: 10, now });
// Warm-up, then timed.
for (let i = 0; i < 100; i++) search(index, questions.length - 1 - i);
const times: number[] = [];
c = cpu();
for (let i = 0; i < queries; i++) {
  const s = performance.now();
  const r = search(index, i);
  times.push(performance.now() - s);
  hits.push(r.flatMap((h) => [h.id, h.score]));
}
const searchCpuMs = (cpu() - c) / queries;
times.sort((a, b) => a - b);
const approxSearched = index.approxBytes();

t = performance.now();
const bytes = index.snapshot();
const snapshotMs = ms(t);
index = null;
const beforeRestore = heap();
t = performance.now();
c = cpu();
const restored = MemoryIndex.restore(bytes.slice(), indexOptions);
const restoreMs = ms(t);
const restoreCpuMs = Math.round(cpu() - c);
t = performance.now();
const first = search(restored, 0);
const firstSearchMs = ms(t);
const restoredHeld = heap() - beforeRestore;
if (JSON.stringify(first.flatMap((h) => [h.id, h.score])) !== JSON.stringify(hits[0]))
  throw new Error('the restored index answers otherwise');

let identical: boolean | undefined;
/** Against FILE's searches: the share whose ids are the same in the same order, and the mean share of FILE's ids found. */
let agreement: { same_ids: number; overlap_at_10: number } | undefined;
if (check) {
  if (existsSync(check)) {
    const want = JSON.parse(readFileSync(check, 'utf8')) as number[][];
    identical = JSON.stringify(want) === JSON.stringify(hits);
    const ids = (h: number[] | undefined) => (h ?? []).filter((_, i) => i % 2 === 0);
    let same = 0;
    let overlap = 0;
    want.forEach((w, i) => {
      const [a, b] = [ids(w), ids(hits[i])];
      if (JSON.stringify(a) === JSON.stringify(b)) same++;
      overlap += a.length === 0 ? 1 : a.filter((id) => b.includes(id)).length / a.length;
    });
    const round = (x: number) => Math.round((x / want.length) * 10_000) / 10_000;
    agreement = { same_ids: round(same), overlap_at_10: round(overlap) };
    if (!identical) {
      const at = want.findIndex((w, i) => JSON.stringify(w) !== JSON.stringify(hits[i]));
      process.stderr.write(
        `first difference at query ${at}: ${JSON.stringify(want[at])} vs ${JSON.stringify(hits[at])}\n`,
      );
    }
  } else writeFileSync(check, JSON.stringify(hits));
}
console.log(
  JSON.stringify({
    docs,
    build_ms: buildMs,
    build_cpu_ms: buildCpuMs,
    heap_mb: mb(heldBytes),
    approx_mb: mb(approx),
    search_cpu_mean_ms: Math.round(searchCpuMs * 100) / 100,
    approx_after_searches_mb: mb(approxSearched),
    search_p50_ms: Math.round(times[times.length >> 1]! * 100) / 100,
    search_p90_ms: Math.round(times[Math.floor(times.length * 0.9)]! * 100) / 100,
    snapshot_ms: snapshotMs,
    snapshot_mb: mb(bytes.byteLength),
    restore_ms: restoreMs,
    restore_cpu_ms: restoreCpuMs,
    restored_first_search_ms: firstSearchMs,
    restored_heap_mb: mb(restoredHeld),
    restored_approx_mb: mb(restored.approxBytes()),
    ...(identical === undefined ? {} : { identical }),
    ...(agreement === undefined ? {} : agreement),
  }),
);
