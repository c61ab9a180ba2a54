import { tool, type ModelMessage } from 'ai';
import { z } from 'zod';
import { EngramError, type CallOptions, type Memory, type ServiceClient } from '@engram/client';

export interface EngramMemoryOptions {
  /** The official client; its key (or `projectId`) names the project. */
  client: ServiceClient;
  /** The end user the memories belong to (X-End-User-ID); else the client's own. */
  endUserId?: string;
  /** The tenant (X-Tenant-ID), for cross-tenant keys. */
  tenantId?: string;
}

/** What a tool answers when the server refused the call: the model reads the code and the field and can retry. */
export interface ToolError {
  error: { code: string; message: string; field?: string; status: number };
}

/** A memory as the tools show it to a model: what it says and how to refer to it. */
export interface ToolMemory {
  id: number;
  text: string;
  tags: string[];
  created_at: string;
  score?: number;
}

const shown = (m: Memory & { score?: number }): ToolMemory => ({
  id: m.id,
  text: m.text,
  tags: m.tags,
  created_at: m.created_at,
  ...(m.score === undefined ? {} : { score: m.score }),
});

/** Runs a call; a refusal of the server becomes the tool's answer, anything else (a bug, an abort) is thrown. */
async function refusalAsAnswer<T>(call: () => Promise<T>): Promise<T | ToolError> {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof EngramError) || error.status === 0) throw error;
    return {
      error: {
        code: error.code,
        message: error.message,
        status: error.status,
        ...(error.field ? { field: error.field } : {}),
      },
    };
  }
}

/**
 * Memory tools for `generateText` / `streamText`: `tools: engramTools({ client, endUserId })`. Each is one
 * call of the official client, scoped to the end user.
 */
export function engramTools(options: EngramMemoryOptions) {
  const { client } = options;
  const scope: CallOptions = { endUserId: options.endUserId, tenantId: options.tenantId };
  return {
    addMemory: tool({
      description:
        'Store a lasting fact about the user (a preference, a plan, a detail to remember later) as one short self-contained statement. Storing the same statement twice keeps one memory.',
      inputSchema: z.object({
        text: z.string().min(1).max(32_000).describe('The statement, e.g. "Prefers aisle seats on long flights"'),
        tags: z.array(z.string().min(1).max(64)).max(50).optional().describe('Short topic labels, e.g. ["travel"]'),
        importance: z.number().min(0).max(1).optional().describe('0 to 1; default 0.5'),
      }),
      execute: ({ text, tags, importance }) =>
        refusalAsAnswer(async () => {
          const answer = await client.memories.add(
            { text, ...(tags ? { tags } : {}), ...(importance === undefined ? {} : { importance }), source: 'ai-sdk' },
            scope,
          );
          return 'status' in answer && answer.status === 'skipped'
            ? { status: 'skipped' as const, reason: answer.reason, memory_id: answer.memory_id }
            : { status: 'created' as const, memory_id: (answer as Memory).id };
        }),
    }),
    searchMemories: tool({
      description:
        "Search the user's memories by meaning and words; the best first, each with its id. Use it before answering anything that depends on the user's preferences or past.",
      inputSchema: z.object({
        query: z.string().min(1).max(4_000).describe('What to look for, in plain words'),
        k: z.number().int().min(1).max(100).optional().describe('How many at most; default 10'),
        tags: z.array(z.string().min(1).max(64)).max(50).optional().describe('Only memories with any of these tags'),
      }),
      execute: ({ query, k, tags }) =>
        refusalAsAnswer(async () => {
          const answer = await client.memories.query(
            { query, ...(k ? { k } : {}), ...(tags ? { filters: { tags_any: tags } } : {}) },
            scope,
          );
          return { memories: (answer.memories as Array<Memory & { score: number }>).map(shown) };
        }),
    }),
    updateMemory: tool({
      description:
        "Change a memory's tags or importance (its text cannot change: to correct a statement, forget it and add the new one).",
      inputSchema: z.object({
        id: z.number().int().describe('The memory id, from searchMemories or recentMemories'),
        tags: z.array(z.string().min(1).max(64)).max(50).optional(),
        importance: z.number().min(0).max(1).optional(),
      }),
      execute: ({ id, tags, importance }) =>
        refusalAsAnswer(async () => {
          const updated = await client.memories.update(
            id,
            { ...(tags ? { tags } : {}), ...(importance === undefined ? {} : { importance }) },
            scope,
          );
          return { memory: shown(updated as Memory) };
        }),
    }),
    forgetMemory: tool({
      description:
        'Forget memories for good (their text is erased), by id: when the user asks to forget something or a statement is wrong.',
      inputSchema: z.object({
        ids: z.array(z.number().int()).min(1).max(1_000).describe('Memory ids, from searchMemories or recentMemories'),
      }),
      execute: ({ ids }) =>
        refusalAsAnswer(async () => ({ forgotten: (await client.memories.forget({ ids }, scope)) as number[] })),
    }),
    recentMemories: tool({
      description: "The user's most recent memories, newest first.",
      inputSchema: z.object({ limit: z.number().int().min(1).max(100).optional().describe('How many; default 10') }),
      execute: ({ limit }) =>
        refusalAsAnswer(async () => {
          const page = await client.memories.list({ limit: limit ?? 10 }, scope);
          return { memories: (page.items as Memory[]).map(shown) };
        }),
    }),
  };
}

