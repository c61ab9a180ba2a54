// Facts from a conversation (POST /memory/infer): what the end user states about themselves, each
// stored as a memory once, with the messages it came from; a fact that ends one already stored marks
// that memory superseded. The statements come from the configured model (a strict JSON schema, each
// citing its messages) or from the offline extractor; the knowledge module decides duplicates and
// supersession for both, so the two paths differ only in how the statements are found.
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { invalid } from '../../core/errors.js';
import { splitSentences } from '../../engine/index.js';
import { SELF, type Extractor, type Extraction } from '../../engine/nlp/index.js';
import type { ChatMessage, LlmProvider, TokenUsage } from '../../engine/llm/index.js';
import { nowIso, type Database } from '../../store/database.js';
import {
  addWithin,
  liveMemoryIds,
  markSuperseded,
  memoriesByIds,
  type MemoryView,
  type Owner,
} from '../memories/index.js';
import { llmUnavailable } from '../synthesis/index.js';
import type { Extracted } from './cache.js';
import { currentStatement, deriveKnowledge, factIndex, type Knowledge } from './knowledge.js';
import type { Intelligence } from './service.js';
import { INFER_LIMITS, type InferInput } from './schemas.js';

/** A statement about the end user and the indices of the messages that state it. */
interface Statement {
  text: string;
  messages: number[];
}

interface InferredView {
  status: 'created' | 'duplicate';
  memory: MemoryView;
  messages: number[];
  supersedes: number[];
}

export interface InferResultView {
  method: 'builtin' | 'llm';
  model?: string;
  usage?: TokenUsage;
  results: InferredView[];
}

const aboutEndUser = (extraction: Extraction) => extraction.relations.some((r) => r.subject.name === SELF);

/** The offline way: each sentence of a user message that states a fact about its speaker. */
function statementsByRules(messages: InferInput['messages'], extractor: Extractor): Statement[] {
  const found: Statement[] = [];
  messages.forEach((message, index) => {
    if (message.role !== 'user') return;
    for (const sentence of splitSentences(message.content)) {
      if (aboutEndUser(extractor.extract(sentence))) found.push({ text: sentence, messages: [index] });
    }
  });
  return found;
}

const SYSTEM = [
  'You read a conversation between a user and an assistant and list the facts the user states about themselves',
  '(where they live, work, their family, preferences, habits, plans, possessions, health).',
  'Write each fact as one short standalone sentence in the first person, as the user would say it ("I live in Berlin"),',
  'and cite the indices [n] of the messages that state it. Take facts only from what the user says; nothing the',
  'assistant suggests unless the user confirms it. No facts: an empty list.',
].join(' ');

const FACTS_SCHEMA = {
  type: 'object',
  properties: {
    facts: {
      type: 'array',
      items: {
        type: 'object',
        properties: { text: { type: 'string' }, messages: { type: 'array', items: { type: 'integer' } } },
        required: ['text', 'messages'],
        additionalProperties: false,
      },
    },
  },
  required: ['facts'],
  additionalProperties: false,
};

/** The model's answer as statements, or why it is refused (a sentence sent back to the model). */
function parseFacts(content: string, count: number): Statement[] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return 'Your answer is not JSON. Answer with the JSON object of the schema.';
  }
  const facts = (parsed as { facts?: unknown } | null)?.facts;
  if (!Array.isArray(facts)) return 'Your answer has no facts list. Answer with the JSON object of the schema.';
  const statements: Statement[] = [];
  for (const fact of facts.slice(0, INFER_LIMITS.facts)) {
    const { text, messages } = (fact ?? {}) as { text?: unknown; messages?: unknown };
    if (typeof text !== 'string' || text.trim() === '' || text.length > INFER_LIMITS.contentChars)
      return 'Each fact needs a non-empty text.';
    const cited = Array.isArray(messages) ? messages : [];
    const wrong = cited.filter((m) => !Number.isInteger(m) || m < 0 || m >= count);
    if (cited.length === 0 || wrong.length > 0)
      return `Each fact must cite the messages that state it, by index 0 to ${count - 1}${wrong.length ? ` (you cited ${wrong.join(', ')})` : ''}.`;
    statements.push({ text: text.trim(), messages: [...new Set(cited as number[])].sort((a, b) => a - b) });
  }
  return statements;
}

/**
 * Statements through the model. A provider failure is 503 (nothing written, as summaries do); an
 * answer off the schema or citing no message given is refused and asked for again once, and refused
 * twice, the offline extractor's statements stand (method builtin).
 */
async function statementsByModel(
  llm: LlmProvider,
  messages: InferInput['messages'],
): Promise<{ statements: Statement[]; usage: TokenUsage } | { refused: true }> {
  const listing = messages
    .map((m, i) => {
      const who = [m.role, m.name, m.time].filter((x) => x !== undefined).join(', ');
      return `[${i}] (${who}) ${m.content.replace(/\s+/g, ' ').trim()}`;
    })
    .join('\n');
  const chat: ChatMessage[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: `Conversation:\n${listing}` },
  ];
  const usage: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  for (let attempt = 0; attempt < 2; attempt++) {
    let content: string;
    try {
      const result = await llm.complete({
        messages: chat,
        maxTokens: 1_000,
        jsonSchema: { name: 'facts', schema: FACTS_SCHEMA },
      });
      for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const) usage[k] += result.usage[k];
      content = result.content;
    } catch (error) {
      throw llmUnavailable(llm, error);
    }
    const parsed = parseFacts(content, messages.length);
    if (typeof parsed !== 'string') return { statements: parsed, usage };
    chat.push({ role: 'assistant', content }, { role: 'user', content: parsed });
  }
  return { refused: true };
}

