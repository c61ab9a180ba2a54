import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { EngramError, type ServiceClient } from '@engram/client';
import { z, type ZodRawShape } from 'zod';

export const VERSION = '0.1.0';

export interface EngramMcpOptions {
  /** The official client every tool calls through; its project, end user and tenant are the tools' scope. */
  client: ServiceClient;
  /** The tenant the client acts in, when any: add_turn (the /v1 plane) needs one. */
  tenantId?: string;
  /** The end user the client acts for (add_turn names it in its body). */
  endUserId?: string;
}

const memory = z
  .object({
    id: z.number().int(),
    text: z.string(),
    tags: z.array(z.string()).optional(),
    importance: z.number().nullable().optional(),
    metadata: z.record(z.unknown()).nullable().optional(),
    source: z.string().nullable().optional(),
    end_user_id: z.string().nullable().optional(),
    created_at: z.string(),
    updated_at: z.string().optional(),
  })
  .passthrough();
const scored = memory.extend({ score: z.number().optional() }).passthrough();
const tags = z.array(z.string().min(1).max(100)).max(50);
const metadata = z.record(z.unknown());
const importance = z.number().min(0).max(1);
const memoryId = z.number().int().positive().describe('The memory id, as returned by add_memory or search_memories.');

type Output = Record<string, unknown>;

/**
 * An MCP server whose tools are Engram operations sent through the official client. A failed call
 * is a tool error (isError) carrying the server's code, message and field: the model reads it and
 * may correct its arguments; the transport never fails for it.
 */
