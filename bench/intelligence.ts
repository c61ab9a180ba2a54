/**
 * Intelligence quality and speed. Quality: entity, relation and conflict precision/recall of the
 * rule-based extractor on the labelled sets in bench/intelligence (dev: rules were tuned on it;
 * test: written before measuring and never tuned on); and issue 53's personal-fact conflict sets,
 * per kind of fact (conflicts-dev.txt: tuned on; conflicts-heldout.txt: written before the rules, never
 * tuned on; conflicts-unseen.txt: another hand's, tuned on since session 4; changes-fresh.txt and the
 * LoCoMo same-subject held-out half: written or drawn before session 4's rules, scored only), beside the
 * figures of the rules before them and at session 4's start (intelligence/previous.json). Speed: a real server (SQLite) with one end
 * user holding N memories (default 10,000, LoCoMo sentences recombined): the first read after start
 * and warm p50 of GET /memory/graph, /memory/clusters and /memory/decisions. Prints JSON.
 *
 *   npm run bench:intelligence [-- --size 10000] [--quality-only] [--llm]   (ENGRAM_LOCOMO_DIR: the LoCoMo files;
 *   --llm: a chat model's facts added, from the ENGRAM_LLM_* endpoint)
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openAiLlm } from '../packages/server/src/engine/llm/index.js';
import {
  DEFAULT_ONTOLOGY,
  Extractor,
  factsByModel,
  type ModelFact,
  SELF,
} from '../packages/server/src/engine/nlp/index.js';
import { deriveKnowledge } from '../packages/server/src/modules/intelligence/knowledge.js';
import { option } from './lib/args.js';
import { jsonClient } from './lib/http.js';
import { locomoCorpus, mulberry32 } from './lib/locomo.js';
import { locomoDir, resolver } from './intelligence/locomo-pairs.js';
import { startServer } from './lib/server.js';

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const size = Number(option('--size') ?? 10_000);
const extractor = new Extractor(DEFAULT_ONTOLOGY);

const lines = (file: string) =>
  readFileSync(join(here, 'intelligence', file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'));
const prf = (tp: number, fp: number, fn: number) => {
  const precision = tp + fp ? tp / (tp + fp) : 1;
  const recall = tp + fn ? tp / (tp + fn) : 1;
  const f1 = precision + recall ? (2 * precision * recall) / (precision + recall) : 0;
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return { precision: r(precision), recall: r(recall), f1: r(f1), tp, fp, fn };
};

function score(gold: Set<string>, found: Set<string>, counts: number[]) {
  for (const g of gold) counts[found.has(g) ? 0 : 2]!++;
  for (const f of found) if (!gold.has(f)) counts[1]!++;
}

function statements(file: string) {
  const entities = [0, 0, 0];
  const untyped = [0, 0, 0];
  const relations = [0, 0, 0];
  const rows = lines(file);
  // The statements label the relation types of the first rules; the personal-fact relations of issue 53
  // (age, habit, ...) are judged by the conflict sets, so found relations of other types are not counted here.
  const labelled = new Set(
    rows.flatMap((line) =>
      (line.split('|')[2] ?? '')
        .split(',')
        .map((r) => r.split('>')[1]?.trim())
        .filter(Boolean),
    ),
  );
  for (const line of rows) {
    const [rawText, goldEntities = '', goldRelations = ''] = line.split('|').map((s) => s.trim());
    const speaker = rawText!.startsWith('@') ? rawText!.slice(1, rawText!.indexOf(' ')) : null;
    const text = speaker ? rawText!.slice(speaker.length + 2) : rawText!;
    const result = extractor.extract(text, speaker);
    const ge = goldEntities
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map((s) => s.toLowerCase());
    // The speaker of a turn is labelled as an entity of it; the extractor knows it from the turn, not the text.
    const fe = [
      ...result.entities.map((e) => `${e.name}:${e.type}`.toLowerCase()),
      ...(speaker ? [`${speaker}:person`.toLowerCase()] : []),
    ];
    score(new Set(ge), new Set(fe), entities);
    score(new Set(ge.map((e) => e.split(':')[0]!)), new Set(fe.map((e) => e.split(':')[0]!)), untyped);
    const gr = goldRelations
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map((s) => {
        const [subject, relation, object, not] = s.split('>');
        return `${subject === 'I' ? (speaker ?? SELF) : subject}>${relation}>${object}>${not ? 'not' : ''}`.toLowerCase();
      });
    const fr = result.relations
      .filter((r) => labelled.has(r.relation) || r.relation.startsWith('favorite_'))
      .map((r) => `${r.subject.name}>${r.relation}>${r.object.name}>${r.negated ? 'not' : ''}`.toLowerCase());
    score(new Set(gr), new Set(fr), relations);
  }
  return {
    sentences: rows.length,
    entities: prf(entities[0]!, entities[1]!, entities[2]!),
    entities_untyped: prf(untyped[0]!, untyped[1]!, untyped[2]!),
    relations: prf(relations[0]!, relations[1]!, relations[2]!),
  };
}

/** A statement and who said it (a LoCoMo turn: its speaker is the "I" of it). */
type Said = { text: string; speaker?: string | null };

