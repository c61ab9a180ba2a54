import { Type, type Static } from '@sinclair/typebox';
import { Memory, MemoryId } from '../memories/index.js';
import { Filters, RETRIEVAL_LIMITS, ScoredMemorySchema } from '../retrieval/index.js';

/** Limits the spec leaves open; recorded in docs/api.md. */
export const SYNTHESIS_LIMITS = {
  summarySources: 500,
  maxSentences: 20,
  defaultSentences: 5,
  synthesizeK: 50,
  defaultSynthesizeK: 10,
} as const;

/** Relation types a caller may create (the ontology, once it exists, will supply its own). */
export const RELATION_TYPES = ['related', 'supports', 'contradicts', 'updates', 'follows'] as const;
/** Links a summary to each of its sources; made and removed with the summary only. */
export const SUMMARIZES = 'summarizes';

const Metadata = Type.Object(
  {},
  { additionalProperties: true, description: 'Free-form JSON object, at most 16384 bytes' },
);
const SessionId = Type.String({ minLength: 1, maxLength: 256 });

export const RelationBody = Type.Object(
  {
    source_id: MemoryId,
    target_id: MemoryId,
    type: Type.Union(
      RELATION_TYPES.map((t) => Type.Literal(t)),
      {
        description:
          'supports, contradicts, updates (source supersedes target), follows (source comes after target), related',
      },
    ),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
);
export type RelationInput = Static<typeof RelationBody>;

export const Relation = Type.Object(
  {
    id: Type.Integer(),
    source_id: Type.Integer(),
    target_id: Type.Integer(),
    type: Type.String({ description: `One of ${RELATION_TYPES.join(', ')}, or ${SUMMARIZES} (summary -> source)` }),
    metadata: Type.Object({}, { additionalProperties: true }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Relation' },
);
export type RelationView = Static<typeof Relation>;

export const RelationList = Type.Object({ memory_id: Type.Integer(), items: Type.Array(Relation) });

export const SummarizeBody = Type.Object(
  {
    memory_ids: Type.Optional(
      Type.Array(MemoryId, { minItems: 1, maxItems: SYNTHESIS_LIMITS.summarySources, uniqueItems: true }),
    ),
    filters: Type.Optional(Filters),
    session_id: Type.Optional(SessionId),
    max_sentences: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: SYNTHESIS_LIMITS.maxSentences,
        description: `Default ${SYNTHESIS_LIMITS.defaultSentences}`,
      }),
    ),
    store: Type.Optional(Type.Boolean({ description: 'Store the summary as a memory (default true)' })),
  },
  { additionalProperties: false },
);
export type SummarizeInput = Static<typeof SummarizeBody>;

const Usage = Type.Object({
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  total_tokens: Type.Integer(),
});
const Method = Type.Union([Type.Literal('extractive'), Type.Literal('llm')]);

export const SummarizeResult = Type.Object({
  status: Type.Union([Type.Literal('created'), Type.Literal('existing'), Type.Literal('not_stored')]),
  summary: Type.String(),
  method: Method,
  model: Type.Optional(Type.String()),
  sources: Type.Array(Type.Integer()),
  memory: Type.Union([Memory, Type.Null()]),
  usage: Type.Optional(Usage),
});
export type SummarizeResultView = Static<typeof SummarizeResult>;

export const SynthesizeBody = Type.Object(
  {
    question: Type.String({ minLength: 1, maxLength: RETRIEVAL_LIMITS.queryChars }),
    k: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: SYNTHESIS_LIMITS.synthesizeK,
        description: `Memories retrieved (default ${SYNTHESIS_LIMITS.defaultSynthesizeK})`,
      }),
    ),
    session_id: Type.Optional(SessionId),
    filters: Type.Optional(Filters),
  },
  { additionalProperties: false },
);
export type SynthesizeInput = Static<typeof SynthesizeBody>;

export const Citation = Type.Object({
  memory_id: Type.Integer(),
  text: Type.String({ description: 'The span of the memory relied on' }),
});

export const SynthesizeResult = Type.Object({
  answer: Type.String(),
  found: Type.Boolean({ description: 'False when no retrieved memory supports an answer' }),
  citations: Type.Array(Citation),
  memories: Type.Array(ScoredMemorySchema),
  method: Method,
  model: Type.Optional(Type.String()),
  usage: Type.Optional(Usage),
  note: Type.Optional(Type.String({ description: 'Why the built-in method answered although an LLM is configured' })),
});
export type SynthesizeResultView = Static<typeof SynthesizeResult>;