export function createEngramMcpServer(options: EngramMcpOptions): McpServer {
  const { client } = options;
  const server = new McpServer({ name: 'engram', version: VERSION }, { instructions: INSTRUCTIONS });

  const tool = <I extends ZodRawShape, O extends ZodRawShape>(
    name: string,
    spec: { title: string; description: string; input: I; output: O; readOnly?: boolean; destructive?: boolean },
    run: (args: z.objectOutputType<I, z.ZodTypeAny>) => Promise<Output>,
  ) => {
    // Typed loosely: the SDK's generic signature is too deep for the compiler over a generic shape.
    const register = server.registerTool.bind(server) as unknown as (
      name: string,
      config: object,
      handler: (args: never) => Promise<CallToolResult>,
    ) => void;
    register(
      name,
      {
        title: spec.title,
        description: spec.description,
        inputSchema: spec.input,
        // Open objects: the server may add fields without breaking a client that validates.
        outputSchema: z.object(spec.output).passthrough(),
        annotations: {
          readOnlyHint: spec.readOnly ?? false,
          destructiveHint: spec.destructive ?? false,
          openWorldHint: false,
        },
      },
      (async (args: z.objectOutputType<I, z.ZodTypeAny>): Promise<CallToolResult> => {
        try {
          const structured = await run(args);
          return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
        } catch (error) {
          return toolError(error);
        }
      }) as (args: never) => Promise<CallToolResult>,
    );
  };

  tool(
    'add_memory',
    {
      title: 'Remember a fact',
      description:
        'Store one durable fact, preference or event about the user in long-term memory. Write it as a standalone sentence (who, what, when) so it reads well out of context. Returns the stored memory, or status "skipped" when an identical memory exists.',
      input: {
        text: z.string().min(1).describe('The fact to remember, as one self-contained sentence.'),
        tags: tags.optional().describe('Short labels to filter by later, e.g. ["travel"].'),
        metadata: metadata.optional().describe('Any JSON object kept with the memory.'),
        importance: importance.optional().describe('0 (trivia) to 1 (critical); default decided by the server.'),
      },
      output: {
        status: z.string(),
        memory_id: z.number().int().optional(),
        memory: memory.optional(),
        reason: z.string().optional(),
      },
    },
    async (args) => {
      const answer = (await client.memories.add(args)) as Output;
      // A new memory is answered whole (201); a duplicate as { status: 'skipped', memory_id }.
      return 'status' in answer ? answer : { status: 'created', memory_id: answer.id as number, memory: answer };
    },
  );

  tool(
    'add_turn',
    {
      title: 'Record a conversation turn',
      description:
        'Record one turn of the conversation (what the user or the assistant said); Engram extracts the durable facts from it in the background. Needs a tenant (ENGRAM_TENANT_ID or the X-Tenant-ID header).',
      input: {
        text: z.string().min(1).describe('What was said, verbatim.'),
        speaker: z.enum(['user', 'assistant']).describe('Who said it.'),
        metadata: metadata.optional(),
      },
      output: {
        id: z.number().int(),
        status: z.string(),
        tenant_id: z.string(),
        user_id: z.string(),
        session_id: z.string().nullable().optional(),
        created_at: z.string(),
      },
    },
    async (args) => {
      if (!options.tenantId || !options.endUserId)
        throw new EngramError(
          400,
          'validation_error',
          'add_turn needs a tenant and an end user: set ENGRAM_TENANT_ID and ENGRAM_END_USER_ID (or X-Tenant-ID and X-End-User-ID)',
          'tenant_id',
          undefined,
        );
      return (await client.v1.addTurn({ ...args, tenant_id: options.tenantId, user_id: options.endUserId })) as Output;
    },
  );

  tool(
    'search_memories',
    {
      title: 'Search memory',
      description:
        "Find what is remembered about the user that bears on a question or topic, best first. Use before answering anything that may depend on the user's preferences, history or earlier decisions. Filter by tags or metadata; k is how many to return.",
      readOnly: true,
      input: {
        query: z.string().min(1).describe('A question or topic in natural language.'),
        k: z.number().int().min(1).max(100).optional().describe('How many memories to return (default 10).'),
        tags: tags.optional().describe('Only memories carrying all these tags.'),
        any_tags: tags.optional().describe('Only memories carrying at least one of these tags.'),
        metadata: metadata.optional().describe('Only memories whose metadata has these key/value pairs.'),
        min_score: z.number().min(0).max(1).optional().describe('Leave out memories scoring below this.'),
      },
      output: { memories: z.array(scored) },
    },
    async ({ query, k, tags: withTags, any_tags, metadata: withMetadata, min_score }) => {
      const filters = {
        ...(withTags ? { tags_all: withTags } : {}),
        ...(any_tags ? { tags_any: any_tags } : {}),
        ...(withMetadata ? { metadata: withMetadata } : {}),
      };
      const answer = await client.memories.query({
        query,
        ...(k ? { k } : {}),
        ...(min_score !== undefined ? { min_score } : {}),
        ...(Object.keys(filters).length ? { filters } : {}),
      } as never);
      return { memories: (answer as Output).memories as Output[] };
    },
  );

  tool(
    'get_memory',
    {
      title: 'Read a memory',
      description: 'Read one memory by id, with its tags, metadata and importance.',
      readOnly: true,
      input: { id: memoryId },
      output: { memory },
    },
    async ({ id }) => ({ memory: (await client.memories.get(id)) as Output }),
  );

  tool(
    'update_memory',
    {
      title: 'Retag or reweigh a memory',
      description:
        "Change a memory's tags, metadata or importance (its text is immutable: to correct a fact, add the corrected one and forget the old one). Only the fields given change.",
      input: { id: memoryId, tags: tags.optional(), metadata: metadata.optional(), importance: importance.optional() },
      output: { memory },
    },
    async ({ id, ...change }) => ({ memory: (await client.memories.update(id, change)) as Output }),
  );

  tool(
    'forget_memories',
    {
      title: 'Forget memories',
      description:
        'Erase memories for good, by id (for example when the user asks to forget something, or a fact is wrong). Reports per id whether it was forgotten.',
      destructive: true,
      input: {
        ids: z.array(z.number().int().positive()).min(1).max(100).describe('The ids of the memories to erase.'),
      },
      output: { forgotten: z.array(z.number().int()).describe('The ids erased; an id missing here was not found.') },
    },
    async ({ ids }) => ({ forgotten: (await client.memories.forget({ ids })) as number[] }),
  );

  tool(
    'list_recent_memories',
    {
      title: 'List recent memories',
      description:
        'The most recently stored memories of the user, newest first. Use to review what is known, not to answer a question (search_memories ranks by relevance). Filter by tags.',
      readOnly: true,
      input: {
        limit: z.number().int().min(1).max(100).optional().describe('How many (default 20).'),
        tags: tags.optional().describe('Only memories carrying all these tags.'),
      },
      output: { memories: z.array(memory) },
    },
    async ({ limit = 20, tags: withTags }) => {
      const page = await client.memories.list({
        order_by: 'created_at',
        order: 'desc',
        limit,
        ...(withTags ? { filters: { tags_all: withTags } } : {}),
      });
      return { memories: (page as Output).items as Output[] };
    },
  );

  tool(
    'compose_context',
    {
      title: 'Compose memory context',
      description:
        'Build a ready-to-paste prompt section of the memories relevant to a task, within a token budget. Use at the start of a task to ground the answer in what is known about the user.',
      readOnly: true,
      input: {
        task: z.string().min(1).describe('What the assistant is about to do, e.g. "plan a trip to Lisbon".'),
        token_budget: z.number().int().min(1).max(100_000).optional().describe('The most tokens the context may take.'),
      },
      output: { prompt: z.string(), tokens: z.number().optional(), memories: z.array(scored) },
    },
    async (args) => (await client.memories.compose(args)) as Output,
  );

  tool(
    'synthesize_answer',
    {
      title: 'Answer from memory, with citations',
      description:
        'Answer a question from the user\'s memories only, citing the memories used. "found" is false when memory does not hold the answer: then say so rather than guess.',
      readOnly: true,
      input: {
        question: z.string().min(1),
        k: z.number().int().min(1).max(50).optional().describe('How many memories to consider.'),
      },
      output: {
        answer: z.string().nullable(),
        found: z.boolean(),
        citations: z.array(z.unknown()),
        memories: z.array(z.unknown()).optional(),
      },
    },
    async (args) => (await client.memories.synthesize(args)) as Output,
  );

  tool(
    'entity_graph',
    {
      title: 'What is known about an entity',
      description:
        'The knowledge graph around one entity (a person, place, organization, project...): its facts and relations, each with the memories supporting it.',
      readOnly: true,
      input: {
        entity: z.string().min(1).describe('The entity\'s name, e.g. "Lisbon" or "Acme Corp".'),
        limit: z.number().int().min(1).max(500).optional(),
      },
      output: { nodes: z.array(z.unknown()), edges: z.array(z.unknown()) },
    },
    async (args) => (await client.intelligence.graph(args as never)) as Output,
  );

  tool(
    'open_decisions',
    {
      title: 'Open contradictions',
      description:
        'Contradictions found in memory that wait for a decision (e.g. two different home cities). Ask the user which holds, then call resolve_decision.',
      readOnly: true,
      input: { limit: z.number().int().min(1).max(100).optional() },
      output: { items: z.array(z.object({ id: z.number().int() }).passthrough()), total: z.number().int() },
    },
    async ({ limit }) =>
      (await client.intelligence.decisions({ status: 'open', ...(limit ? { limit } : {}) } as never)) as Output,
  );

  tool(
    'resolve_decision',
    {
      title: 'Resolve a contradiction',
      description:
        'Settle an open decision: "keep_one" with memory_id keeps that memory and retires the other side, "keep_both" marks both as true, "dismiss" closes it without change.',
      input: {
        id: z.number().int().positive().describe('The decision id from open_decisions.'),
        resolution: z.enum(['keep_one', 'keep_both', 'dismiss']),
        memory_id: z.number().int().positive().optional(),
        note: z.string().min(1).max(1000).optional(),
      },
      output: { id: z.number().int(), status: z.string() },
    },
    async ({ id, ...body }) => (await client.intelligence.resolveDecision(id, body as never)) as Output,
  );

  server.registerResource(
    'current_facts',
    CURRENT_FACTS_URI,
    {
      title: 'What is currently true about the user',
      description:
        "The user's current facts from the knowledge graph (subject, relation, object), each with the memories stating it; facts a later statement ended are left out.",
      mimeType: 'application/json',
    },
    async (uri) => {
      const graph = (await client.intelligence.graph()) as unknown as CurrentGraph;
      return {
        contents: [
          { uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ facts: currentFacts(graph) }) },
        ],
      };
    },
  );

  return server;
}

