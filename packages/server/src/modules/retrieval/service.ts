import { analyze, estimateTokens, parseTemporal, type SearchHit } from '../../engine/index.js';
import { checkHeld, verifyHeld } from '../../core/credentials-clock.js';
import { invalid } from '../../core/errors.js';
import type { Database } from '../../store/database.js';
import {
  filterPredicate,
  filtersReadText,
  memoriesByIds,
  ownerMemoriesAt,
  revisionOf,
  type Owner,
} from '../memories/index.js';
import type { MemoryView, ScopedMemory } from '../memories/index.js';
import type { EmbeddingStore } from './embeddings.js';
import type { CachedIndex, DocMeta, IndexCache } from './index-cache.js';
import type { FiltersInput } from './schemas.js';

export type ScoredMemory = MemoryView & {
  score: number;
  explanation?: Record<string, number>;
  speaker?: string | null;
};

/**
 * The relevance cutoff every retrieval operation takes. Absent: only memories with supporting
 * evidence are returned. A number: results scoring below it are dropped too; 0 turns the cutoff off.
 */
export type Cutoff = { min_score?: number };

function cutoffOptions(input: Cutoff): { requireEvidence: boolean; minRelevance: number } {
  return { requireEvidence: input.min_score !== 0, minRelevance: input.min_score ?? 0 };
}
export type SearchRoute = 'keyword' | 'semantic' | 'temporal' | 'recent';

/** Who is being searched: one end user, or (for principal-scoped composition) a whole project. */
export type RetrievalScope =
  | { kind: 'owner'; owner: Owner }
  | { kind: 'project'; projectId: string; tenantId: string | null };

const DEFAULT_K = 10;
const RRF_K = 60;
const DAY = 86_400_000;

/** A period a memory falls in: by its stored time (a turn's timestamp) or by a date its text names. */
function happenedWithin(meta: DocMeta, range: { from: number; to: number }): boolean {
  if (meta.createdAt >= range.from && meta.createdAt < range.to) return true;
  return meta.event !== undefined && meta.event.from < range.to && meta.event.to > range.from;
}

/**
 * Whether the memory of an id passes the filters (and happened within the range): by what the index keeps beside
 * it, and by its text when the filters read it (then the cached index's texts: forOwnerWithTexts).
 */
function filterOf(
  { meta, texts }: CachedIndex,
  f: FiltersInput | undefined,
  range?: { from: number; to: number },
): (id: number) => boolean {
  const passes = filterPredicate(f);
  const readsText = filtersReadText(f);
  if (readsText && !texts) throw new Error('filters on the text need the index with its texts');
  return (id) => {
    const m = meta.get(id);
    if (!m || (range && !happenedWithin(m, range))) return false;
    if (!readsText) return passes(m);
    // No text: forgotten after the texts were read (the index drops it at its next refresh).
    const text = texts!.get(id);
    return text !== undefined && passes(m, text);
  };
}

/** Sentences or lines of a long prompt that carry content words, longest first, at most 16. */
function promptSegments(prompt: string): string[] {
  const parts = prompt
    .split(/(?<=[.?!])\s+|\n+/)
    .map((p) => p.trim())
    .filter((p) => analyze(p).length > 0);
  return parts.sort((a, b) => b.length - a.length).slice(0, 16);
}

/**
 * Retrieval operations over the per-end-user indexes: every call first brings the index up to
 * date with the database, then ranks in memory and reads the winning rows back whole.
 */
/**
 * A memory that a resolved decision superseded ranks below every memory that was not superseded
 * (its successor among them), at no more than half the lowest of their scores; order is otherwise kept.
 */
function demoteSuperseded<T extends { score: number; superseded_by: number | null }>(ranked: T[]): T[] {
  const kept = ranked.filter((m) => m.superseded_by === null);
  if (kept.length === ranked.length) return ranked;
  const floor = kept.length > 0 ? kept[kept.length - 1]!.score : Infinity;
  return [
    ...kept,
    ...ranked.filter((m) => m.superseded_by !== null).map((m) => ({ ...m, score: Math.min(m.score, floor) / 2 })),
  ];
}

