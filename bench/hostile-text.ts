/**
 * The readers of untrusted text on inputs built to make them backtrack or loop quadratically (docs/architecture.md,
 * "Text read in linear time"): each reader's time (the median of 3) at 8k, 16k and 32k characters (a memory's limit)
 * and the ratio of 32k's to 8k's (linear: ~4; quadratic: ~16). Prints JSON. The fixed readers against the ones before
 * them: check out the earlier sources of the files the fix changed, run it, check them out again (bench/README.md).
 *
 *   node --import tsx bench/hostile-text.ts
 */
import { extractiveAnswer } from '../packages/server/src/engine/answer.js';
import { chatText } from '../packages/server/src/engine/nlp/chat-text.js';
import { DEFAULT_ONTOLOGY, Extractor } from '../packages/server/src/engine/nlp/index.js';
import { endsAsking, splitSentences } from '../packages/server/src/engine/text.js';
import { parserFor } from '../packages/server/src/modules/ingest/parsers/index.js';
import { paragraphs } from '../packages/server/src/modules/ingest/parsers/parser.js';

const extractor = new Extractor(DEFAULT_ONTOLOGY);
extractor.extract('I like tea.', 'Bob');
const answer = (s: string) => extractiveAnswer('where did Anna go', [{ id: 1, text: s, createdAt: 0 }]);
const limits = { maxExpandedBytes: 32 * 1024 * 1024, maxPages: 1000, maxParts: 100_000 };

const CASES: Array<[string, (n: number) => string, (s: string) => unknown]> = [
  ['extract "(((..."', (n) => `"${'('.repeat(n - 2)}"`, (s) => extractor.extract(s, 'Bob')],
  ['extract "a, a, ..."', (n) => 'a, '.repeat(n / 3), (s) => extractor.extract(s, 'Bob')],
  ['chatText "!\\n\\n\\n..."', (n) => `!${'\n'.repeat(n - 1)}`, chatText],
  ['chatText "dÀªdÀª...d-base"', (n) => `${'dÀª'.repeat(n / 3)}d-base`, chatText],
  ['splitSentences "!!!...\\n"', (n) => `${'!'.repeat(n)}\n`, splitSentences],
  ['endsAsking "?[image:?[image:..."', (n) => '?[image:'.repeat(n / 8), endsAsking],
  ['endsAsking "?\\t\\t\\t...?[image:"', (n) => `?${'\t'.repeat(n)}?[image:`, endsAsking],
  ['answer clause "\\t\\t\\t...,x"', (n) => `Anna went to Paris${'\t'.repeat(n)},x`, answer],
  ['answer edge "((((..."', (n) => `Anna went to Paris "${'('.repeat(n)}"`, answer],
  ['paragraphs "a   ...   b"', (n) => `a${' '.repeat(n)}b\nc`, paragraphs],
  ['html "<A-----..."', (n) => `<p>hi</p><A${'-'.repeat(n)}`, (s) => parserFor('html').parse(Buffer.from(s), limits)],
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const results: Record<string, { ms: number[]; ratio: number }> = {};
for (const [name, make, read] of CASES) {
  const ms: number[] = [];
  for (const n of [8_000, 16_000, 32_000]) {
    const text = make(n);
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await read(text);
      times.push(performance.now() - started);
    }
    ms.push(Math.round(median(times) * 10) / 10);
  }
  results[name] = { ms, ratio: Math.round((ms[2]! / Math.max(ms[0]!, 0.1)) * 10) / 10 };
}
console.log(JSON.stringify({ sizes: [8_000, 16_000, 32_000], results }, null, 1));
