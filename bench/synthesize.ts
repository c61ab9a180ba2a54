/**
 * Answer and summary quality through the public HTTP API of a real server. Every turn of each
 * LoCoMo conversation goes in through `POST /v1/memory/add_turn`; then
 * - every category 1-4 question is asked through `POST /memory/synthesize` (k = 10) and the answer
 *   scored against the gold answer: token F1 (SQuAD normalisation: lower case, no punctuation or
 *   articles) and containment (the normalised gold answer appears in the normalised answer);
 * - every session is summarized through `POST /memory/summarize` (session_id, store false) and scored
 *   against the dataset's session summary by ROUGE-1 and ROUGE-2 F1; the same sessions are summarized
 *   in process by the alternatives (lead sentences; centrality without redundancy removal) so that the
 *   built-in method is chosen on measured merit.
 * The method is the server's: built-in, or the LLM when ENGRAM_LLM_* is set in the environment.
 *
 *   npm run bench:synthesize [-- files...]
 *
 * Default files: ../shared/bench/locomo-dev/*.json relative to the repository root. Prints JSON.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { extractiveSummary } from '../packages/server/src/engine/index.js';
import { jsonClient } from './lib/http.js';
import { ingestConversation } from './lib/ingest.js';
import { loadConversation, type Conversation } from './lib/locomo.js';
import { startServer } from './lib/server.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TENANT = 'locomo-synthesize';
const SUMMARY_SENTENCES = 5;
const CATEGORY = { 1: 'multi_hop', 2: 'temporal', 3: 'open_domain', 4: 'single_hop' } as Record<number, string>;

const files = process.argv.slice(2).map((f) => resolve(f));
if (files.length === 0) {
  const dir = resolve(repoRoot, '../shared/bench/locomo-dev');
  files.push(
    ...readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => resolve(dir, f)),
  );
}

// ---- scoring ---------------------------------------------------------------
const normalize = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s]/gu, ' ')
    .replace(/\b(a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
const tokens = (s: string) => normalize(s).split(' ').filter(Boolean);

function f1(prediction: string, gold: string): number {
  const p = tokens(prediction);
  const g = tokens(gold);
  if (p.length === 0 || g.length === 0) return p.length === g.length ? 1 : 0;
  const counts = new Map<string, number>();
  for (const t of g) counts.set(t, (counts.get(t) ?? 0) + 1);
  let common = 0;
  for (const t of p) {
    const n = counts.get(t) ?? 0;
    if (n > 0) {
      common++;
      counts.set(t, n - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / p.length;
  const recall = common / g.length;
  return (2 * precision * recall) / (precision + recall);
}
const contains = (prediction: string, gold: string) =>
  normalize(gold) !== '' && ` ${normalize(prediction)} `.includes(` ${normalize(gold)} `) ? 1 : 0;

/** ROUGE-n F1 over lower-cased word n-grams. */
function rouge(prediction: string, gold: string, n: number): number {
  const grams = (s: string) => {
    const w = tokens(s);
    const m = new Map<string, number>();
    for (let i = 0; i + n <= w.length; i++) {
      const g = w.slice(i, i + n).join(' ');
      m.set(g, (m.get(g) ?? 0) + 1);
    }
    return m;
  };
  const p = grams(prediction);
  const g = grams(gold);
  let overlap = 0;
  for (const [k, c] of p) overlap += Math.min(c, g.get(k) ?? 0);
  const pn = [...p.values()].reduce((a, b) => a + b, 0);
  const gn = [...g.values()].reduce((a, b) => a + b, 0);
  if (overlap === 0) return 0;
  return (2 * (overlap / pn) * (overlap / gn)) / (overlap / pn + overlap / gn);
}

const round = (x: number) => Math.round(x * 1000) / 1000;
const mean = (xs: number[]) => (xs.length ? round(xs.reduce((a, b) => a + b, 0) / xs.length) : 0);

// ---- run -------------------------------------------------------------------
interface Scored {
  category: number;
  f1: number;
  contains: number;
  found: boolean;
}
interface SessionSummary {
  gold: string;
  served: string;
  lead: string;
  centrality: string;
}

