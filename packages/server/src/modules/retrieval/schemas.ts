import { Type } from '@sinclair/typebox';
import { Filters, Memory } from '../memories/index.js';

export { Filters, type FiltersInput } from '../memories/index.js';

/** Limits the spec leaves open; recorded in docs/api.md. */
export const RETRIEVAL_LIMITS = {
  queryChars: 4_000,
  promptChars: 32_000,
  maxK: 100,
  maxTokenBudget: 100_000,
} as const;

const K = Type.Integer({ minimum: 1, maximum: RETRIEVAL_LIMITS.maxK, description: 'Number of results (default 10)' });
const Query = Type.String({ minLength: 1, maxLength: RETRIEVAL_LIMITS.queryChars });
const TokenBudget = Type.Integer({ minimum: 1, maximum: RETRIEVAL_LIMITS.maxTokenBudget });
const DateTime = Type.String({ format: 'date-time' });
/** The relevance cutoff of every retrieval operation (docs/api.md, "Relevance"). */
export const MinScore = Type.Number({
  minimum: 0,
  maximum: 1,
  description:
    "Drop results whose score is below this. Default: only memories with supporting evidence (their words, their neighbouring turns' words, speaker or tag, vector similarity); 0 turns the cutoff off",
});
/** The one relevance score of every retrieval operation. */
export const Score = Type.Number({
  minimum: 0,
  maximum: 1,
  description:
    "Relevance on [0, 1], the same scale for every retrieval operation: 1 - e^(-s), where s is the sum of the explanation's feature contributions",
});

export const QueryBody = Type.Object(
  {
    query: Query,
    k: Type.Optional(K),
    session_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    filters: Type.Optional(Filters),
    explain: Type.Optional(Type.Boolean()),
    min_score: Type.Optional(MinScore),
  },
  { additionalProperties: false },
);

export const ScoredMemory = Type.Intersect([
  Memory,
  Type.Object({
    score: Score,
    explanation: Type.Optional(
      Type.Record(Type.String(), Type.Number(), {
        description: 'Per-feature contributions to s (query with explain: true)',
      }),
    ),
  }),
]);
export const QueryResult = Type.Object({ memories: Type.Array(ScoredMemory) });

export const RetrieveBody = Type.Object(
  {
    prompt: Type.String({ minLength: 1, maxLength: RETRIEVAL_LIMITS.promptChars }),
    k: Type.Optional(K),
    token_budget: Type.Optional(TokenBudget),
    min_score: Type.Optional(MinScore),
  },
  { additionalProperties: false },
);
export const RetrieveResult = Type.Object({
  memories: Type.Array(ScoredMemory),
  tokens: Type.Integer({ description: 'Estimated tokens of the returned memory texts' }),
  token_budget: Type.Union([Type.Integer(), Type.Null()]),
});

export const Route = Type.Union([
  Type.Literal('auto'),
  Type.Literal('keyword'),
  Type.Literal('semantic'),
  Type.Literal('temporal'),
  Type.Literal('recent'),
]);
export const SearchBody = Type.Object(
  { query: Query, k: Type.Optional(K), route: Type.Optional(Route), min_score: Type.Optional(MinScore) },
  { additionalProperties: false },
);
export const SearchResult = Type.Object({
  route: Type.String(),
  reason: Type.String({
    description: 'Why this route; says so when a time filter found nothing and results come from any time',
  }),
  range: Type.Optional(Type.Object({ from: DateTime, to: DateTime, matched: Type.String() })),
  memories: Type.Array(ScoredMemory),
});

export const ComposeBody = Type.Object(
  {
    task: Type.String({ minLength: 1, maxLength: RETRIEVAL_LIMITS.promptChars }),
    token_budget: Type.Optional(TokenBudget),
    template: Type.Optional(
      Type.String({ minLength: 1, maxLength: 8_000, description: 'Must contain {{memories}}; may contain {{task}}' }),
    ),
    min_score: Type.Optional(MinScore),
  },
  { additionalProperties: false },
);
export const ComposeResult = Type.Object({
  prompt: Type.String(),
  memories: Type.Array(ScoredMemory),
  tokens: Type.Integer(),
});

export const JobResult = Type.Object({
  id: Type.Integer(),
  kind: Type.String(),
  status: Type.String({ description: 'queued | running | succeeded | failed' }),
  progress: Type.Number(),
  result: Type.Unknown(),
  error: Type.Union([Type.String(), Type.Null()]),
  created_at: DateTime,
  updated_at: DateTime,
});

export const FeedbackBody = Type.Object(
  {
    rating: Type.Union([Type.Literal('positive'), Type.Literal('negative')]),
    query: Type.Optional(Type.String({ minLength: 1, maxLength: RETRIEVAL_LIMITS.queryChars })),
    comment: Type.Optional(Type.String({ minLength: 1, maxLength: 2_000 })),
  },
  { additionalProperties: false },
);
export const FeedbackResult = Type.Object({
  id: Type.Integer(),
  memory_id: Type.Integer(),
  rating: Type.String(),
  query: Type.Union([Type.String(), Type.Null()]),
  comment: Type.Union([Type.String(), Type.Null()]),
  created_at: DateTime,
  withdrawn_at: Type.Union([DateTime, Type.Null()]),
});