export interface ComposeOptions extends EngramMemoryOptions {
  /** What the model is about to do (usually the user's message): the memories relevant to it are chosen. */
  task: string;
  /** Bounds the composed text (estimated tokens); default 1,000. */
  tokenBudget?: number;
  /** Must contain {{memories}}; may contain {{task}}. Default: the server's (an instruction to cite memories, the list, the task). */
  template?: string;
}

/** The end user's memories relevant to a task, composed into prompt text by the server (`POST /memory/compose`). */
export async function composeMemories(
  options: ComposeOptions,
): Promise<{ prompt: string; memories: ToolMemory[]; tokens: number }> {
  const answer = await options.client.memories.compose(
    {
      task: options.task,
      ...(options.tokenBudget ? { token_budget: options.tokenBudget } : {}),
      ...(options.template ? { template: options.template } : {}),
    },
    { endUserId: options.endUserId, tenantId: options.tenantId },
  );
  return {
    prompt: answer.prompt,
    memories: (answer.memories as Array<Memory & { score: number }>).map(shown),
    tokens: answer.tokens,
  };
}

/** The prompt fields of a generateText / streamText call that withMemories reads and extends. */
export interface PromptParams {
  system?: string;
  prompt?: string | ModelMessage[];
  messages?: ModelMessage[];
}

const DEFAULT_TEMPLATE = 'What you know about the user (cite a memory as [m:<id>] when you use it):\n{{memories}}';

/**
 * The call's parameters with the memories relevant to its last user message composed into `system` (after
 * the call's own system text): `generateText(await withMemories({ model, prompt }, { client, endUserId }))`.
 */
export async function withMemories<P extends PromptParams>(
  params: P,
  options: Omit<ComposeOptions, 'task'> & { task?: string },
): Promise<P & { system: string }> {
  const task = options.task ?? lastUserText(params);
  if (!task) return { ...params, system: params.system ?? '' };
  const { prompt } = await composeMemories({ ...options, task, template: options.template ?? DEFAULT_TEMPLATE });
  return { ...params, system: params.system ? `${params.system}\n\n${prompt}` : prompt };
}

function lastUserText(params: PromptParams): string | undefined {
  if (typeof params.prompt === 'string') return params.prompt;
  const messages = params.messages ?? (Array.isArray(params.prompt) ? params.prompt : []);
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== 'user') continue;
    if (typeof message.content === 'string') return message.content;
    const text = message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
    if (text) return text;
  }
  return undefined;
}