/**
 * `--llm`: a chat model's facts (model-facts.ts) added to the rules', read through the OpenAI-compatible endpoint of
 * ENGRAM_LLM_BASE_URL / ENGRAM_LLM_MODEL / ENGRAM_LLM_API_KEY, for the statements of the written sets.
 */
const modelFacts = new Map<string, ModelFact[]>();
if (argv.includes('--llm')) {
  const baseUrl = process.env.ENGRAM_LLM_BASE_URL;
  const model = process.env.ENGRAM_LLM_MODEL;
  if (!baseUrl || !model) throw new Error('--llm needs ENGRAM_LLM_BASE_URL and ENGRAM_LLM_MODEL');
  const llm = openAiLlm({
    baseUrl,
    model,
    ...(process.env.ENGRAM_LLM_API_KEY ? { apiKey: process.env.ENGRAM_LLM_API_KEY } : {}),
  });
  const written = [
    'dev-conflicts.txt',
    'test-conflicts.txt',
    'conflicts-dev.txt',
    'conflicts-heldout.txt',
    'conflicts-unseen.txt',
    'changes-fresh.txt',
    'changes-fresh2.txt',
    'changes-fresh3.txt',
    'changes-fresh4.txt',
    'changes-dev4.txt',
    'changes-fresh5.txt',
    'changes-dev5.txt',
    'changes-fresh6.txt',
    'changes-dev6.txt',
    'changes-fresh7.txt',
    'changes-fresh8.txt',
    'changes-dev8.txt',
    'changes-fresh9.txt',
    'changes-dev9.txt',
    'changes-dev16.txt',
    'changes-locomo.txt',
    'changes-sealed.txt',
    'changes-sealed2.txt',
    'changes-sealed3.txt',
    'changes-fresh10.txt',
    'changes-fresh11.txt',
  ];
  const texts = [
    ...new Set(
      written.flatMap((file) =>
        lines(file).flatMap((line) => {
          const fields = line.split('||').map((f) => f.trim());
          return ['yes', 'no'].includes(fields[3] ?? '') ? [fields[1]!, fields[2]!] : [fields[0]!, fields[1]!];
        }),
      ),
    ),
  ];
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < texts.length) {
        const text = texts[next++]!;
        // A statement the model did not answer (after the provider's retries) counts as one with no facts.
        modelFacts.set(text, await factsByModel(llm, text).catch(() => []));
      }
    }),
  );
}

const pairFound = (a: Said, b: Said) => {
  const memories = [a, b].map((said, i) => {
    const rules = extractor.extract(said.text, said.speaker ?? null);
    const byModel = modelFacts.get(said.text);
    return {
      id: i + 1,
      createdAt: `2024-0${i + 1}-01T00:00:00.000Z`,
      supersededBy: null,
      isSummary: false,
      extraction: byModel ? extractor.withFacts(rules, byModel) : rules,
    };
  });
  return deriveKnowledge(memories, 'user').conflicts.length > 0;
};

