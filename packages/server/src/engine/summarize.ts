// Extractive summaries: the sentences most central to a set of memories, without repeating one another.
import { analyze, splitSentences } from './text.js';

export interface SummarySource {
  id: number;
  text: string;
  /** Epoch ms; the summary keeps the sources' order in time. */
  createdAt: number;
  /** Who said it, for conversation turns; prefixed to its sentences. */
  speaker?: string | null;
}

export interface SummarySentence {
  memoryId: number;
  text: string;
}

export interface SummaryOptions {
  maxSentences: number;
  /**
   * How sentences are chosen: `centrality` (LexRank: PageRank over TF-IDF cosine similarity,
   * then maximal marginal relevance against what is already chosen) or `lead` (the earliest
   * sentences, a baseline for the benchmark).
   */
  method?: 'centrality' | 'lead';
  /** Weight of centrality against redundancy in the selection (1: ignore redundancy). */
  lambda?: number;
}

interface Candidate {
  memoryId: number;
  order: number;
  text: string;
  vector: Map<string, number>;
}

const MAX_CANDIDATES = 3_000;

function vectors(sentences: string[][]): Array<Map<string, number>> {
  const df = new Map<string, number>();
  for (const terms of sentences) for (const t of new Set(terms)) df.set(t, (df.get(t) ?? 0) + 1);
  const n = sentences.length;
  return sentences.map((terms) => {
    const v = new Map<string, number>();
    for (const t of terms) v.set(t, (v.get(t) ?? 0) + 1);
    let norm = 0;
    for (const [t, tf] of v) {
      const w = (1 + Math.log(tf)) * Math.log(1 + n / df.get(t)!);
      v.set(t, w);
      norm += w * w;
    }
    norm = Math.sqrt(norm) || 1;
    for (const [t, w] of v) v.set(t, w / norm);
    return v;
  });
}

function cosine(a: Map<string, number>, b: Map<string, number>): number {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let s = 0;
  for (const [t, w] of small) {
    const o = large.get(t);
    if (o !== undefined) s += w * o;
  }
  return s;
}

/** PageRank over the similarity graph (continuous LexRank). */
function centrality(candidates: Candidate[]): number[] {
  const n = candidates.length;
  const sim: Float64Array[] = candidates.map(() => new Float64Array(n));
  const rowSum = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const s = cosine(candidates[i]!.vector, candidates[j]!.vector);
      sim[i]![j] = s;
      sim[j]![i] = s;
      rowSum[i] = rowSum[i]! + s;
      rowSum[j] = rowSum[j]! + s;
    }
  }
  let rank = new Float64Array(n).fill(1 / n);
  const damping = 0.85;
  for (let iter = 0; iter < 30; iter++) {
    const next = new Float64Array(n).fill((1 - damping) / n);
    for (let i = 0; i < n; i++) {
      if (rowSum[i] === 0) {
        for (let j = 0; j < n; j++) next[j] = next[j]! + (damping * rank[i]!) / n;
        continue;
      }
      const share = (damping * rank[i]!) / rowSum[i]!;
      const row = sim[i]!;
      for (let j = 0; j < n; j++) if (row[j]! > 0) next[j] = next[j]! + share * row[j]!;
    }
    rank = next;
  }
  return Array.from(rank);
}

/**
 * The summary's sentences, in the sources' time order. Sentences without content words
 * ("Thanks!", "Wow.") are never chosen; near-duplicates of a chosen sentence are skipped.
 */
export function extractiveSummary(sources: SummarySource[], options: SummaryOptions): SummarySentence[] {
  const ordered = [...sources].sort((a, b) => a.createdAt - b.createdAt || a.id - b.id);
  const texts: Array<{ memoryId: number; text: string; terms: string[] }> = [];
  for (const source of ordered) {
    for (const sentence of splitSentences(source.text)) {
      const terms = analyze(sentence);
      if (terms.length < 2) continue;
      texts.push({ memoryId: source.id, text: source.speaker ? `${source.speaker}: ${sentence}` : sentence, terms });
      if (texts.length >= MAX_CANDIDATES) break;
    }
  }
  if (texts.length === 0) {
    // Nothing but short sentences: the sources themselves, earliest first.
    return ordered
      .slice(0, options.maxSentences)
      .map((s) => ({ memoryId: s.id, text: s.speaker ? `${s.speaker}: ${s.text.trim()}` : s.text.trim() }));
  }
  const vecs = vectors(texts.map((t) => t.terms));
  const candidates: Candidate[] = texts.map((t, order) => ({
    memoryId: t.memoryId,
    order,
    text: t.text,
    vector: vecs[order]!,
  }));
  let chosen: Candidate[];
  if (options.method === 'lead') {
    chosen = candidates.slice(0, options.maxSentences);
  } else {
    const scores = centrality(candidates);
    const max = Math.max(...scores) || 1;
    const lambda = options.lambda ?? 0.7;
    chosen = [];
    const remaining = new Set(candidates.map((_, i) => i));
    while (chosen.length < options.maxSentences && remaining.size > 0) {
      let best = -1;
      let bestScore = -Infinity;
      for (const i of remaining) {
        const redundancy = chosen.reduce((m, c) => Math.max(m, cosine(c.vector, candidates[i]!.vector)), 0);
        const score = lambda * (scores[i]! / max) - (1 - lambda) * redundancy;
        if (score > bestScore || (score === bestScore && i < best)) {
          best = i;
          bestScore = score;
        }
      }
      remaining.delete(best);
      const pick = candidates[best]!;
      if (chosen.some((c) => cosine(c.vector, pick.vector) > 0.8)) continue;
      chosen.push(pick);
    }
  }
  return chosen.sort((a, b) => a.order - b.order).map((c) => ({ memoryId: c.memoryId, text: c.text }));
}
