import { Type, type Static } from '@sinclair/typebox';
import { PageOf, PageQuery } from '../../core/paging.js';
import { Relation } from '../synthesis/index.js';
import { AddMemoryBody, Memory } from '../memories/index.js';

const Name = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[a-z][a-z0-9_]*\\*?$',
  description: 'Lower-case letters, digits and underscores',
});
const Description = Type.String({ maxLength: 500 });
const Phrases = (description: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 200, description });

export const Ontology = Type.Object(
  {
    categories: Type.Array(
      Type.Object(
        { name: Name, description: Description, cues: Phrases('Words or phrases that put a memory in the category') },
        { additionalProperties: false },
      ),
      { maxItems: 100 },
    ),
    entity_types: Type.Array(
      Type.Object(
        { name: Name, description: Description, examples: Phrases('Names always of this type (a gazetteer)') },
        { additionalProperties: false },
      ),
      { maxItems: 100 },
    ),
    relation_types: Type.Array(
      Type.Object(
        {
          name: Name,
          description: Description,
          source_types: Type.Array(Name, { maxItems: 20, description: 'Allowed subject entity types (empty: any)' }),
          target_types: Type.Array(Name, { maxItems: 20, description: 'Allowed object entity types (empty: any)' }),
          single_valued: Type.Boolean({
            description: 'One current value per subject: a new value invalidates the old edge and is a conflict',
          }),
          cues: Phrases(
            'Verb phrases stating the relation between a subject before them and an object after them ("moved to")',
          ),
        },
        { additionalProperties: false },
      ),
      { maxItems: 100 },
    ),
  },
  { additionalProperties: false },
);
export type OntologyInput = Static<typeof Ontology>;

const Job = Type.Object({
  id: Type.Integer(),
  kind: Type.String(),
  status: Type.String(),
  progress: Type.Number(),
  result: Type.Unknown(),
  error: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const OntologyResult = Type.Object({
  ...Ontology.properties,
  revision: Type.Integer({ description: '0 while the project uses the built-in default' }),
  is_default: Type.Boolean(),
  updated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  reclassification: Type.Union([Job, Type.Null()], {
    description: 'The background job reclassifying existing memories after the last replacement',
  }),
});

const Timestamp = Type.String({ format: 'date-time' });
const Nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer>>(t: T) =>
  Type.Union([t, Type.Null()]);

export const GraphNode = Type.Object({
  id: Type.String({ description: '"self" for the end user, else <type>:<canonical name>' }),
  name: Type.String(),
  type: Type.String(),
  aliases: Type.Array(Type.String()),
  memory_ids: Type.Array(Type.Integer()),
  is_end_user: Type.Boolean(),
});
export const GraphEdge = Type.Object({
  id: Type.String(),
  source: Type.String(),
  target: Type.String(),
  type: Type.String(),
  memory_ids: Type.Array(Type.Integer(), { description: 'The memories that state this fact' }),
  valid_at: Timestamp,
  invalid_at: Nullable(Timestamp),
  invalidated_by: Nullable(Type.Integer({ description: 'The memory whose statement ended this fact' })),
});

export const GraphQuery = Type.Object(
  {
    entity: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'An entity id, name or alias: its neighbourhood only' }),
    ),
    type: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'Entities of this type and the edges touching them' }),
    ),
    as_of: Type.Optional(Type.String({ format: 'date-time', description: 'Only facts true at this time' })),
    limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Most-mentioned entities first' }),
  },
  { additionalProperties: false },
);
export const GraphResult = Type.Object({
  nodes: Type.Array(GraphNode),
  edges: Type.Array(GraphEdge),
  memory_relations: Type.Array(Relation, {
    description:
      'Typed links between the memories themselves (POST /memory/relations; a summary `summarizes` its sources): made by as_of, touching the memories behind the shown nodes and edges when entity or type is given; the limit newest',
  }),
  as_of: Nullable(Timestamp),
  revision: Type.Integer(),
});

export const Cluster = Type.Object({
  id: Type.Integer({ description: 'The smallest member id' }),
  label: Type.String(),
  terms: Type.Array(Type.String()),
  size: Type.Integer(),
  memory_ids: Type.Array(Type.Integer()),
});
export const ClustersQuery = Type.Object(
  { limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }) },
  { additionalProperties: false },
);
export const ClustersResult = Type.Object({
  items: Type.Array(Cluster),
  total: Type.Integer(),
  revision: Type.Integer(),
});

export const DecisionStatus = Type.Union([Type.Literal('open'), Type.Literal('resolved'), Type.Literal('dismissed')]);
export const Resolution = Type.Union([Type.Literal('keep_one'), Type.Literal('keep_both'), Type.Literal('dismiss')]);

