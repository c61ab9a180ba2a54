import { sha256Hex } from '../../core/crypto.js';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import {
  extractiveSummary,
  LlmError,
  type LlmProvider,
  type SummarySource,
  type TokenUsage,
} from '../../engine/index.js';
import { AppError, invalid } from '../../core/errors.js';
import type { Database, Executor } from '../../store/database.js';
import {
  forgetWithin,
  insertSummary,
  MEMORY_LIMITS,
  memoriesByIds,
  nextSeq,
  rewriteSummary,
  summaryBySetKey,
  type EraseHook,
  type MemoryView,
  type Owner,
} from '../memories/index.js';
import { eraseVectors, type RetrievalService } from '../retrieval/index.js';
import { deleteRelationsOf, insertRelations, memoryNotFound, sourcesOf, summariesOf } from './relations.js';
import { SUMMARIZES, SYNTHESIS_LIMITS, type SummarizeInput, type SummarizeResultView } from './schemas.js';

type Source = MemoryView & { speaker: string | null };
type Method = 'extractive' | 'llm';

/** Identifies a summary of exactly these memories by this method: summarizing them again finds it. */
const setKeyOf = (method: string, maxSentences: number, ids: number[]) =>
  sha256Hex(JSON.stringify(['summary', method, maxSentences, [...ids].sort((a, b) => a - b)]));

const toSummarySource = (m: Source): SummarySource => ({
  id: m.id,
  text: m.text,
  createdAt: Date.parse(m.created_at),
  speaker: m.speaker,
});

const summaryMetadata = (
  method: string,
  maxSentences: number,
  sources: number[],
  extra: Record<string, unknown> = {},
) => ({
  summary: { method, max_sentences: maxSentences, sources, ...extra },
});