/** The first sets (48 pairs, no kinds): older || newer || yes/no. */
function conflicts(file: string) {
  const counts = [0, 0, 0];
  const rows = lines(file);
  for (const line of rows) {
    const [a, b, label] = line.split('||').map((s) => s.trim());
    tally(counts, pairFound({ text: a! }, { text: b! }), label === 'yes');
  }
  return { pairs: rows.length, ...prf(counts[0]!, counts[1]!, counts[2]!) };
}

function tally(counts: number[], found: boolean, gold: boolean) {
  if (found && gold) counts[0]!++;
  else if (found) counts[1]!++;
  else if (gold) counts[2]!++;
}

/**
 * Issue 53's sets: kind || older || newer || yes/no [|| provenance]; precision and recall overall and per
 * kind of fact, and the false alarms among the compatible pairs. `said` reads a statement (a LoCoMo reference).
 */
function conflictsByKind(name: string, file: string, said: (statement: string) => Said = (text) => ({ text })) {
  const all = [0, 0, 0];
  const byKind = new Map<string, number[]>();
  const rows = lines(file);
  for (const line of rows) {
    const [kind, a, b, label] = line.split('||').map((s) => s.trim());
    const found = pairFound(said(a!), said(b!));
    tally(all, found, label === 'yes');
    if (!byKind.has(kind!)) byKind.set(kind!, [0, 0, 0]);
    tally(byKind.get(kind!)!, found, label === 'yes');
  }
  const compatible = rows.length - all[0]! - all[2]!;
  // The same set under the rules of the session's start, per kind beside today's (previous.json).
  const before = previous.session_start?.sets?.[name];
  return {
    pairs: rows.length,
    conflicting: all[0]! + all[2]!,
    ...prf(all[0]!, all[1]!, all[2]!),
    false_alarm_rate: compatible ? Math.round((all[1]! / compatible) * 1000) / 1000 : 0,
    ...(before ? { before: { precision: before.precision, recall: before.recall } } : {}),
    by_kind: Object.fromEntries(
      [...byKind].map(([k, c]) => {
        const { precision, recall } = prf(c[0]!, c[1]!, c[2]!);
        return [k, { precision, recall, ...(before?.by_kind?.[k] ? { before: before.by_kind[k] } : {}), ...count(c) }];
      }),
    ),
  };
}
const count = (c: number[]) => ({ tp: c[0]!, fp: c[1]!, fn: c[2]! });

/** The figures of the rules before issue 53 (commit 78144f4) and at this session's start (session_start), printed beside today's. */
const previous = JSON.parse(readFileSync(join(here, 'intelligence', 'previous.json'), 'utf8'));