export const Decision = Type.Object({
  id: Type.Integer(),
  kind: Type.Union([Type.Literal('single_valued'), Type.Literal('negation')]),
  subject: Type.Object({ id: Type.String(), name: Type.String() }),
  attribute: Type.String({ description: 'The relation type' }),
  values: Type.Array(
    Type.Object({ memory_id: Type.Integer(), value: Type.String(), negated: Type.Boolean(), stated_at: Timestamp }),
  ),
  suggested_resolution: Type.Object({ resolution: Resolution, memory_id: Type.Integer(), reason: Type.String() }),
  status: DecisionStatus,
  resolution: Type.Union([
    Type.Object({
      resolution: Resolution,
      memory_id: Nullable(Type.Integer()),
      note: Nullable(Type.String()),
      actor: Type.Object({ type: Type.String(), id: Nullable(Type.Integer()) }),
      resolved_at: Timestamp,
    }),
    Type.Null(),
  ]),
  detected_at: Timestamp,
});
export const DecisionsQuery = Type.Object(
  { ...PageQuery.properties, status: Type.Optional(DecisionStatus) },
  { additionalProperties: false },
);
export const DecisionsResult = PageOf(Decision);

export const DecisionParams = Type.Object({ decision_id: Type.Integer({ minimum: 1 }) });
export const ResolveBody = Type.Object(
  {
    resolution: Resolution,
    memory_id: Type.Optional(
      Type.Integer({ minimum: 1, description: "keep_one: the memory to keep (one of the decision's)" }),
    ),
    note: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
  },
  { additionalProperties: false },
);
export type ResolveInput = Static<typeof ResolveBody>;

const TopEntity = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.String(),
  mentions: Type.Integer(),
});
export const IntelligenceResult = Type.Object({
  top_entities: Type.Array(TopEntity),
  recent_changes: Type.Array(GraphEdge, { description: 'Facts most recently stated or ended, newest first' }),
  clusters: Type.Array(Cluster),
  open_decisions: Type.Array(Decision),
  revision: Type.Integer(),
});

const Counts = Type.Record(Type.String(), Type.Integer());
export const StatsResult = Type.Object({
  memories: Type.Integer(),
  summaries: Type.Integer(),
  entities: Type.Integer(),
  entities_by_type: Counts,
  relations: Type.Integer(),
  relations_by_type: Counts,
  current_relations: Type.Integer(),
  clusters: Type.Integer(),
  decisions: Type.Object({ open: Type.Integer(), resolved: Type.Integer(), dismissed: Type.Integer() }),
  categories: Counts,
  revision: Type.Integer(),
});

/** Bounds of POST /memory/infer (docs/api.md). */
export const INFER_LIMITS = { messages: 100, contentChars: 32_000, facts: 50 } as const;

export const ConversationMessage = Type.Object(
  {
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('system')], {
      description: 'Who said it; facts are taken from what the user says',
    }),
    content: Type.String({ minLength: 1, maxLength: INFER_LIMITS.contentChars }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: "The speaker's name" })),
    time: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'When it was said (not in the future): a fact it states is stored as of then',
      }),
    ),
    id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: "The caller's id of the message, kept as provenance" }),
    ),
  },
  { additionalProperties: false, $id: 'ConversationMessage' },
);

export const InferBody = Type.Object(
  {
    messages: Type.Array(ConversationMessage, { minItems: 1, maxItems: INFER_LIMITS.messages }),
    session_id: AddMemoryBody.properties.session_id,
    tags: AddMemoryBody.properties.tags,
    metadata: AddMemoryBody.properties.metadata,
  },
  {
    additionalProperties: false,
    $id: 'InferRequest',
    examples: [
      {
        messages: [
          { role: 'user', content: 'Hi! I moved to Berlin last month. I work at Google.', id: 'msg-1' },
          { role: 'assistant', content: 'Welcome to Berlin! How do you like it?', id: 'msg-2' },
        ],
        session_id: 'chat-42',
      },
    ],
  },
);
export type InferInput = Static<typeof InferBody>;

export const InferredFact = Type.Object(
  {
    status: Type.Union([Type.Literal('created'), Type.Literal('duplicate')], {
      description: 'created: stored now; duplicate: the end user already has a live memory stating it (that memory)',
    }),
    memory: Memory,
    messages: Type.Array(Type.Integer({ minimum: 0 }), { description: 'Indices of the messages that state it' }),
    supersedes: Type.Array(Type.Integer(), {
      description: 'Memories whose facts this one ended, now superseded_by it',
    }),
  },
  { $id: 'InferredFact' },
);

export const InferResult = Type.Object(
  {
    method: Type.Union([Type.Literal('builtin'), Type.Literal('llm')], {
      description: 'llm: the configured model extracted the facts; builtin: the offline extractor did',
    }),
    model: Type.Optional(Type.String({ description: 'The model that answered (method llm)' })),
    usage: Type.Optional(
      Type.Object({ prompt_tokens: Type.Integer(), completion_tokens: Type.Integer(), total_tokens: Type.Integer() }),
    ),
    results: Type.Array(InferredFact),
  },
  { $id: 'InferResult' },
);
