// The conflicts derived from each LoCoMo dev conversation read whole (every turn one memory of one end user, its
// speaker the "I"): a pair set shows false alarms between two statements, a conversation of hundreds of turns shows
// the ones a pair never does. A rule change should leave these as they were unless it finds a real change.
//
//   ENGRAM_LOCOMO_DIR=/work/shared/bench/locomo-dev node --import tsx bench/intelligence/conversations.ts [--show]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_ONTOLOGY, Extractor } from '../../packages/server/src/engine/nlp/index.js';
import { deriveKnowledge } from '../../packages/server/src/modules/intelligence/knowledge.js';
import { locomoDir } from './locomo-pairs.js';

const extractor = new Extractor(DEFAULT_ONTOLOGY);
const show = process.argv.includes('--show');
const dir = locomoDir();
const counts: Record<string, number> = {};
for (const file of readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort()) {
  const raw = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;
  const turns = Object.keys(raw)
    .map((key) => [key, /^session_(\d+)$/.exec(key)] as const)
    .filter(([, match]) => match)
    .sort(([, a], [, b]) => Number(a![1]) - Number(b![1]))
    .flatMap(([key]) => raw[key] as Array<{ text: string; speaker: string }>);
  const memories = turns.map((turn, i) => ({
    id: i + 1,
    createdAt: new Date(Date.UTC(2023, 0, 1) + i * 60_000).toISOString(),
    supersededBy: null,
    isSummary: false,
    extraction: extractor.extract(turn.text, turn.speaker),
  }));
  const { conflicts } = deriveKnowledge(memories, 'user');
  counts[file] = conflicts.length;
  if (show)
    for (const c of conflicts)
      console.error(
        `${file} ${c.kind} ${c.subject.name} ${c.attribute}: ${c.values.map((v) => `${v.negated ? '!' : ''}${v.value}`).join(' -> ')}\n  older: ${turns[c.older - 1]!.text}\n  newer: ${turns[c.newer - 1]!.text}`,
      );
}
console.log(JSON.stringify(counts));
