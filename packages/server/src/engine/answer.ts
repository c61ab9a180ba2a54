// Extractive answers: the best-supported span of the retrieved memories, with dates resolved for "when".
import { parseTemporal } from './temporal.js';
import { analyze, splitSentences, tokenize } from './text.js';

export interface Evidence {
  id: number;
  text: string;
  /** Epoch ms: when it was said, the anchor for "yesterday", "last week". */
  createdAt: number;
  speaker?: string | null;
}

export interface ExtractiveAnswer {
  /** Null when nothing retrieved supports an answer. */
  answer: string | null;
  citations: Array<{ memory_id: number; text: string }>;
}

const DAY = 86_400_000;
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
// Words of the question that say what kind of answer is wanted, not what it is about.
const QUESTION_WORDS = new Set(
  analyze('what when where which who whom whose why how kind type sort likely would does did do'),
);

const formatDay = (t: number) => {
  const d = new Date(t);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
};

/** A created_at-anchored range in words: a day, a week, a month or a year. */
export function describeRange(from: number, to: number): string {
  const span = to - from;
  const start = new Date(from);
  if (span <= DAY) return formatDay(from);
  if (span <= 7 * DAY) return `the week of ${formatDay(from)}`;
  if (span <= 31 * DAY) return `${MONTHS[start.getUTCMonth()]} ${start.getUTCFullYear()}`;
  if (span <= 366 * DAY) return String(start.getUTCFullYear());
  return `between ${formatDay(from)} and ${formatDay(to - 1)}`;
}

/** When a sentence said at `createdAt` places what it tells: a phrase it contains, resolved, or the day it was said. */
export function resolveWhen(sentence: string, createdAt: number): string {
  const range = parseTemporal(sentence, createdAt);
  return range ? describeRange(range.from, range.to) : formatDay(createdAt);
}

const isWhenQuestion = (q: string) => /^\s*(when|what (date|day|year|month|time))\b|\bhow long ago\b/i.test(q);

/**
 * The clause of a sentence (split at commas, semicolons, dashes) that best answers: most question
 * terms, and at least one word the question does not already say.
 */
function bestClause(sentence: string, terms: Set<string>): string {
  // White space before a separator taken only from the start of its run: from each space of a long run, the pattern
  // read the whole run again (quadratic).
  const clauses = sentence.split(/(?:(?<!\s)\s+)?[,;:—–]\s+|(?<!\s)\s+-\s+/u).filter((c) => c.trim().length > 0);
  if (clauses.length <= 1) return sentence;
  let best = sentence;
  let bestScore = -Infinity;
  for (const clause of clauses) {
    const words = analyze(clause);
    const hits = words.filter((w) => terms.has(w)).length;
    const fresh = words.filter((w) => !terms.has(w)).length;
    if (fresh === 0) continue;
    const score = hits + 0.1 * Math.min(fresh, 3) - 0.01 * tokenize(clause).length;
    if (score > bestScore) {
      best = clause;
      bestScore = score;
    }
  }
  return best.trim();
}

/** A span without the words at its edges that the question already says (or that say nothing). */
function trimSpan(span: string, terms: Set<string>): string {
  const words = span.split(/\s+/).filter(Boolean);
  const idle = (w: string) => analyze(w).every((t) => terms.has(t));
  let start = 0;
  let end = words.length;
  while (start < end && idle(words[start]!)) start++;
  while (end > start && idle(words[end - 1]!)) end--;
  if (start >= end) return span;
  const kept = words.slice(start, end).join(' ');
  // The leading marks, then the trailing ones from the start of their run only (tried from each mark of a long run, the
  // pattern read it to its end each time: quadratic).
  const rest = kept.slice(/^[^\p{L}\p{N}"“(]+/u.exec(kept)?.[0].length ?? 0);
  return rest.replace(/(?<![^\p{L}\p{N}"”)])[^\p{L}\p{N}"”)]+$/u, '') || span;
}

/**
 * Picks the sentence of the retrieved memories that shares the most question terms (ties go to
 * the better-ranked memory) and answers with it; a "when" question is answered with the date it
 * resolves to. No shared term: no answer.
 */
export function extractiveAnswer(question: string, evidence: Evidence[]): ExtractiveAnswer {
  const terms = new Set(analyze(question).filter((t) => !QUESTION_WORDS.has(t)));
  let best: { memory: Evidence; sentence: string; score: number } | undefined;
  evidence.forEach((memory, rank) => {
    const sentences = splitSentences(memory.text);
    const speakerTerms = memory.speaker ? new Set(analyze(memory.speaker)) : new Set<string>();
    for (const sentence of sentences) {
      // A question answers nothing (in a conversation, its answer is another turn).
      if (/\?["')\]]*$/.test(sentence)) continue;
      const words = new Set([...analyze(sentence), ...speakerTerms]);
      let hits = 0;
      for (const t of terms) if (words.has(t)) hits++;
      if (hits === 0) continue;
      let fresh = 0;
      for (const w of words) if (!terms.has(w) && !speakerTerms.has(w)) fresh++;
      // Coverage of the question first; then rank; then something the question does not already say.
      const score = hits / terms.size + 0.3 / (rank + 1) + 0.03 * Math.min(fresh, 4) - 0.002 * words.size;
      if (!best || score > best.score) best = { memory, sentence, score };
    }
  });
  if (!best) return { answer: null, citations: [] };
  const { memory, sentence } = best;
  const answer = isWhenQuestion(question)
    ? resolveWhen(sentence, memory.createdAt)
    : trimSpan(bestClause(sentence, terms), terms);
  return { answer, citations: [{ memory_id: memory.id, text: sentence }] };
}
