// Dev aid (not a bench): reads "A || B" pairs from stdin and prints each statement's facts, endings and updates,
// and whether the pair derives a conflict.
import { readFileSync } from 'node:fs';
import { DEFAULT_ONTOLOGY, Extractor } from '../../packages/server/src/engine/nlp/index.js';
import { deriveKnowledge } from '../../packages/server/src/modules/intelligence/knowledge.js';
const ex = new Extractor(DEFAULT_ONTOLOGY);
const show = (text: string) => {
  const e = ex.extract(text, null);
  const rel = e.relations.map(
    (r) =>
      `${r.subject.name}>${r.relation}>${r.object.name}${r.negated ? '>not' : ''}${r.aspect ? `[${r.aspect}]` : ''}`,
  );
  const more = [
    ...(e.endings ?? []).map((x) => `END ${JSON.stringify(x)}`),
    ...(e.updates ?? []).map((x) => `UPD ${JSON.stringify(x)}`),
    ...(e.habitChanges ?? []).map((x) => `HAB ${JSON.stringify(x)}`),
    ...(e.ofThing ?? []).map((x) => `THING ${x.relation}>${x.object.name}`),
    ...(e.ofPronoun ?? []).map((x) => `PRON ${x.subject.name}>${x.relation}>${x.object.name}`),
  ];
  return { e, line: [rel.join(', '), ...more].join('\n       ') };
};
for (const line of readFileSync(0, 'utf8').split('\n')) {
  if (!line.includes('||')) continue;
  const [a, b] = line.split('||').map((s) => s.trim());
  const A = show(a!);
  const B = show(b!);
  const ms = [A.e, B.e].map((extraction, i) => ({
    id: i + 1,
    createdAt: `2024-0${i + 1}-01T00:00:00.000Z`,
    supersededBy: null,
    isSummary: false,
    extraction,
  }));
  const c = deriveKnowledge(ms, 'user').conflicts.length > 0;
  console.log(`${c ? 'YES' : 'no '} A: ${a}\n       ${A.line}\n    B: ${b}\n       ${B.line}`);
}
