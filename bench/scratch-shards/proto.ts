/**
 * Timing prototype (issue 51, session 14, helper "shards"): one 300,000-memory end user's index split in two by
 * session (even / odd session numbers), one half ranked on this thread and one on a worker, handed off through a
 * SharedArrayBuffer; against the whole index searched on this thread, blocks alternated. Each half ranks with its
 * own statistics (so the answers differ slightly: a timing estimate of the split, not the exact engine).
 *
 *   node --expose-gc --import tsx bench/scratch-shards/proto.ts [--docs 300000] [--queries 400] [--spin-us 2000]
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryIndex, normalizeText } from '../../packages/server/src/engine/index.js';
import { option } from '../lib/args.js';
import { locomoCorpus, mulberry32 } from '../lib/locomo.js';

const K = 10;
type Row = { id: number; text: string; sessionId: string; createdAt: number; importance: number; feedback: number };
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const dataDir = process.env.ENGRAM_LOCOMO_DIR ?? resolve(repoRoot, '../shared/bench/locomo-dev');
const { sentences, questions } = locomoCorpus(dataDir);

function build(rows: Row[]): MemoryIndex {
  const ix = new MemoryIndex({});
  for (const r of rows) ix.upsert(r);
  ix.fit();
  return ix;
}

if (!isMainThread) {
  const { rows, ctrlBuf, outBuf, now, spinUs } = workerData as {
    rows: Row[];
    ctrlBuf: SharedArrayBuffer;
    outBuf: SharedArrayBuffer;
    now: number;
    spinUs: number;
  };
  const ctrl = new Int32Array(ctrlBuf);
  const out = new Float64Array(outBuf);
  const ix = build(rows);
  for (let i = 0; i < 100; i++) ix.search(questions[questions.length - 1 - i]!, { k: K, now });
  parentPort!.postMessage('ready');
  let seen = 0;
  for (;;) {
    // Spin a while, then sleep.
    const until = performance.now() + spinUs / 1000;
    while (Atomics.load(ctrl, 0) === seen && performance.now() < until);
    if (Atomics.load(ctrl, 0) === seen) Atomics.wait(ctrl, 0, seen);
    seen = Atomics.load(ctrl, 0);
    if (seen < 0) break;
    const hits = ix.search(questions[ctrl[2]! % questions.length]!, { k: K, now });
    out.fill(0);
    out[0] = hits.length;
    hits.forEach((h, j) => {
      out[1 + 2 * j] = h.id;
      out[2 + 2 * j] = h.score;
    });
    Atomics.store(ctrl, 1, seen);
    Atomics.notify(ctrl, 1);
  }
  process.exit(0);
} else {
  const docs = Number(option('--docs') ?? 300_000);
  const queries = Number(option('--queries') ?? 400);
  const spinUs = Number(option('--spin-us') ?? 2000);
  const rounds = Number(option('--rounds') ?? 3);
  const rand = mulberry32(7);
  const pick = <T>(a: T[]) => a[Math.floor(rand() * a.length)]!;
  const seen = new Set<string>();
  const rows: Row[] = Array.from({ length: docs }, (_, i) => {
    let text: string;
    do text = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(sentences)).join(' ');
    while (seen.has(normalizeText(text)));
    seen.add(normalizeText(text));
    return {
      id: i + 1,
      text,
      sessionId: `s${Math.floor(i / 20) + 1}`,
      createdAt: 1.7e12 + i * 1000,
      importance: 0.5,
      feedback: 0,
    };
  });
  seen.clear();
  const now = 1.7e12 + docs * 1000;
  const half = (r: Row) => Math.floor((r.id - 1) / 20) % 2;
  const ctrl = new Int32Array(new SharedArrayBuffer(16));
  const outBuf = new SharedArrayBuffer(8 * (1 + 2 * K));
  const out = new Float64Array(outBuf);
  const worker = new Worker(fileURLToPath(import.meta.url), {
    workerData: { rows: rows.filter((r) => half(r) === 1), ctrlBuf: ctrl.buffer, outBuf, now, spinUs },
  });
  const ready = new Promise((r) => worker.once('message', r));
  const whole = build(rows);
  const a = build(rows.filter((r) => half(r) === 0));
  await ready;
  for (let i = 0; i < 100; i++) {
    whole.search(questions[questions.length - 1 - i]!, { k: K, now });
    a.search(questions[questions.length - 1 - i]!, { k: K, now });
  }
  let seq = 0;
  const sharded = (i: number) => {
    ctrl[2] = i;
    Atomics.store(ctrl, 0, ++seq);
    Atomics.notify(ctrl, 0);
    const mine = a.search(questions[i % questions.length]!, { k: K, now });
    while (Atomics.load(ctrl, 1) !== seq);
    const all = mine.map((h) => ({ id: h.id, score: h.score }));
    for (let j = 0; j < out[0]!; j++) all.push({ id: out[1 + 2 * j]!, score: out[2 + 2 * j]! });
    all.sort((x, y) => y.score - x.score);
    return all.slice(0, K);
  };
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const p = (t: number[], q: number) => Math.round([...t].sort((x, y) => x - y)[Math.floor(t.length * q)]! * 100) / 100;
  const res: Record<string, { p50: number[]; p90: number[]; cpu: number[] }> = {
    whole: { p50: [], p90: [], cpu: [] },
    sharded: { p50: [], p90: [], cpu: [] },
    halfAlone: { p50: [], p90: [], cpu: [] },
  };
  let overlap = 0;
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 ? ['sharded', 'whole', 'halfAlone'] : ['whole', 'sharded', 'halfAlone']) {
      const times: number[] = [];
      const c = cpu();
      for (let i = 0; i < queries; i++) {
        const s = performance.now();
        if (side === 'whole') whole.search(questions[i % questions.length]!, { k: K, now });
        else if (side === 'sharded') sharded(i);
        else a.search(questions[i % questions.length]!, { k: K, now });
        times.push(performance.now() - s);
      }
      res[side]!.cpu.push(Math.round(((cpu() - c) / queries) * 100) / 100);
      res[side]!.p50.push(p(times, 0.5));
      res[side]!.p90.push(p(times, 0.9));
    }
  }
  for (let i = 0; i < queries; i++) {
    const w = whole.search(questions[i % questions.length]!, { k: K, now }).map((h) => h.id);
    const s = sharded(i).map((h) => h.id);
    overlap += w.length === 0 ? 1 : w.filter((id) => s.includes(id)).length / w.length;
  }
  Atomics.store(ctrl, 0, -1);
  Atomics.notify(ctrl, 0);
  console.log(
    JSON.stringify({
      docs,
      queries,
      spinUs,
      ...res,
      overlap_at_10_local_stats: Math.round((overlap / queries) * 1000) / 1000,
    }),
  );
  process.exit(0);
}
