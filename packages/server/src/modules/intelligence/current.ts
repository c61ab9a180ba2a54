// The current fact first: retrieval answers reordered by what the graph knows. A memory
// whose facts a newer statement ended ranks right below that statement (brought in if the words missed
// it), and a question about an attribute ("where do I live") has the subject's current statement of it
// on top, found through the graph rather than shared words ("I moved to Berlin").
import type { Database } from '../../store/database.js';
import { FAVORITE_PREFIX, favoriteKind } from '../../engine/nlp/index.js';
import { memoriesByIds, type Owner } from '../memories/index.js';
import type { RetrievalService, ScoredMemory } from '../retrieval/index.js';
import type { FactIndex } from './knowledge.js';
import type { Intelligence } from './service.js';

/** Question words -> the relations they ask about. */
const ASKED: Array<[RegExp, string[]]> = [
  [/\b(live[sd]?|living|home|resides?|residence|based|move[sd]?|moving)\b/, ['lives_in']],
  [/\b(work|works|working|employer|company|employed|job)\b/, ['works_at', 'works_as']],
  [/\b(job|occupation|profession|career|for a living)\b/, ['works_as']],
  [/\bhow old\b|\bage\b/, ['age', 'birth_year']],
  [/\bbirthday\b|\bborn\b|\bbirth\b/, ['birthday', 'birth_year']],
  [/\banniversary\b/, ['anniversary']],
  [/\b(married|wife|husband|spouse)\b/, ['married_to', 'relationship_status']],
  [
    /\b(partner|girlfriend|boyfriend|dating|seeing|single|relationship|engaged|fianc\w*)\b/,
    ['partner', 'relationship_status', 'married_to'],
  ],
  [/\b(kids?|children|child)\b/, ['children', 'child_count']],
  [/\bhow many\b/, ['has_count', 'child_count']],
  [/\b(car|drive|drives|driving)\b/, ['drives']],
  [/\b(phone|smartphone)\b/, ['phone']],
  [/\bprefer/, ['prefers']],
  [
    /\bhow often\b|\bhow many times\b|\bhow frequently\b|\bwhat time\b|\b(which|what) days?\b|\bwhen do (i|you|we)\b|\bhabits?\b|\broutine\b|\bstill\b/,
    ['habit', 'does'],
  ],
  [/\b(own|owns|still have|do i have|does \w+ have)\b/, ['has', 'drives', 'phone']],
  [/^(am i|are you|is (he|she|\w+))\b|\bstill\b/, ['is', 'relationship_status', 'likes', 'dislikes']],
  [/\b(like|likes|love|loves|enjoy|enjoys|hate|hates)\b/, ['likes', 'dislikes']],
  // "do I smoke?", "does Ana still swim?": a habit or possession named by the question (many-valued: its value must be named).
  [/^(do (i|you|we)|does \w+)\b/, ['does', 'has']],
];