const convs = files.map(loadConversation);
const goldSummaries = (file: string) => {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  return new Map(
    Object.entries(raw).flatMap(([k, v]) => {
      const m = /^session_(\d+)_summary$/.exec(k);
      return m && typeof v === 'string' ? [[`session_${m[1]}`, v] as const] : [];
    }),
  );
};

const server = await startServer();
let method = 'unknown';
try {
  const request = jsonClient(server.url, { 'x-api-key': server.key, 'x-tenant-id': TENANT }, 8);
  const call = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await request('POST', path, body, headers);
    if (res.status !== 200 && res.status !== 201) throw new Error(`${path} -> ${res.status}: ${res.body}`);
    return JSON.parse(res.body) as Record<string, unknown>;
  };
  const results = await Promise.all(
    convs.map(async (conv: Conversation, c) => {
      const userId = `conversation-${c + 1}-${conv.name.replace(/\.json$/, '')}`;
      await ingestConversation((p, b) => call(p, b), conv, TENANT, userId);
      const asUser = { 'x-end-user-id': userId };
      const answers: Scored[] = [];
      for (const q of conv.qa) {
        const res = await call('/memory/synthesize', { question: q.question, k: 10 }, asUser);
        method = String(res.method);
        const gold = String(q.answer ?? '');
        answers.push({
          category: q.category,
          f1: f1(String(res.answer), gold),
          contains: contains(String(res.answer), gold),
          found: res.found === true,
        });
      }
      const summaries: SessionSummary[] = [];
      for (const [sessionId, gold] of goldSummaries(files[c]!)) {
        const docs = conv.docs.filter((d) => d.sessionId === sessionId);
        if (docs.length === 0) continue;
        const res = await call(
          '/memory/summarize',
          { session_id: sessionId, max_sentences: SUMMARY_SENTENCES, store: false },
          asUser,
        );
        const sources = docs.map((d) => ({
          id: d.id,
          text: d.text,
          createdAt: d.createdAt,
          speaker: d.speaker ?? null,
        }));
        const inProcess = (options: Parameters<typeof extractiveSummary>[1]) =>
          extractiveSummary(sources, options)
            .map((s) => s.text)
            .join(' ');
        summaries.push({
          gold,
          served: String(res.summary),
          lead: inProcess({ maxSentences: SUMMARY_SENTENCES, method: 'lead' }),
          centrality: inProcess({ maxSentences: SUMMARY_SENTENCES, lambda: 1 }),
        });
      }
      return { name: conv.name, answers, summaries };
    }),
  );

  const answerFigures = (scored: Scored[]) => ({
    questions: scored.length,
    f1: mean(scored.map((s) => s.f1)),
    contains: mean(scored.map((s) => s.contains)),
    answered: mean(scored.map((s) => (s.found ? 1 : 0))),
  });
  const all = results.flatMap((r) => r.answers);
  const byCategory = Object.fromEntries(
    Object.entries(CATEGORY).map(([k, name]) => [name, answerFigures(all.filter((s) => s.category === Number(k)))]),
  );
  const sessions = results.flatMap((r) => r.summaries);
  const summaryFigures = (pick: (s: SessionSummary) => string) => ({
    rouge1_f1: mean(sessions.map((s) => rouge(pick(s), s.gold, 1))),
    rouge2_f1: mean(sessions.map((s) => rouge(pick(s), s.gold, 2))),
  });
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'synthesize',
        node: process.version,
        files: files.map((f) => f.split('/').pop()),
        method,
        measure:
          'POST /memory/synthesize (k=10) answers vs gold (token F1, containment), LoCoMo categories 1-4; POST /memory/summarize (session, 5 sentences) vs the dataset session summaries (ROUGE F1)',
        answers: {
          overall: answerFigures(all),
          by_category: byCategory,
          per_file: Object.fromEntries(results.map((r) => [r.name, answerFigures(r.answers)])),
        },
        summaries: {
          sessions: sessions.length,
          served: summaryFigures((s) => s.served),
          alternatives_in_process: {
            lead: summaryFigures((s) => s.lead),
            centrality_without_redundancy_removal: summaryFigures((s) => s.centrality),
          },
        },
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await server.stop();
}