interface RankOptions {
  k: number;
  cutoff: Cutoff;
  sessionId?: string;
  filters?: FiltersInput;
  explain?: boolean;
  range?: { from: number; to: number };
  temporal?: boolean;
  only?: Set<number>;
}

function searchIndex(
  cached: CachedIndex,
  query: string,
  opts: RankOptions,
  queryVector: Float32Array | undefined,
): SearchHit[] {
  const { only } = opts;
  const passes =
    opts.filters !== undefined || opts.range !== undefined ? filterOf(cached, opts.filters, opts.range) : undefined;
  const filter =
    only && passes ? (id: number) => only.has(id) && passes(id) : only ? (id: number) => only.has(id) : passes;
  return cached.index.search(query, {
    k: opts.k,
    ...cutoffOptions(opts.cutoff),
    ...(opts.sessionId !== undefined ? { sessionId: opts.sessionId } : {}),
    ...(filter ? { filter } : {}),
    explain: opts.explain ?? false,
    temporal: opts.temporal ?? true,
    queryVector,
  });
}

/**
 * Rows of ranked hits with their relevance (and explanation when asked), best first. The rows were
 * just read for this answer, so they are given their score in place (keeping their tenant_id,
 * which no response schema of theirs serializes): a copy by spreading costs a few microseconds a
 * row, and leaves objects that the response serializer reads several times slower.
 */
function scored(
  hits: Array<Pick<SearchHit, 'id' | 'relevance' | 'explanation'>>,
  rows: ScopedMemory[],
  explain = false,
): ScoredMemory[] {
  const byId = new Map(hits.map((h) => [h.id, h]));
  return demoteSuperseded(
    rows.map((row) => {
      const hit = byId.get(row.id)!;
      const memory: ScoredMemory = Object.assign(row, { score: hit.relevance });
      if (explain && hit.explanation) memory.explanation = hit.explanation;
      return memory;
    }),
  );
}

export type QueryInput = {
  query: string;
  k?: number;
  session_id?: string;
  filters?: FiltersInput;
  explain?: boolean;
} & Cutoff;

/** A query as ranked by Retrieval.rankHeld. */
export interface Ranking {
  /** Its hits on the owner's index as held, and the revision that index is of; none when none is held or it is being brought up to date. */
  held?: HeldHits;
  /** Its vector from a remote embedder, computed once for whichever path answers. */
  queryVector?: Float32Array;
}

export interface HeldHits {
  hits: SearchHit[];
  rankedAt: number;
}

export function checkQuery(input: QueryInput): void {
  if (input.query.trim() === '') throw invalid('query', 'query must not be blank');
}

function queryOptions(input: QueryInput): RankOptions {
  return {
    k: input.k ?? DEFAULT_K,
    cutoff: input,
    ...(input.session_id !== undefined ? { sessionId: input.session_id } : {}),
    ...(input.filters !== undefined ? { filters: input.filters } : {}),
    explain: input.explain ?? false,
  };
}

/**
 * The answer to a query ranked on a held index, if the owner's revision, read with the winning rows
 * in one statement, is still the one the index was of; undefined otherwise (rank afresh).
 */
export async function answerFromHeld(
  database: Database,
  owner: Owner,
  { hits, rankedAt }: HeldHits,
  input: QueryInput,
  heldAt?: number,
): Promise<ScoredMemory[] | undefined> {
  const { revision, memories, clock } =
    hits.length > 0
      ? await ownerMemoriesAt(
          database,
          owner,
          hits.map((h) => h.id),
        )
      : { revision: await revisionOf(database.db, owner), memories: [], clock: undefined };
  if (revision !== rankedAt) return undefined;
  if (clock !== undefined) checkHeld(heldAt, clock);
  else await verifyHeld(database.db, heldAt);
  return scored(hits, memories, input.explain);
}

export class Retrieval {
  constructor(
    private readonly database: Database,
    private readonly cache: IndexCache,
    private readonly embeddings: EmbeddingStore,
  ) {}

