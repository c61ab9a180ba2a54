/**
 * One very large end user's memories for the in-process benchmarks (bench/big-user.ts, bench/scratch-shards):
 * `docs` distinct texts of 1-3 LoCoMo sentences, 20 a session, a second apart, and the questions, seeded as
 * bench:latency's kind. `now`: a second after the last.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type EngineDoc, normalizeText } from '../../packages/server/src/engine/index.js';
import { locomoCorpus, mulberry32 } from './locomo.js';

export function bigUserRows(docs: number): { rows: EngineDoc[]; questions: string[]; now: number } {
  const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
  const { sentences, questions } = locomoCorpus(
    process.env.ENGRAM_LOCOMO_DIR ?? resolve(repoRoot, '../shared/bench/locomo-dev'),
  );
  const rand = mulberry32(7);
  const pick = <T>(a: T[]) => a[Math.floor(rand() * a.length)]!;
  const seen = new Set<string>();
  const rows = Array.from({ length: docs }, (_, i) => {
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
  return { rows, questions, now: 1.7e12 + docs * 1000 };
}
