// The rules' cost a memory, in process: every LoCoMo dev turn extracted by this checkout's Extractor and by another
// checkout's (its source read in place), alternated five times each; the median of each side's total, per turn.
//   ENGRAM_LOCOMO_DIR=... node --import tsx bench/intelligence/extract-speed.ts /work/main
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { locomoDir } from './locomo-pairs.js';

const other = resolve(process.argv[2] ?? '/work/main');
const load = async (root: string) => {
  const nlp = await import(join(root, 'packages/server/src/engine/nlp/index.ts'));
  return new nlp.Extractor(nlp.DEFAULT_ONTOLOGY) as { extract(text: string, speaker: string | null): unknown };
};
const turns: Array<{ text: string; speaker: string }> = [];
for (const f of ['26', '30', '41', '42']) {
  const d = JSON.parse(readFileSync(join(locomoDir(), `${f}.json`), 'utf8'));
  for (const [k, v] of Object.entries(d))
    if (/^session_\d+$/.test(k)) for (const t of v as Array<{ text: string; speaker: string }>) turns.push(t);
}
const sides = { this: await load(resolve('.')), other: await load(other) };
const times: Record<string, number[]> = { this: [], other: [] };
for (let round = 0; round < 6; round++)
  for (const side of round % 2 ? (['other', 'this'] as const) : (['this', 'other'] as const)) {
    const s = performance.now();
    for (const t of turns) sides[side].extract(t.text, t.speaker);
    if (round > 0) times[side]!.push(performance.now() - s);
  }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  JSON.stringify({
    turns: turns.length,
    other,
    this_us_per_turn: Math.round((median(times.this!) / turns.length) * 1000),
    other_us_per_turn: Math.round((median(times.other!) / turns.length) * 1000),
    ratio: Math.round((median(times.this!) / median(times.other!)) * 1000) / 1000,
  }),
);