  /** The owner's index, with its texts when the filters read them. */
  private ownerIndex(owner: Owner, filters: FiltersInput | undefined): Promise<CachedIndex> {
    return filtersReadText(filters) ? this.cache.forOwnerWithTexts(owner) : this.cache.forOwner(owner);
  }

  private indexOf(scope: RetrievalScope): Promise<CachedIndex> {
    return scope.kind === 'owner'
      ? this.cache.forOwner(scope.owner)
      : this.cache.forProject(scope.projectId, scope.tenantId);
  }

  /** Whole memory rows for ranked hits, best first; rows forgotten since ranking drop out. */
  private async hydrate(
    scope: RetrievalScope,
    hits: Array<Pick<SearchHit, 'id' | 'relevance' | 'explanation'>>,
    explain = false,
  ): Promise<ScoredMemory[]> {
    const rowScope =
      scope.kind === 'owner'
        ? { projectId: scope.owner.projectId, tenantId: scope.owner.tenantId, endUserId: scope.owner.endUserId }
        : { projectId: scope.projectId, tenantId: scope.tenantId };
    return scored(
      hits,
      await memoriesByIds(
        this.database.db,
        rowScope,
        hits.map((h) => h.id),
      ),
      explain,
    );
  }

  private async rank(cached: CachedIndex, query: string, opts: RankOptions): Promise<SearchHit[]> {
    return searchIndex(cached, query, opts, await this.embeddings.embedQuery(query));
  }

  /**
   * `heldAt`: the request uses a held key read at this credentials clock, which a statement here
   * checks (core/credentials-clock.ts). Ranked on the index held, its rows read with the owner's
   * revision in one statement: exact when the index was of that revision (one round trip);
   * otherwise ranked afresh. (The search thread runs the same three steps, the middle one on the
   * HTTP thread: thread.ts.) `seen`: told the owner's revision when the answer was ranked on the
   * index held and that revision was read with its rows (so a caller need not read it again).
   */
  async query(
    owner: Owner,
    input: QueryInput,
    heldAt?: number,
    seen?: (revision: number) => void,
  ): Promise<ScoredMemory[]> {
    checkQuery(input);
    const { held, queryVector } = await this.rankHeld(owner, input);
    const answer = held && (await answerFromHeld(this.database, owner, held, input, heldAt));
    if (answer) {
      seen?.(held.rankedAt);
      return answer;
    }
    return this.queryAfresh(owner, input, heldAt, queryVector);
  }

  /**
   * The query ranked on the owner's index as held (Ranking). A ranking on a held index counts as a
   * lookup answered from a current index: should the revision have moved meanwhile, queryAfresh
   * counts its own.
   */
  async rankHeld(owner: Owner, input: QueryInput): Promise<Ranking> {
    const queryVector = await this.embeddings.embedQuery(input.query);
    const vector = queryVector ? { queryVector } : {};
    const index = this.cache.held(owner);
    // The index is of index.revision unless a refresh has begun (the search below is synchronous). Filters on the text
    // need its texts, read by queryAfresh the first time.
    if (!index || index.refreshing || (filtersReadText(input.filters) && !index.texts)) return vector;
    this.cache.confirmed();
    return {
      held: { hits: searchIndex(index, input.query, queryOptions(input), queryVector), rankedAt: index.revision },
      ...vector,
    };
  }

  /** The query on the owner's index brought up to date (the general path). */
  async queryAfresh(owner: Owner, input: QueryInput, heldAt?: number, vector?: Float32Array): Promise<ScoredMemory[]> {
    checkQuery(input);
    const queryVector = vector ?? (await this.embeddings.embedQuery(input.query));
    const scope: RetrievalScope = { kind: 'owner', owner };
    const cached = await this.ownerIndex(owner, input.filters);
    const [ranked] = await Promise.all([
      this.hydrate(scope, searchIndex(cached, input.query, queryOptions(input), queryVector), input.explain),
      verifyHeld(this.database.db, heldAt),
    ]);
    return ranked;
  }

