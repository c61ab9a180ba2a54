/**
 * Two engines in one process on one very large end user's rows (issue 51): `--base DIR` is another tree's
 * `packages/server/src/engine` (e.g. main's from `git archive`), the other this tree's. Each builds its index from
 * the same rows; every question is asked of both in several forms (plain, explained, filtered, k 3, evidence
 * required) and the hits compared (ids, order, scores, explanations); then CPU a search in blocks of `--block`
 * questions, alternated base/this then this/base, `--rounds` times. On a shared machine this decides between
 * revisions where HTTP pairs do not (the load moves both alike). JSON.
 *
 *   node --expose-gc --import tsx bench/engine-pair.ts --base /tmp/main/packages/server/src/engine [--docs 300000] [--rounds 4] [--profile DIR]
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as self from '../packages/server/src/engine/index.js';
import type { SearchOptions } from '../packages/server/src/engine/types.js';
import { option } from './lib/args.js';
import { bigUserRows } from './lib/big-user-rows.js';
import { profiled } from './lib/profile.js';

const baseDir = option('--base');
if (!baseDir) throw new Error("--base DIR (another tree's packages/server/src/engine) is required");
const docs = Number(option('--docs') ?? 300_000);
const rounds = Number(option('--rounds') ?? 4);
const block = Number(option('--block') ?? 100);
const base = (await import(pathToFileURL(resolve(baseDir, 'index.ts')).href)) as typeof self;
const { rows, questions, now } = bigUserRows(docs);
const build = (engine: typeof self) => {
  const ix = new engine.MemoryIndex({});
  for (const r of rows) ix.upsert(r);
  ix.fit();
  return ix;
};
const indexes = { base: build(base), self: build(self) };

const forms: [string, (i: number) => SearchOptions][] = [
  ['plain', () => ({ k: 10, now })],
  ['explain', () => ({ k: 10, now, explain: true })],
  ['filter', () => ({ k: 10, now, filter: (id: number) => id % 3 !== 0 })],
  ['session', (i) => ({ k: 10, now, sessionId: `s${1 + ((i * 37) % Math.ceil(docs / 20))}` })],
  ['k3', () => ({ k: 3, now })],
  ['k50', () => ({ k: 50, now })],
  ['evidence', () => ({ k: 10, now, requireEvidence: true, minRelevance: 0.2 })],
];
const differ: Record<string, number> = {};
let compared = 0;
let first = '';
for (const [name, opts] of forms) {
  differ[name] = 0;
  questions.forEach((q, i) => {
    const a = JSON.stringify(indexes.base.search(q, opts(i)));
    const b = JSON.stringify(indexes.self.search(q, opts(i)));
    compared++;
    if (a === b) return;
    differ[name]!++;
    if (!first) first = `${name} ${i} ${q}\n${a}\n${b}`;
  });
}
if (first) process.stderr.write(`first difference: ${first}\n`);

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const spent = { base: 0, self: 0 };
const asked = { base: 0, self: 0 };
let at = 0;
const run = (who: 'base' | 'self', from: number) => {
  const ix = indexes[who];
  const c = cpu();
  for (let i = 0; i < block; i++) ix.search(questions[(from + i) % questions.length]!, { k: 10, now });
  spent[who] += cpu() - c;
  asked[who] += block;
};
const blocks = Math.ceil(questions.length / block);
for (let r = 0; r < rounds; r++) {
  for (let b = 0; b < blocks; b++) {
    const order: ('base' | 'self')[] = (r + b) % 2 === 0 ? ['base', 'self'] : ['self', 'base'];
    for (const who of order) run(who, at);
    at += block;
  }
}
// `--profile DIR`: a CPU profile of this tree's engine alone over two more passes of the questions (summary:
// bench/profile-summary.ts).
const profileDir = option('--profile');
await profiled(profileDir, 'engine-pair-self', async () => {
  if (profileDir) for (let r = 0; r < 2; r++) for (const q of questions) indexes.self.search(q, { k: 10, now });
});
const per = (who: 'base' | 'self') => Math.round((spent[who] / asked[who]) * 1000) / 1000;
console.log(
  JSON.stringify({
    docs,
    compared,
    differ,
    searches_each: asked.self,
    base_cpu_ms: per('base'),
    self_cpu_ms: per('self'),
    ratio: Math.round((per('self') / per('base')) * 1000) / 1000,
  }),
);
