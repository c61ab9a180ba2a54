import {
  analyze,
  extractiveAnswer,
  splitSentences,
  type ChatMessage,
  type LlmProvider,
  type TokenUsage,
} from '../../engine/index.js';
import type { Owner } from '../memories/index.js';
import type { RetrievalService, ScoredMemory } from '../retrieval/index.js';
import { SYNTHESIS_LIMITS, type SynthesizeInput, type SynthesizeResultView } from './schemas.js';
import { llmUnavailable } from './summaries.js';

export const NO_ANSWER = 'No answer found in the memories.';

type Citation = { memory_id: number; text: string };

const evidenceOf = (m: ScoredMemory) => ({
  id: m.id,
  text: m.text,
  createdAt: Date.parse(m.created_at),
  speaker: m.speaker ?? null,
});

function builtin(
  question: string,
  memories: ScoredMemory[],
): Pick<SynthesizeResultView, 'answer' | 'found' | 'citations'> {
  const { answer, citations } = extractiveAnswer(question, memories.map(evidenceOf));
  return answer === null ? { answer: NO_ANSWER, found: false, citations: [] } : { answer, found: true, citations };
}

/** The sentence of a memory that shares most words with the answer: the span the answer relies on. */
function spanFor(memory: ScoredMemory, answer: string): string {
  const wanted = new Set(analyze(answer));
  let best = memory.text;
  let bestHits = -1;
  for (const sentence of splitSentences(memory.text)) {
    const hits = analyze(sentence).filter((t) => wanted.has(t)).length;
    if (hits > bestHits) {
      best = sentence;
      bestHits = hits;
    }
  }
  return best;
}

interface LlmAnswer {
  answer: string | null;
  memory_ids: number[];
}

/** The model's JSON answer, or why it is refused. */
function parseAnswer(content: string, retrieved: Set<number>): LlmAnswer | string {
  const json = content.trim().replace(/^```(?:json)?\s*|\s*```$/g, '');
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return 'Your reply was not a JSON object.';
  }
  const p = parsed as Partial<LlmAnswer>;
  if (
    typeof p !== 'object' ||
    p === null ||
    !(typeof p.answer === 'string' || p.answer === null) ||
    !Array.isArray(p.memory_ids) ||
    !p.memory_ids.every((id) => Number.isInteger(id))
  ) {
    return 'Your reply must be {"answer": string or null, "memory_ids": [integers]}.';
  }
  const foreign = p.memory_ids.filter((id) => !retrieved.has(id));
  if (foreign.length > 0)
    return `You cited ${foreign.map((id) => `m:${id}`).join(', ')}, which are not among the memories given. Cite only those.`;
  if (p.answer !== null && p.answer.trim() !== '' && p.memory_ids.length === 0)
    return 'An answer must cite the memories it relies on.';
  return { answer: p.answer?.trim() || null, memory_ids: [...new Set(p.memory_ids)] };
}

const SYSTEM =
  'Answer the question using only the numbered memories. Reply with one JSON object and nothing else: ' +
  '{"answer": "<short answer>", "memory_ids": [<ids of the memories the answer relies on>]}. ' +
  'Resolve relative dates ("yesterday", "last week") against the date of the memory that says them. ' +
  'If the memories do not answer the question, reply {"answer": null, "memory_ids": []}.';

/**
 * A grounded answer through the LLM. An answer citing anything but the retrieved memories is
 * refused and asked for again once; refused twice, the built-in answer stands (and says why).
 */
async function throughLlm(
  llm: LlmProvider,
  question: string,
  memories: ScoredMemory[],
): Promise<Omit<SynthesizeResultView, 'memories'>> {
  const listing = memories
    .map(
      (m) =>
        `[m:${m.id}] (${m.created_at.slice(0, 10)}) ${m.speaker ? `${m.speaker}: ` : ''}${m.text.replace(/\s+/g, ' ').trim()}`,
    )
    .join('\n');
  const messages: ChatMessage[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: `Memories:\n${listing}\n\nQuestion: ${question}` },
  ];
  const retrieved = new Map(memories.map((m) => [m.id, m]));
  const usage: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  let refusal = '';
  for (let attempt = 0; attempt < 2; attempt++) {
    let content: string;
    try {
      const result = await llm.complete({ messages, maxTokens: 300 });
      for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const) usage[k] += result.usage[k];
      content = result.content;
    } catch (error) {
      throw llmUnavailable(llm, error);
    }
    const parsed = parseAnswer(content, new Set(retrieved.keys()));
    if (typeof parsed !== 'string') {
      if (parsed.answer === null)
        return { answer: NO_ANSWER, found: false, citations: [], method: 'llm', model: llm.id, usage };
      const citations: Citation[] = parsed.memory_ids.map((id) => ({
        memory_id: id,
        text: spanFor(retrieved.get(id)!, parsed.answer!),
      }));
      return { answer: parsed.answer, found: true, citations, method: 'llm', model: llm.id, usage };
    }
    refusal = parsed;
    messages.push({ role: 'assistant', content }, { role: 'user', content: refusal });
  }
  return {
    ...builtin(question, memories),
    method: 'extractive',
    usage,
    note: `the model's answer was refused twice: ${refusal}`,
  };
}

/** Retrieves the memories a question needs, then answers from them with citations. */
export async function synthesize(
  retrieval: RetrievalService,
  llm: LlmProvider | null,
  owner: Owner,
  input: SynthesizeInput,
): Promise<SynthesizeResultView> {
  const memories = await retrieval.query(owner, {
    query: input.question,
    k: input.k ?? SYNTHESIS_LIMITS.defaultSynthesizeK,
    ...(input.session_id !== undefined ? { session_id: input.session_id } : {}),
    ...(input.filters !== undefined ? { filters: input.filters } : {}),
  });
  if (memories.length === 0)
    return {
      answer: NO_ANSWER,
      found: false,
      citations: [],
      memories,
      method: llm ? 'llm' : 'extractive',
      ...(llm ? { model: llm.id } : {}),
    };
  if (llm) return { ...(await throughLlm(llm, input.question, memories)), memories };
  return { ...builtin(input.question, memories), memories, method: 'extractive' };
}