  /** Ids of the owner's live memories that pass the filters (and session), oldest first: the same filters query applies. */
  async matching(owner: Owner, input: { filters?: FiltersInput; session_id?: string }): Promise<number[]> {
    const cached = await this.ownerIndex(owner, input.filters);
    const passes = filterOf(cached, input.filters);
    const ids: number[] = [];
    for (const [id, m] of cached.meta) {
      if (input.session_id !== undefined && m.sessionId !== input.session_id) continue;
      if (passes(id)) ids.push(id);
    }
    return ids.sort((a, b) => a - b);
  }

  /**
   * Memories for a whole prompt (several questions, long context): each content-bearing sentence
   * is searched on its own and the rankings are fused (reciprocal rank), then the best are
   * taken while they fit the token budget. A memory's score is its best relevance to the prompt
   * or to any one of its sentences.
   */
  async retrieve(
    scope: RetrievalScope,
    input: { prompt: string; k?: number; token_budget?: number } & Cutoff,
  ): Promise<{ memories: ScoredMemory[]; tokens: number }> {
    if (input.prompt.trim() === '') throw invalid('prompt', 'prompt must not be blank');
    const k = input.k ?? DEFAULT_K;
    const cached = await this.indexOf(scope);
    const segments = promptSegments(input.prompt);
    const queries = segments.length > 1 ? [input.prompt, ...segments] : [input.prompt];
    const fused = new Map<number, number>();
    const relevance = new Map<number, number>();
    for (const q of queries) {
      const hits = await this.rank(cached, q, { k: Math.max(2 * k, 20), cutoff: input });
      hits.forEach((h, rank) => {
        fused.set(h.id, (fused.get(h.id) ?? 0) + 1 / (RRF_K + rank));
        relevance.set(h.id, Math.max(relevance.get(h.id) ?? 0, h.relevance));
      });
    }
    const ranked = [...fused.entries()]
      .sort((a, b) => b[1] - a[1] || b[0] - a[0])
      .map(([id]) => ({ id, relevance: relevance.get(id)! }));
    const memories = await this.hydrate(scope, ranked.slice(0, 4 * k));
    return fitBudget(memories, k, input.token_budget);
  }

  /** Picks a route for a query (or takes the caller's) and says why. */
  async search(
    owner: Owner,
    input: { query: string; k?: number; route?: SearchRoute | 'auto' } & Cutoff,
    now = Date.now(),
  ): Promise<{
    route: SearchRoute;
    reason: string;
    range?: { from: string; to: string; matched: string };
    memories: ScoredMemory[];
  }> {
    if (input.query.trim() === '') throw invalid('query', 'query must not be blank');
    const k = input.k ?? DEFAULT_K;
    const temporal = parseTemporal(input.query, now);
    const terms = analyze(input.query);
    let route: SearchRoute;
    let reason: string;
    if (input.route && input.route !== 'auto') {
      route = input.route;
      reason = 'route chosen by the caller';
    } else if (temporal) {
      route = 'temporal';
      reason = `the query names a time ("${temporal.matched}"), so results are limited to that period`;
    } else if (/\b(recent|recently|latest|newest|last (few|couple))\b/i.test(input.query) && terms.length <= 3) {
      route = 'recent';
      reason = 'the query asks for what is recent and names little else, so the newest memories come first';
    } else if (terms.length <= 3 || /["'][^"']+["']|\d/.test(input.query)) {
      route = 'keyword';
      reason = 'a short or exact query (few terms, quotes or numbers) is answered best by its words';
    } else {
      route = 'semantic';
      reason = this.embeddings.embedder
        ? `a descriptive query is answered by meaning: ${this.embeddings.id} vectors fused with word and context evidence`
        : 'a descriptive query is answered by fused evidence: stemmed words, conversation context, sub-word similarity and recency';
    }
    const scope: RetrievalScope = { kind: 'owner', owner };
    const cached = await this.indexOf(scope);
    let hits: Array<Pick<SearchHit, 'id' | 'relevance'>>;
    let range: { from: string; to: string; matched: string } | undefined;
    if (route === 'recent') {
      // Newest first; each scored like any other result, for the query's words.
      const newest = [...cached.meta.entries()]
        .sort((a, b) => b[1].createdAt - a[1].createdAt || b[0] - a[0])
        .slice(0, k)
        .map(([id]) => id);
      const scored = await this.rank(cached, input.query, { k, cutoff: { min_score: 0 }, only: new Set(newest) });
      const relevance = new Map(scored.map((h) => [h.id, h.relevance]));
      // The newest are the answer whatever they say; only a min_score the caller sends cuts them.
      hits = newest
        .map((id) => ({ id, relevance: relevance.get(id) ?? 0 }))
        .filter((h) => h.relevance >= (input.min_score ?? 0));
    } else if (route === 'temporal') {
      const span = temporal ?? { from: 0, to: now + DAY, matched: '' };
      range = { from: new Date(span.from).toISOString(), to: new Date(span.to).toISOString(), matched: span.matched };
      hits = await this.rank(cached, input.query, { k, cutoff: input, range: { from: span.from, to: span.to } });
      if (hits.length === 0) {
        // Nothing relevant is dated in the period: the period becomes a preference, not a filter.
        hits = await this.rank(cached, input.query, { k, cutoff: input });
        reason =
          hits.length > 0
            ? `the query names a time ("${span.matched}"), but no relevant memory is dated in that period, so results come from any time`
            : `the query names a time ("${span.matched}"); no relevant memory was found in that period or at any other time`;
      }
    } else {
      hits = await this.rank(cached, input.query, { k, cutoff: input, temporal: route === 'semantic' });
    }
    return { route, reason, ...(range ? { range } : {}), memories: await this.hydrate(scope, hits) };
  }