const quality = {
  ...Object.fromEntries(
    (['dev', 'test'] as const).map((split) => [
      split,
      { ...statements(`${split}-statements.txt`), conflicts: conflicts(`${split}-conflicts.txt`) },
    ]),
  ),
  facts_dev: conflictsByKind('facts_dev', 'conflicts-dev.txt'),
  facts_heldout: conflictsByKind('facts_heldout', 'conflicts-heldout.txt'),
  // Written by another hand before wave 3 changed the rules, never read while changing them.
  facts_unseen: conflictsByKind('facts_unseen', 'conflicts-unseen.txt'),
  // Session 4 of wave 3: written before that session changed the rules, scored only while changing them.
  facts_fresh: conflictsByKind('facts_fresh', 'changes-fresh.txt'),
  // Written after the first fresh set's misses were read, before the rules tuned on session 4's own pairs.
  facts_fresh2: conflictsByKind('facts_fresh2', 'changes-fresh2.txt'),
  // Session 7: written before that session's helper changed a rule or read a miss; scored only.
  facts_fresh3: conflictsByKind('facts_fresh3', 'changes-fresh3.txt'),
  // Session 9: written and committed before that session changed a rule, in everyday shapes (questions, reported
  // and embedded clauses, pronoun subjects, the passive, "anymore"); only its totals per kind are read.
  facts_fresh4: conflictsByKind('facts_fresh4', 'changes-fresh4.txt'),
  // Session 9's tuning pairs, written after fresh4 in the same shapes with other words; read and tuned on.
  facts_dev4: conflictsByKind('facts_dev4', 'changes-dev4.txt'),
  // Session 10: committed before that session read a rule (job changes without "work at", pronoun subjects across
  // memories, partners); only its totals per kind are read.
  facts_fresh5: conflictsByKind('facts_fresh5', 'changes-fresh5.txt'),
  // Session 10's tuning pairs, written after fresh5 with other words; read and tuned on.
  facts_dev5: conflictsByKind('facts_dev5', 'changes-dev5.txt'),
  // Session 11: committed before that session's helper read a rule or another set's pairs, in chat wording; only its
  // totals per kind are read.
  facts_fresh6: conflictsByKind('facts_fresh6', 'changes-fresh6.txt'),
  // Session 11's tuning pairs, written after fresh6 in chat wording with other words; read and tuned on.
  facts_dev6: conflictsByKind('facts_dev6', 'changes-dev6.txt'),
  // Session 12: committed before that session's helper read a rule or trained anything, partly drawn from LoCoMo dev
  // turns; only its totals per kind are read.
  facts_fresh7: conflictsByKind('facts_fresh7', 'changes-fresh7.txt'),
  // Session 13: 80 pairs written before that session's helper read a rule, split in two by a fixed rule before any
  // was scored: fresh8 held out (totals per kind only), dev8 read and tuned on.
  facts_fresh8: conflictsByKind('facts_fresh8', 'changes-fresh8.txt'),
  facts_dev8: conflictsByKind('facts_dev8', 'changes-dev8.txt'),
  // Session 14: 96 pairs drawn from the LoCoMo dev conversations, committed before that session's helper read a rule
  // or another set's misses; only its totals per kind are read.
  facts_fresh9: conflictsByKind('facts_fresh9', 'changes-fresh9.txt'),
  // Session 14's tuning pairs, written after fresh9 was committed, in other words; read and tuned on.
  facts_dev9: conflictsByKind('facts_dev9', 'changes-dev9.txt'),
  // Session 16's tuning pairs: homes and employers implied without a verb of living or working, and near misses;
  // written by category before fact-slots.ts was tuned, read and tuned on.
  facts_dev16: conflictsByKind('facts_dev16', 'changes-dev16.txt'),
  // Session 5 of wave 3: drawn from the LoCoMo dev conversations, committed before that session changed a rule; held out.
  facts_locomo_changes: conflictsByKind('facts_locomo_changes', 'changes-locomo.txt'),
  // Wave 4: anchored on LoCoMo sessions the set above does not use, committed before that wave read a rule; only
  // its totals are read (the cleanest unseen figure).
  facts_sealed: conflictsByKind('facts_sealed', 'changes-sealed.txt'),
  // Wave 3 session 7: written by a hand that read no rule and no other set's pairs, on the LoCoMo sessions the set
  // above leaves out; like it, only its totals per kind are read.
  facts_sealed2: conflictsByKind('facts_sealed2', 'changes-sealed2.txt'),
  // Session 10: a third hand's, written without reading a rule, another set's pairs or the bench notes on them, in
  // everyday chat wording; only its totals per kind are read.
  facts_sealed3: conflictsByKind('facts_sealed3', 'changes-sealed3.txt'),
  // Session 15: 192 pairs by a hand that read no rule, no other set and no bench note ("sealer"), from Persona-Chat,
  // BlenderBot examples, LoCoMo dev turns and chat wording; kept outside the repository until the session's rules had
  // landed, then scored once, totals per kind only.
  facts_fresh10: conflictsByKind('facts_fresh10', 'changes-fresh10.txt'),
  // Session 16: 240 pairs by another hand that read no rule ("sealer11"), from support, therapy, moving and farewell
  // posts, voice-assistant requests and friends' texts (not Persona-Chat); kept outside the repository until the
  // session's rules had landed, then scored once (start and end), totals per kind only.
  facts_fresh11: conflictsByKind('facts_fresh11', 'changes-fresh11.txt'),
  // Pairs of real statements nobody here wrote (bench/intelligence/locomo-pairs.ts), split before labelling.
  ...(() => {
    const statement = resolver(locomoDir());
    // The earlier sets take every turn's "I" as one end user; the same-subject sets name the speaker.
    const text = (ref: string) => ({ text: statement(ref).text });
    const said = (ref: string) => {
      const s = statement(ref);
      return { text: s.text, speaker: s.subject === 'I' ? s.speaker : null };
    };
    return {
      locomo_tuning: conflictsByKind('locomo_tuning', 'locomo-pairs-tuning.txt', text),
      locomo_heldout: conflictsByKind('locomo_heldout', 'locomo-pairs-heldout.txt', text),
      locomo_same_tuning: conflictsByKind('locomo_same_tuning', 'locomo-same-tuning.txt', said),
      // Held out before labelling; scored only.
      locomo_same_heldout: conflictsByKind('locomo_same_heldout', 'locomo-same-heldout.txt', said),
    };
  })(),
  previous,
};

