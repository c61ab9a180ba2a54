// Thematic groups of an end user's memories: single-pass leader clustering over TF-IDF terms.
import { isStopWord, stem, tokenize } from '../../engine/index.js';

export interface Cluster {
  /** The smallest member id: stable while the cluster keeps its first member. */
  id: number;
  label: string;
  terms: string[];
  size: number;
  memory_ids: number[];
}

export interface ClusterInput {
  id: number;
  text: string;
  /** Entity names of the memory: they weigh in as terms. */
  entities: string[];
}

const SIMILARITY = 0.28;
const MIN_SIZE = 2;
const LABEL_TERMS = 3;
const CANDIDATE_TERMS = 3;

interface Group {
  members: number[];
  weights: Map<string, number>;
  norm2: number;
}

/**
 * Deterministic for the same memories: they are taken in id order, and each joins the most similar
 * group (cosine to the group's summed vector) when similar enough, else starts one. Groups are found
 * through the terms they hold, so the cost grows with the memories, not with memories x groups.
 */
export function clusterMemories(inputs: ClusterInput[]): Cluster[] {
  const ordered = [...inputs].sort((a, b) => a.id - b.id);
  const surface = new Map<string, Map<string, number>>();
  const docs = ordered.map((m) => {
    const terms = new Map<string, number>();
    for (const token of tokenize(m.text)) {
      if (isStopWord(token) || token.length < 3 || /^\d+$/.test(token)) continue;
      const s = stem(token);
      terms.set(s, (terms.get(s) ?? 0) + 1);
      const forms = surface.get(s) ?? new Map<string, number>();
      forms.set(token, (forms.get(token) ?? 0) + 1);
      surface.set(s, forms);
    }
    for (const e of m.entities) terms.set(`@${e}`, (terms.get(`@${e}`) ?? 0) + 1);
    return { id: m.id, terms };
  });
  const df = new Map<string, number>();
  for (const d of docs) for (const t of d.terms.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  const n = docs.length;
  // Terms in most memories say nothing about a theme; they neither find nor label groups.
  const common = Math.max(3, n * 0.02);
  const groups: Group[] = [];
  const byTerm = new Map<string, number[]>();
  for (const d of docs) {
    const vector = new Map<string, number>();
    let norm = 0;
    for (const [t, tf] of d.terms) {
      if ((df.get(t) ?? 0) > common || (df.get(t) ?? 0) < 2) continue;
      const w = (1 + Math.log(tf)) * Math.log(1 + n / df.get(t)!);
      vector.set(t, w);
      norm += w * w;
    }
    if (norm === 0) continue;
    norm = Math.sqrt(norm);
    // Candidate groups share one of the memory's most telling terms; each is then scored on all of them.
    const telling = [...vector].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, CANDIDATE_TERMS);
    const candidates = new Set(telling.flatMap(([t]) => byTerm.get(t) ?? []));
    let best = -1;
    let bestScore = SIMILARITY;
    for (const g of [...candidates].sort((a, b) => a - b)) {
      let dot = 0;
      for (const [t, w] of vector) dot += (w / norm) * (groups[g]!.weights.get(t) ?? 0);
      const score = dot / Math.sqrt(groups[g]!.norm2);
      if (score >= bestScore) {
        best = g;
        bestScore = score;
      }
    }
    if (best < 0) {
      best = groups.length;
      groups.push({ members: [], weights: new Map(), norm2: 0 });
    }
    const group = groups[best]!;
    group.members.push(d.id);
    for (const [t, w] of vector) {
      const before = group.weights.get(t);
      const after = (before ?? 0) + w / norm;
      group.norm2 += after * after - (before ?? 0) ** 2;
      group.weights.set(t, after);
      if (before === undefined) (byTerm.get(t) ?? byTerm.set(t, []).get(t)!).push(best);
    }
  }
  const readable = (t: string) =>
    t.startsWith('@') ? t.slice(1) : [...surface.get(t)!].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]![0];
  return groups
    .filter((g) => g.members.length >= MIN_SIZE)
    .map((g) => {
      const terms = [...g.weights]
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .slice(0, LABEL_TERMS)
        .map(([t]) => readable(t));
      const uniqueTerms = [...new Set(terms)];
      return {
        id: g.members[0]!,
        label: uniqueTerms.join(', '),
        terms: uniqueTerms,
        size: g.members.length,
        memory_ids: g.members,
      };
    })
    .sort((a, b) => b.size - a.size || a.id - b.id);
}