function extractiveText(sources: Source[], maxSentences: number): string {
  return extractiveSummary(sources.map(toSummarySource), { maxSentences })
    .map((s) => s.text.replace(/\s+/g, ' ').trim())
    .map((t) => (/[.!?…"')\]]$/u.test(t) ? t : `${t}.`))
    .join(' ')
    .slice(0, MEMORY_LIMITS.textChars);
}

/** A provider failure is the caller's 503: nothing was written, and the same request may succeed later. */
export function llmUnavailable(llm: LlmProvider, error: unknown): AppError {
  if (error instanceof AppError) return error;
  const detail = error instanceof LlmError ? `: ${error.message}` : '';
  return new AppError('unavailable', `The language model (${llm.id}) did not answer${detail}`);
}

async function abstractive(
  llm: LlmProvider,
  sources: Source[],
  maxSentences: number,
): Promise<{ text: string; usage: TokenUsage }> {
  const lines = [...sources]
    .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id - b.id)
    .map(
      (m) =>
        `- (${m.created_at.slice(0, 10)}) ${m.speaker ? `${m.speaker}: ` : ''}${m.text.replace(/\s+/g, ' ').trim()}`,
    );
  try {
    const result = await llm.complete({
      messages: [
        {
          role: 'system',
          content:
            `You summarize memories about a person. Write at most ${maxSentences} sentences in the third person. ` +
            'State only what the memories say, keep names and dates, and answer with the summary text alone.',
        },
        { role: 'user', content: `Memories, oldest first:\n${lines.join('\n')}` },
      ],
      maxTokens: 60 * maxSentences,
    });
    const text = result.content.trim();
    if (text === '') throw new LlmError('the model answered with an empty summary');
    return { text: text.slice(0, MEMORY_LIMITS.textChars), usage: result.usage };
  } catch (error) {
    throw llmUnavailable(llm, error);
  }
}

/** What a request selects its memories by, when it names none. */
const selectionField = (input: SummarizeInput) =>
  input.filters ? 'filters' : input.session_id ? 'session_id' : 'body';

/**
 * A source forgotten while its summary was being made (the LLM answers in seconds): one named is
 * not found, as it would be a moment later; one selected by filters is a conflict, since the
 * selection itself would now be another.
 */
function sourceForgotten(input: SummarizeInput, id: number): AppError {
  if (input.memory_ids) return memoryNotFound(id, `memory_ids/${input.memory_ids.indexOf(id)}`);
  return new AppError(
    'conflict',
    `Memory ${id} was forgotten while the summary was made; send the request again`,
    selectionField(input),
  );
}

/** The memories a request names, or those its filters select: live, the owner's, and not summaries themselves. */
async function selectSources(
  db: Executor,
  retrieval: RetrievalService,
  owner: Owner,
  input: SummarizeInput,
): Promise<Source[]> {
  const limit = SYNTHESIS_LIMITS.summarySources;
  if (input.memory_ids) {
    if (input.filters || input.session_id)
      throw invalid('memory_ids', 'give memory_ids or filters and session_id, not both');
    const found = new Map((await memoriesByIds(db, owner, input.memory_ids)).map((m) => [m.id, m]));
    input.memory_ids.forEach((id, i) => {
      const memory = found.get(id);
      if (!memory) throw memoryNotFound(id, `memory_ids/${i}`);
      if (memory.is_summary)
        throw invalid(`memory_ids/${i}`, `memory ${id} is a summary; summaries are not summarized again`);
    });
    return input.memory_ids.map((id) => found.get(id)!);
  }
  const field = selectionField(input);
  const ids = await retrieval.matching(owner, {
    filters: { ...input.filters, is_summary: false },
    ...(input.session_id !== undefined ? { session_id: input.session_id } : {}),
  });
  if (ids.length === 0) throw invalid(field, 'no memories to summarize: nothing matches');
  if (ids.length > limit) throw invalid(field, `${ids.length} memories match; at most ${limit} are summarized at once`);
  return memoriesByIds(db, owner, ids);
}

/**
 * Summarizes a set of the owner's memories: extractively (central sentences, no repetition), or
 * through the LLM when one is configured. Stored, it is a memory with is_summary set, linked to
 * each source by a `summarizes` relation; the same set summarized again answers the stored one.
 */
export async function summarize(
  database: Database,
  retrieval: RetrievalService,
  llm: LlmProvider | null,
  ctx: WriteContext,
  owner: Owner,
  input: SummarizeInput,
): Promise<{ result: SummarizeResultView; created: boolean }> {
  const maxSentences = input.max_sentences ?? SYNTHESIS_LIMITS.defaultSentences;
  const store = input.store ?? true;
  const sources = await selectSources(database.db, retrieval, owner, input);
  const ids = sources.map((s) => s.id).sort((a, b) => a - b);
  const method: Method = llm ? 'llm' : 'extractive';
  const setKey = setKeyOf(llm ? llm.id : method, maxSentences, ids);
  const model = llm ? { model: llm.id } : {};
  const answer = (
    memory: MemoryView | null,
    status: SummarizeResultView['status'],
    extra: Partial<SummarizeResultView> = {},
  ) => ({
    status,
    summary: memory?.text ?? '',
    method,
    ...model,
    sources: ids,
    memory,
    ...extra,
  });

  if (store) {
    const existing = await summaryBySetKey(database.db, owner, setKey);
    if (existing) return { result: answer(existing, 'existing'), created: false };
  }
  const { text, usage } = llm
    ? await abstractive(llm, sources, maxSentences)
    : { text: extractiveText(sources, maxSentences), usage: undefined };
  const spent = usage ? { usage } : {};
  if (!store) return { result: { ...answer(null, 'not_stored', spent), summary: text }, created: false };

  return write(database, ctx, async (trx, effects) => {
    // The owner's lock first (forgetting takes it too): what is read below stays so until this commits.
    const seq = await nextSeq(trx, owner, effects.now);
    const live = new Set((await memoriesByIds(trx, owner, ids)).map((m) => m.id));
    const gone = ids.find((id) => !live.has(id));
    if (gone !== undefined) throw sourceForgotten(input, gone);
    // Another request may have stored it meanwhile.
    const raced = await summaryBySetKey(trx, owner, setKey);
    if (raced) {
      effects.audit('memory.summarize', { type: 'memory', id: raced.id }, 'existing');
      return { result: answer(raced, 'existing', spent), created: false };
    }
    const memory = await insertSummary(trx, ctx, effects, database, owner, seq, {
      text,
      setKey,
      sessionId: input.session_id ?? null,
      metadata: summaryMetadata(method, maxSentences, ids, {
        ...model,
        ...(input.session_id ? { session_id: input.session_id } : {}),
      }),
    });
    await insertRelations(
      trx,
      ctx,
      effects,
      owner,
      ids.map((id) => ({ source_id: memory.id, target_id: id, type: SUMMARIZES })),
    );
    effects.audit('memory.summarize', { type: 'memory', id: memory.id });
    return { result: answer(memory, 'created', spent), created: true };
  });
}

/**
 * Forgetting a source must leave no copy in its summaries: each is written again, extractively,
 * from the sources still live (its metadata says so), or forgotten too when none is left.
 * Then every link from or to a forgotten memory goes. Registered by the composition root (services.ts).
 */
export const eraseSynthesisData: EraseHook = async (trx, ids, erasure) => {
  const projectId = erasure.ctx.projectId;
  if (projectId === null) return;
  const erased = new Set(ids);
  for (const { id, owner } of await summariesOf(trx, projectId, ids)) {
    if (erased.has(id)) continue;
    const [summary] = await memoriesByIds(trx, owner, [id]);
    if (!summary) continue;
    const linked = await sourcesOf(trx, projectId, id);
    const sources = await memoriesByIds(
      trx,
      owner,
      linked.filter((s) => !erased.has(s)),
    );
    const liveIds = sources.map((s) => s.id).sort((a, b) => a - b);
    const previous = ((summary.metadata as Record<string, unknown>).summary ?? {}) as {
      max_sentences?: unknown;
      forgotten_sources?: unknown;
    };
    const maxSentences =
      typeof previous.max_sentences === 'number' ? previous.max_sentences : SYNTHESIS_LIMITS.defaultSentences;
    const setKey = setKeyOf('extractive', maxSentences, liveIds);
    // Nothing left to summarize, or an equal summary of what is left already exists: this one goes.
    const twin = sources.length > 0 ? await summaryBySetKey(trx, owner, setKey) : undefined;
    if (sources.length === 0 || (twin && twin.id !== id)) {
      await forgetWithin(trx, erasure, owner, [id]);
      continue;
    }
    const forgotten = [
      ...(Array.isArray(previous.forgotten_sources) ? previous.forgotten_sources : []),
      ...linked.filter((s) => erased.has(s)),
    ];
    await rewriteSummary(trx, erasure, owner, id, {
      text: extractiveText(sources, maxSentences),
      setKey,
      metadata: {
        ...summary.metadata,
        ...summaryMetadata('extractive', maxSentences, liveIds, {
          regenerated_at: erasure.effects.now,
          forgotten_sources: forgotten,
        }),
      },
    });
    // Its stored vectors were made of the old text, forgotten source included.
    await eraseVectors(trx, [id]);
  }
  await deleteRelationsOf(trx, projectId, ids);
};
