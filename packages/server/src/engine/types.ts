export interface EngineDoc {
  /** Memory id; a higher id was written later. */
  id: number;
  text: string;
  /** Conversation session; turns of one session are neighbours in id order. */
  sessionId: string | null;
  /** Epoch ms (may be the conversation's date rather than the insert time). */
  createdAt: number;
  /** 0..1, default 0.5. */
  importance: number;
  /** Net user feedback, e.g. +1 per positive and -1 per negative rating. */
  feedback: number;
  speaker?: string | null;
  tags?: string[];
}

/** Per-feature contribution; the contributions sum to the hit's fused score. */
export interface Explanation {
  [feature: string]: number;
}

export interface SearchHit {
  id: number;
  /** Fused score s, the sum of the explanation's contributions; hits are ordered by it. */
  score: number;
  /** Relevance on [0, 1]: 1 - e^(-s) (0 when s <= 0), the same scale for every query. */
  relevance: number;
  explanation?: Explanation;
}

export interface SearchOptions {
  k: number;
  /** Candidate restriction (tag/source/date filters are applied by the caller through this). */
  filter?: (id: number) => boolean;
  /** Narrow to one session. */
  sessionId?: string;
  explain?: boolean;
  /** Epoch ms used for recency and relative dates; default Date.now(). */
  now?: number;
  /** Query embedding from a remote embedder, compared with the vectors given to upsert. */
  queryVector?: Float32Array;
  /** Score every doc's vector instead of the bounded candidate search (the reference the benchmark and tests compare with). */
  exactVectors?: boolean;
  /**
   * Return only docs with supporting evidence: their own or their neighbouring turns' words, a
   * speaker or tag match, vector similarity, or (for a query that is only a time phrase) the time named.
   */
  requireEvidence?: boolean;
  /** Return only hits whose relevance is at least this. */
  minRelevance?: number;
  /** Interpret temporal phrases ("last week", "in May 2023") as a soft created_at preference; default true. */
  temporal?: boolean;
}
