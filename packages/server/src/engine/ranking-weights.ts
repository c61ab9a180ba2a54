// How MemoryIndex fuses its features into one score: the weights, the features' order in an
// explanation, and the score's mapping onto [0, 1].

/**
 * Fusion weights. Lexical-type features are divided by the best lexical score of the
 * query so they live on [0, 1] like cosine similarities. Few weights on purpose:
 * each one was chosen on one LoCoMo conversation and checked on the other.
 */
export interface RankingWeights {
  lexical: number;
  /** Lexical evidence of the turns next to a doc in its session (question -> answer pairs). */
  context: number;
  /** Decay of context evidence per turn of distance. */
  contextDecay: number;
  /** How many turns on each side count as context. */
  contextWindow: number;
  /**
   * Weight of context evidence a doc receives from the turns *after* it, relative to the
   * turns before it (1 = symmetric). In dialogue an answer follows its question, so a turn
   * is better explained by what was said just before it than by what came next.
   */
  contextBackward: number;
  /** Lexical evidence of the doc's whole session (summed, normalised by the best session). */
  session: number;
  /** Query terms that match the doc's speaker or tags (normalised by the best match). */
  meta: number;
  /**
   * A doc whose speaker/tags match the query also has its word evidence lifted by this
   * fraction (in `meta`): "what has John done" is answered by what John said. Unlike the
   * flat `meta`, it only reorders docs that have word evidence of their own.
   */
  metaEvidence: number;
  /**
   * Text-match weight of a query term that is a speaker name or tag of this index. In
   * conversation, a name inside a turn is mostly the addressee ("Thanks, Caroline!"),
   * so "what did Caroline say" is better judged by who spoke than by who was named.
   */
  metaTermInText: number;
  /**
   * Speaker/tag match of a doc with no first-person word, as a fraction of a full match: in
   * conversation such a turn speaks of the other person ("That's great, Joanna!"), not of
   * its speaker.
   */
  metaNotSelf: number;
  /**
   * A doc's own word evidence when its text ends with a question, as a fraction: the turn
   * that asks is less often the one that tells (the answer follows; `context` carries the
   * question's words to it).
   */
  asking: number;
  /**
   * Pseudo-relevance feedback: terms characteristic of the best first-pass docs are
   * searched as a second query at this weight (0 disables).
   */
  expansion: number;
  expansionDocs: number;
  expansionTerms: number;
  /**
   * A query word no memory holds (a typo, most often) is also searched as its nearest held word
   * (`Bm25Field.nearestTerm`), at this fraction of its weight (0 disables).
   */
  typo: number;
  /**
   * A question word naming a kind of thing ("instruments", "countries") is also searched as the
   * instances of it this index holds (answer-types.ts), each at this fraction of its weight (0 disables).
   */
  answerType: number;
  /**
   * The same for the other single-word members the lexicon of kinds (nlp/word-kinds.txt, from WordNet)
   * lists for the kinds it has ("bassoon", "Tampa", "kickboxing"); 0 disables.
   */
  answerTypeLexicon: number;
  /** Cosine of built-in hashed vectors (sub-word overlap). */
  ngram: number;
  /** Cosine of remote embedder vectors, when the caller supplies them. */
  semantic: number;
  /** Doc created inside a time range named by the query. */
  time: number;
  /**
   * A "when ..." / "how long ..." question lifts the word evidence of docs whose text names
   * a time ("last week", "in May", "2019") by this fraction (in `time`): the answer to when
   * is usually a turn that says when.
   */
  whenNamesTime: number;
  recency: number;
  recencyHalfLifeDays: number;
  importance: number;
  feedback: number;
}

export const DEFAULT_WEIGHTS: RankingWeights = {
  lexical: 1,
  context: 0.7,
  contextDecay: 0.5,
  contextWindow: 2,
  contextBackward: 0.5,
  session: 0.2,
  meta: 0.3,
  metaEvidence: 0.3,
  metaTermInText: 0.25,
  metaNotSelf: 0.7,
  asking: 0.8,
  expansion: 0.1,
  expansionDocs: 3,
  expansionTerms: 10,
  typo: 0.5,
  answerType: 0.2,
  answerTypeLexicon: 0.1,
  ngram: 0,
  semantic: 0.6,
  time: 0.6,
  whenNamesTime: 0.4,
  recency: 0.05,
  recencyHalfLifeDays: 30,
  importance: 0.1,
  feedback: 0.1,
};

/** Explanation keys, in the order features are summed. */
export const FEATURES = [
  'lexical',
  'context',
  'expansion',
  'session',
  'meta',
  'ngram',
  'semantic',
  'time',
  'recency',
  'importance',
  'feedback',
] as const;

/** The fused score mapped onto [0, 1]: 1 - e^(-s), 0 for s <= 0; monotone, so order is kept. */
export function relevanceOf(score: number): number {
  return score > 0 ? 1 - Math.exp(-score) : 0;
}
