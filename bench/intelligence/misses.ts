// Dev aid: prints the misses and false alarms of ONE labelled set. Since session 15 every set in
// bench/intelligence/ is tuning data (their misses were read), so only a set outside it (a new sealed
// set, kept elsewhere until it judges the rules) is refused.
import { readFileSync } from 'node:fs';
import { DEFAULT_ONTOLOGY, Extractor } from '../../packages/server/src/engine/nlp/index.js';
import { deriveKnowledge } from '../../packages/server/src/modules/intelligence/knowledge.js';
const file = process.argv[2]!;
if (!/(^|\/)bench\/intelligence\/[^/]+$/.test(file) || file.includes('..'))
  throw new Error('not a set of bench/intelligence/');
const ex = new Extractor(DEFAULT_ONTOLOGY);
const rel = (t: string) =>
  ex
    .extract(t, null)
    .relations.map((r) => `${r.subject.name}>${r.relation}>${r.object.name}${r.negated ? '>not' : ''}`)
    .join(', ');
for (const line of readFileSync(file, 'utf8').split('\n')) {
  if (!line.trim() || line.startsWith('#')) continue;
  const [kind, a, b, label] = line.split('||').map((s) => s.trim());
  if (!['yes', 'no'].includes(label!)) continue;
  const ms = [a!, b!].map((text, i) => ({
    id: i + 1,
    createdAt: `2024-0${i + 1}-01T00:00:00.000Z`,
    supersededBy: null,
    isSummary: false,
    extraction: ex.extract(text, null),
  }));
  const found = deriveKnowledge(ms, 'user').conflicts.length > 0;
  if (found !== (label === 'yes'))
    console.log(`${found ? 'FP' : 'FN'} ${kind}\n  A: ${a}\n     ${rel(a!)}\n  B: ${b}\n     ${rel(b!)}`);
}
