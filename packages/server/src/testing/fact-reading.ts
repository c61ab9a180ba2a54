// The rule reader as the fact tests probe it: a text's facts as `relation[!]=value`, and whether two statements
// of one end user conflict (the older first).
import { DEFAULT_ONTOLOGY, Extractor } from '../engine/nlp/index.js';
import { deriveKnowledge } from '../modules/intelligence/knowledge.js';

const extractor = new Extractor(DEFAULT_ONTOLOGY);

export const factsOf = (text: string) =>
  extractor
    .extract(text, null)
    .relations.map((r) => `${r.relation}${r.negated ? '!' : ''}=${r.object.name.toLowerCase()}`);

export const conflicting = (older: string, newer: string) =>
  deriveKnowledge(
    [older, newer].map((text, i) => ({
      id: i + 1,
      createdAt: `2024-0${i + 1}-01T00:00:00.000Z`,
      supersededBy: null,
      isSummary: false,
      extraction: extractor.extract(text, null),
    })),
    'user',
  ).conflicts.length > 0;