/** When a statement was made: its latest cited message's time, else now. */
function statedAt(statement: Statement, messages: InferInput['messages'], now: string): string {
  const times = statement.messages.flatMap((i) =>
    messages[i]!.time ? [new Date(messages[i]!.time!).toISOString()] : [],
  );
  return times.length ? times.sort().at(-1)! : now;
}

/** The memory a statement only repeats: every fact it states is a current one that memory stated first. */
function repeatOf(knowledge: Knowledge, extraction: Extraction): number | undefined {
  const first = extraction.relations.map((r) => currentStatement(knowledge, r));
  return first.length > 0 && first.every((id) => id !== undefined) ? first[0] : undefined;
}

/** The owner's memories a newly stored one ended every fact of (and no resolution already superseded). */
function supersededBy(knowledge: Knowledge, known: Extracted[], created: Set<number>): Map<number, number> {
  const out = new Map<number, number>();
  for (const [id, by] of factIndex(knowledge).successorOf) {
    const memory = known.find((m) => m.id === id);
    if (memory && memory.supersededBy === null && created.has(by)) out.set(id, by);
  }
  return out;
}

export async function inferFacts(
  database: Database,
  intelligence: Intelligence,
  llm: LlmProvider | null,
  ctx: WriteContext,
  owner: Owner,
  input: InferInput,
): Promise<InferResultView> {
  const now = nowIso();
  input.messages.forEach((m, i) => {
    if (m.time !== undefined && Date.parse(m.time) > Date.parse(now) + 60_000)
      throw invalid(`messages/${i}/time`, 'time must not be in the future');
  });
  const extractor = await intelligence.extractorOf(owner.projectId);
  const byModel = llm ? await statementsByModel(llm, input.messages) : { refused: true as const };
  const statements = 'statements' in byModel ? byModel.statements : statementsByRules(input.messages, extractor);
  const method = 'statements' in byModel ? ('llm' as const) : ('builtin' as const);
  const answer = (results: InferredView[]): InferResultView => ({
    method,
    ...('statements' in byModel ? { model: llm!.id, usage: byModel.usage } : {}),
    results,
  });
  if (statements.length === 0) return answer([]);

  const view = await intelligence.view(owner);
  const known = [...view.items.values()];
  const read = (s: Statement, id: number, createdAt: string): Extracted => ({
    id,
    createdAt,
    supersededBy: null,
    isSummary: false,
    text: s.text,
    extraction: extractor.extract(s.text),
  });
  const repeated = new Map<number, number>();
  statements.forEach((s, i) => {
    const repeat = repeatOf(view.knowledge(), extractor.extract(s.text));
    if (repeat !== undefined) repeated.set(i, repeat);
  });
  const stored = statements.flatMap((s, i) => (repeated.has(i) ? [] : [{ s, i }]));

  const results = await write(database, ctx, async (trx, effects) => {
    const outcomes = await addWithin(
      database,
      trx,
      ctx,
      effects,
      owner,
      stored.map(({ s }) => {
        const at = statedAt(s, input.messages, effects.now);
        const cited = s.messages.map((index) => ({
          index,
          ...(input.messages[index]!.id ? { id: input.messages[index]!.id } : {}),
        }));
        return {
          text: s.text,
          source: 'conversation',
          ...(input.tags ? { tags: input.tags } : {}),
          metadata: { ...input.metadata, inferred_from: { method, messages: cited } },
          ...(input.session_id ? { session_id: input.session_id } : {}),
          ...(at !== effects.now ? { created_at: at, updated_at: at } : {}),
        };
      }),
    );
    const created = new Map<number, { memory: MemoryView; s: Statement; i: number }>();
    const skipped = new Map<number, number>();
    outcomes.forEach((o, k) => {
      if ('created' in o) created.set(o.created.id, { memory: o.created, ...stored[k]! });
      else skipped.set(stored[k]!.i, o.skipped.memory_id);
    });
    // Supersession as the knowledge module sees it once the new memories are there: each old memory
    // whose every fact a new one ended, marked as a resolution marks it (an update with its history).
    const fresh = [...created.values()].map(({ memory, s }) => read(s, memory.id, memory.created_at));
    const ended = supersededBy(deriveKnowledge([...known, ...fresh], ''), known, new Set(created.keys()));
    const live = new Set(await liveMemoryIds(trx, owner, [...ended.keys()]));
    const supersedes = new Map<number, number[]>();
    for (const [old, by] of ended) {
      if (!live.has(old)) continue;
      await markSuperseded(
        trx,
        ctx,
        effects,
        owner,
        old,
        by,
        `Memory ${by} states a newer fact (inferred from a conversation)`,
      );
      supersedes.set(by, [...(supersedes.get(by) ?? []), old]);
    }
    const duplicates = new Map([...repeated, ...skipped]);
    const existing = new Map(
      (await memoriesByIds(trx, owner, [...new Set(duplicates.values())])).map((m) => [m.id, m as MemoryView]),
    );
    const byStatement = new Map([...created.values()].map((c) => [c.i, c]));
    const out: InferredView[] = [];
    statements.forEach((s, i) => {
      const made = byStatement.get(i);
      if (made) {
        out.push({
          status: 'created',
          memory: made.memory,
          messages: s.messages,
          supersedes: supersedes.get(made.memory.id) ?? [],
        });
        return;
      }
      const memory = existing.get(duplicates.get(i)!);
      if (memory) out.push({ status: 'duplicate', memory, messages: s.messages, supersedes: [] });
    });
    const createdIds = [...created.keys()];
    effects.audit('memory.infer', { type: 'memory', id: createdIds.length ? createdIds.join(',') : null });
    return out;
  });
  return answer(results);
}