async function speed() {
  // Beside the repository, like bench/latency.ts; ENGRAM_LOCOMO_DIR when the checkout lives elsewhere.
  const dataDir = locomoDir();
  const { sentences } = locomoCorpus(dataDir);
  const rand = mulberry32(11);
  const server = await startServer();
  try {
    const request = jsonClient(server.url, { 'x-api-key': server.key, 'x-end-user-id': 'bench-user' }, 8);
    const texts = new Set<string>();
    while (texts.size < size)
      texts.add(
        Array.from({ length: 1 + Math.floor(rand() * 2) }, () => sentences[Math.floor(rand() * sentences.length)]).join(
          ' ',
        ),
      );
    const all = [...texts];
    for (let i = 0; i < all.length; i += 50) {
      const res = await request(
        'POST',
        '/memory/bulk-add',
        all.slice(i, i + 50).map((text) => ({ text })),
      );
      if (res.status >= 300 && res.status !== 207) throw new Error(`bulk-add -> ${res.status}`);
    }
    const timed = async (path: string) => {
      const s = performance.now();
      const res = await request('GET', path);
      if (res.status !== 200) throw new Error(`${path} -> ${res.status}: ${res.body.slice(0, 200)}`);
      return { ms: performance.now() - s, body: JSON.parse(res.body) };
    };
    const out: Record<string, unknown> = { memories: size };
    const first = await timed('/memory/graph?limit=100');
    out.first_read_ms = Math.round(first.ms);
    for (const path of ['/memory/graph?limit=100', '/memory/clusters', '/memory/decisions']) {
      const runs: number[] = [];
      let body: any;
      for (let i = 0; i < 60; i++) ({ ms: runs[i], body } = await timed(path));
      runs.sort((a, b) => a - b);
      out[path] = {
        p50_ms: Math.round(runs[30]! * 100) / 100,
        p99_ms: Math.round(runs[59]! * 100) / 100,
        total: body.total ?? body.nodes?.length,
      };
    }
    // One more memory, then the next read: incremental re-extraction of the change only.
    await request('POST', '/memory/add', { text: 'I moved to Lisbon last week.' });
    out.read_after_one_add_ms = Math.round((await timed('/memory/graph?limit=100')).ms);
    const stats = (await timed('/memory/knowledge/stats')).body;
    out.stats = {
      entities: stats.entities,
      relations: stats.relations,
      clusters: stats.clusters,
      decisions: stats.decisions,
    };
    return out;
  } finally {
    await server.stop();
  }
}

const result: Record<string, unknown> = { quality };
if (!argv.includes('--quality-only')) result.speed = await speed();
console.log(JSON.stringify(result, null, 2));