/** The relations a question asks about, and whose: a person it names, else the end user. */
export function askedAbout(query: string, facts: FactIndex): { subject: string; relations: string[] } {
  const q = query.toLowerCase().replace(/’/g, "'");
  const relations = new Set<string>();
  for (const [pattern, names] of ASKED) if (pattern.test(q)) for (const n of names) relations.add(n);
  // "my favourite film", "favorite type of tea": the kind as the fact rules name it (favoriteKind), one or two words.
  const favourite = /\bfavou?rite ((?:[a-z-]+ ?){1,4})/.exec(q);
  if (favourite) {
    const words = favourite[1]!.trim().split(' ');
    for (let n = 1; n <= words.length; n++) {
      const kind = favoriteKind(words.slice(0, n));
      if (kind) relations.add(`${FAVORITE_PREFIX}${kind}`);
    }
  }
  let subject = 'self';
  for (const word of q.split(/[^a-z'-]+/)) {
    const id = facts.people.get(word.replace(/'s$/, ''));
    if (id) {
      subject = id;
      break;
    }
  }
  return { subject, relations: [...relations] };
}

/** Relations that hold several values at once. */
const MANY_VALUES = new Set(['has', 'likes', 'dislikes', 'does', 'is', 'knows', 'visited', 'allergic_to']);

/** At most this many current-fact memories are put on top of an answer (the newest statements). */
const MAX_PROMOTED = 3;
/** The relevance of a current fact found only through the graph (s = 1: one whole piece of evidence). */
const GRAPH_RELEVANCE = 1 - Math.exp(-1);

const strength = (relevance: number) => -Math.log(1 - Math.min(relevance, 0.999999));

type Reason = 'current_fact' | 'superseded_by';

/**
 * Reorders ranked memories by the owner's facts (see the file's head). Filtered and session-scoped
 * queries are only reordered (nothing is brought in that their filters did not pass). Scores stay
 * non-increasing; with explanations, the change of a memory's score is its `current_fact` (raised)
 * or `superseded_by` (lowered) contribution, so the contributions still add up to its score.
 */
export async function currentFirst(
  database: Database,
  owner: Owner,
  facts: FactIndex,
  query: string,
  ranked: ScoredMemory[],
  options: { k: number; explain: boolean; bringIn: boolean },
): Promise<ScoredMemory[]> {
  const { subject, relations } = askedAbout(query, facts);
  // A memory is superseded when all its facts were ended, or the one the question asks about was.
  const endedBy = (id: number) => {
    const asked = facts.endedIn.get(id);
    if (asked) for (const r of relations) if (asked.has(r)) return asked.get(r);
    return facts.successorOf.get(id);
  };
  const successor = (id: number) => {
    let at = id;
    for (let hops = 0; hops < 16 && endedBy(at) !== undefined; hops++) at = endedBy(at)!;
    return at === id ? undefined : at;
  };
  // A relation with many values at once (likes, has) is asked about only with its value named ("do I own a kayak").
  const words = new Set(
    query
      .toLowerCase()
      .split(/[^\p{L}\p{N}'-]+/u)
      .filter((w) => w.length > 2)
      .map((w) => w.replace(/s$/, '')),
  );
  const named = (value: string) => value.split(/\s+/).some((w) => words.has(w.replace(/s$/, '')));
  const promoted: number[] = [];
  for (const relation of relations) {
    for (const { id, value } of facts.current.get(`${subject}|${relation}`) ?? []) {
      if (MANY_VALUES.has(relation) && !named(value)) continue;
      if (!promoted.includes(id) && successor(id) === undefined) promoted.push(id);
    }
  }
  const inRanked = new Set(ranked.map((m) => m.id));
  const top = options.bringIn
    ? promoted.slice(0, MAX_PROMOTED)
    : promoted.filter((id) => inRanked.has(id)).slice(0, MAX_PROMOTED);
  const needsSuccessor = ranked.some((m) => successor(m.id) !== undefined);
  if (top.length === 0 && !needsSuccessor) return ranked;

  // The new order: promoted current facts, then the ranking with each superseded memory right after its successor.
  const order: number[] = [...top];
  const reasons = new Map<number, Reason>(top.map((id) => [id, 'current_fact']));
  for (const m of ranked) {
    const next = successor(m.id);
    if (next !== undefined && (options.bringIn || inRanked.has(next))) {
      if (!order.includes(next)) order.push(next);
      reasons.set(next, 'current_fact');
      reasons.set(m.id, 'superseded_by');
    }
    if (!order.includes(m.id)) order.push(m.id);
  }
  const missing = order.filter((id) => !inRanked.has(id));
  const rows = new Map(ranked.map((m) => [m.id, m]));
  for (const row of await memoriesByIds(database.db, owner, missing))
    rows.set(row.id, Object.assign(row, { score: 0 }) as ScoredMemory);
  const ordered = order
    .map((id) => rows.get(id))
    .filter((m): m is ScoredMemory => m !== undefined)
    .slice(0, options.k);

  // Scores: a current fact takes the score of the place it is put in; nothing scores above the memory before it.
  const before = new Map(ranked.map((m) => [m.id, m.score]));
  let ceiling = ranked.length > 0 ? Math.max(ranked[0]!.score, GRAPH_RELEVANCE) : GRAPH_RELEVANCE;
  return ordered.map((m) => {
    const reason = reasons.get(m.id);
    const old = before.get(m.id);
    const score = reason === 'current_fact' || old === undefined ? ceiling : Math.min(old, ceiling);
    ceiling = score;
    m.score = score;
    if (options.explain && reason) {
      const explanation = { ...(m.explanation ?? {}) };
      const sum = Object.values(explanation).reduce((a, b) => a + b, 0);
      explanation[reason] = (explanation[reason] ?? 0) + strength(score) - sum;
      m.explanation = explanation;
    }
    return m;
  });
}

/**
 * The retrieval service with `query` answering the current fact first; everything else as it is.
 * `mostMemories`: owners with more memories are answered as ranked (ENGRAM_CURRENT_FACT_MAX_MEMORIES:
 * the graph of a large end user costs a long first extraction and a replay per write).
 */
export function currentFactsFirst(
  inner: RetrievalService,
  intelligence: Intelligence,
  database: Database,
  mostMemories: number,
): RetrievalService {
  return {
    matching: (...args) => inner.matching(...args),
    retrieve: (...args) => inner.retrieve(...args),
    search: (...args) => inner.search(...args),
    compose: (...args) => inner.compose(...args),
    query: async (owner, input, heldAt) => {
      // The revision the ranking was read at, when it was (the steady state): the view is checked against it, not read again.
      let rankedAt: number | undefined;
      const ranked = await inner.query(owner, input, heldAt, (revision) => (rankedAt = revision));
      const view = mostMemories > 0 ? await intelligence.viewWithin(owner, mostMemories, rankedAt) : null;
      if (!view) return ranked;
      return currentFirst(database, owner, view.facts(), input.query, ranked, {
        k: input.k ?? 10,
        explain: input.explain ?? false,
        bringIn: input.filters === undefined && input.session_id === undefined,
      });
    },
  };
}
