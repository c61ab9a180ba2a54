/**
 * Exactness and CPU of a sharded search on one thread (issue 51, session 14, helper "shards"): one end user's
 * index whole and as two session-disjoint shards (ShardedIndex), every question asked of both in several forms
 * (plain, explained, filtered, one session, k 3, requireEvidence); hits compared (ids, scores, order,
 * explanations). Then CPU a search, blocks alternated: whole, shards in turn (their sum), each shard alone.
 *
 *   node --expose-gc --import tsx bench/scratch-shards/exact.ts [--docs 300000] [--queries 400] [--rounds 2]
 */
import { type EngineDoc, MemoryIndex } from '../../packages/server/src/engine/index.js';
import { ShardedIndex } from '../../packages/server/src/engine/sharded-index.js';
import type { SearchOptions } from '../../packages/server/src/engine/types.js';
import { option } from '../lib/args.js';
import { bigUserRows } from '../lib/big-user-rows.js';

type Row = EngineDoc;
const docs = Number(option('--docs') ?? 300_000);
const queries = Number(option('--queries') ?? 400);
const rounds = Number(option('--rounds') ?? 2);
const { rows, questions, now } = bigUserRows(docs);
const build = (rs: Row[]) => {
  const ix = new MemoryIndex({});
  for (const r of rs) ix.upsert(r);
  ix.fit();
  return ix;
};
const half = (r: Row) => Math.floor((r.id - 1) / 20) % 2;
const whole = build(rows);
const parts = [build(rows.filter((r) => half(r) === 0)), build(rows.filter((r) => half(r) === 1))];
const sharded = new ShardedIndex(parts);

const variants: [string, (i: number) => SearchOptions][] = [
  ['plain', () => ({ k: 10, now })],
  ['explain', () => ({ k: 10, now, explain: true })],
  ['filter', () => ({ k: 10, now, filter: (id: number) => id % 3 !== 0 })],
  ['session', (i) => ({ k: 10, now, sessionId: `s${1 + ((i * 37) % Math.ceil(docs / 20))}` })],
  ['k3', () => ({ k: 3, now })],
  ['evidence', () => ({ k: 10, now, requireEvidence: true, minRelevance: 0.2 })],
];
const diffs: Record<string, number> = {};
let first = '';
for (const [name, opt] of variants) {
  diffs[name] = 0;
  for (let i = 0; i < queries; i++) {
    const q = questions[i % questions.length]!;
    const a = JSON.stringify(whole.search(q, opt(i)));
    const b = JSON.stringify(sharded.search(q, opt(i)));
    if (a !== b) {
      diffs[name]!++;
      if (!first) first = `${name} ${i} ${q}\n${a}\n${b}`;
    }
  }
}
if (first) process.stderr.write(`first difference: ${first}\n`);

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const timing: Record<string, number[]> = { whole: [], sharded: [], shard0: [], shard1: [] };
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 ? ['sharded', 'whole', 'shard1', 'shard0'] : ['whole', 'sharded', 'shard0', 'shard1']) {
    const ix = side === 'whole' ? whole : side === 'sharded' ? sharded : parts[side === 'shard0' ? 0 : 1]!;
    const c = cpu();
    for (let i = 0; i < queries; i++) ix.search(questions[i % questions.length]!, { k: 10, now });
    timing[side]!.push(Math.round(((cpu() - c) / queries) * 100) / 100);
  }
}
console.log(JSON.stringify({ docs, queries, differing: diffs, cpu_ms_a_search: timing }));