  /** A ready prompt block that cites the memories it used as [m:id]. */
  async compose(
    scope: RetrievalScope,
    input: { task: string; token_budget?: number; template?: string } & Cutoff,
  ): Promise<{ prompt: string; memories: ScoredMemory[]; tokens: number }> {
    const template = input.template ?? DEFAULT_TEMPLATE;
    if (!template.includes('{{memories}}')) throw invalid('template', 'template must contain {{memories}}');
    const budget = input.token_budget ?? 1_000;
    // One pass with a function: a task or memory text containing `$&`, `$'` or `{{task}}` is quoted verbatim.
    const fill = (memories: string) => {
      let first = true;
      return template.replace(/\{\{(memories|task)\}\}/g, (whole, name: string) => {
        if (name === 'task') return input.task;
        if (!first) return whole;
        first = false;
        return memories;
      });
    };
    const frame = fill('');
    const room = budget - estimateTokens(frame);
    if (room <= 0) throw invalid('token_budget', 'token_budget is too small for the task and template');
    const { memories } = await this.retrieve(scope, {
      prompt: input.task,
      k: 50,
      ...(input.min_score !== undefined ? { min_score: input.min_score } : {}),
    });
    const used: ScoredMemory[] = [];
    let tokens = 0;
    for (const m of memories) {
      const cost = estimateTokens(citation(m)) + 1;
      if (tokens + cost > room) continue;
      used.push(m);
      tokens += cost;
    }
    const block = used.length > 0 ? used.map(citation).join('\n') : '(no relevant memories)';
    const prompt = fill(block);
    return { prompt, memories: used, tokens: estimateTokens(prompt) };
  }
}

const DEFAULT_TEMPLATE =
  'Relevant memories, most relevant first. Cite a memory as [m:<id>] where you rely on it.\n{{memories}}\n\nTask: {{task}}';

function citation(m: ScoredMemory): string {
  return `[m:${m.id}] (${m.created_at.slice(0, 10)}) ${m.text.replace(/\s+/g, ' ').trim()}`;
}

/** The best memories, in order, that fit the budget (all k when there is none). */
function fitBudget(
  memories: ScoredMemory[],
  k: number,
  budget: number | undefined,
): { memories: ScoredMemory[]; tokens: number } {
  const out: ScoredMemory[] = [];
  let tokens = 0;
  for (const m of memories) {
    if (out.length >= k) break;
    const cost = estimateTokens(m.text);
    if (budget !== undefined && tokens + cost > budget) continue;
    out.push(m);
    tokens += cost;
  }
  return { memories: out, tokens };
}