/** The resource an MCP client reads for the end user's profile (resources/read). */
export const CURRENT_FACTS_URI = 'engram://current-facts';

interface CurrentGraph {
  nodes: Array<{ id: string; name: string }>;
  edges: Array<{
    source: string;
    target: string;
    type: string;
    memory_ids: number[];
    valid_at: string;
    invalid_at: string | null;
  }>;
}

/** The graph's edges still true (no invalid_at), with entities by name. */
function currentFacts(graph: CurrentGraph) {
  const names = new Map(graph.nodes.map((n) => [n.id, n.name]));
  return graph.edges
    .filter((e) => e.invalid_at === null)
    .map((e) => ({
      subject: names.get(e.source) ?? e.source,
      relation: e.type,
      object: names.get(e.target) ?? e.target,
      memory_ids: e.memory_ids,
      since: e.valid_at,
    }));
}

/** A failed call as the model sees it: the server's error body, as text and structured. */
export function toolError(error: unknown): CallToolResult {
  const body =
    error instanceof EngramError
      ? {
          code: error.code,
          message: error.message,
          ...(error.field ? { field: error.field } : {}),
          status: error.status,
          ...(error.request_id ? { request_id: error.request_id } : {}),
        }
      : { code: 'internal_error', message: error instanceof Error ? error.message : String(error) };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: body }) }] };
}

const INSTRUCTIONS =
  'Engram is the long-term memory of this user. Search it (search_memories or compose_context) before answering anything that may depend on what the user told you before; store new durable facts with add_memory; forget what the user asks you to forget.';
