// The attribute a statement is about, learned (issue 53, session 12): a softmax regression over a sentence's word keys,
// with names replaced by their entity type ("<place>"), trained by scripts/build-fact-kinds.ts on the tuning sets'
// statements into fact-kinds.json. It decides the kind of a statement the rules read no fact from ("Porto is home
// now" is about a residence), so a change is found by the kind of what is said, not by the phrase that says it.
import { readFileSync } from 'node:fs';
import { STOP_WORDS } from '../stopwords.js';
import type { EntityMention } from './entities.js';
import type { EntityRef } from './fact-model.js';
import { hedged, headsOf, statementsOf, subjectOf } from './fact-endings.js';
import { NUMBER_WORDS } from './lexicon.js';
import type { Token } from './tokens.js';
import { lookupTable } from '../../core/lookup.js';

/** The single-valued attributes the classifier tells apart, and the possessions and habits beside them. */
export type FactKind =
  | 'residence'
  | 'employer_job'
  | 'relationship'
  | 'age_birthday'
  | 'favorite_preference'
  | 'possession'
  | 'habit';

interface Model {
  kinds: FactKind[];
  bias: number[];
  weights: Record<string, number[]>;
}

let loaded: Model | null = null;
const model = (): Model => {
  if (!loaded) {
    const read = JSON.parse(readFileSync(new URL('./fact-kinds.json', import.meta.url), 'utf8')) as Model;
    loaded = { ...read, weights: lookupTable(read.weights) };
  }
  return loaded;
};
let loadedAliases: Record<string, string> | null = null;
/** Words the sets do not use, as the set word nearest to them in GloVe (build-fact-kinds.ts --glove). */
const wordAliases = (): Record<string, string> => {
  loadedAliases ??= lookupTable(
    JSON.parse(readFileSync(new URL('./fact-kind-words.json', import.meta.url), 'utf8')) as Record<string, string>,
  );
  return loadedAliases;
};

/**
 * A sentence's features: its content words' keys (a word the model lacks as its alias), a name as its type, a
 * number as `<num>`.
 */
export function kindFeatures(
  tokens: Token[],
  mentions: EntityMention[],
  aliases: Record<string, string> = wordAliases(),
): string[] {
  const named = new Map<number, EntityMention>();
  for (const m of mentions) named.set(m.first, m);
  const out: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const m = named.get(i);
    if (m) {
      out.push(`<${m.type}>`);
      i = m.last - 1;
      continue;
    }
    const t = tokens[i]!;
    if (t.punct || STOP_WORDS.has(t.lower)) continue;
    out.push(/^\d/.test(t.lower) ? '<num>' : (aliases[t.lower] ?? t.key));
  }
  return out;
}

/** The kinds' probabilities for a sentence's features. */
export function kindScores(features: string[], m: Model = model()): number[] {
  const logits = [...m.bias];
  for (const f of new Set(features)) {
    const w = m.weights[f];
    if (w) for (let k = 0; k < logits.length; k++) logits[k]! += w[k]!;
  }
  const top = Math.max(...logits);
  const exp = logits.map((l) => Math.exp(l - top));
  const sum = exp.reduce((a, b) => a + b, 0);
  return exp.map((e) => e / sum);
}

/** The most likely kind of a sentence and its probability. */
export function kindOf(tokens: Token[], mentions: EntityMention[]): { kind: FactKind; p: number } {
  const m = model();
  const scores = kindScores(kindFeatures(tokens, mentions), m);
  const best = scores.indexOf(Math.max(...scores));
  return { kind: m.kinds[best]!, p: scores[best]! };
}

/** Words that say a statement is of now, after an earlier one ("now", "these days", "new", "officially"). */
const CURRENT = new Set(['now', 'nowaday', 'currentli', 'offici']);
const OTHERS = new Set(['you', 'your', "you're", 'he', 'she', 'they', 'his', 'her', 'their']);
/** How sure the classifier must be of the kind. */
const SURE = 0.6;

/**
 * A statement of now about a kind of attribute: its subject, the kind the classifier gives it, the heads it names
 * and the entity types of its names ("number" for a figure). The knowledge timeline (knowledge.ts) takes it as a
 * new value of the subject's current fact of that kind when it does not name that fact's value.
 */
export interface Update {
  subject: EntityRef;
  kind: FactKind;
  words: string[];
  values: string[];
}

/** The updates of a text: sentences marked as current, not hedged, of a kind the classifier is sure of. */
export function updatesOf(tokens: Token[], mentions: EntityMention[], self: EntityRef): Update[] {
  const out: Update[] = [];
  for (const { sentence, at } of statementsOf(tokens)) {
    const marker = sentence.findIndex(
      (t, k) => CURRENT.has(t.key) || (t.lower === 'these' && sentence[k + 1]?.lower === 'days'),
    );
    if (marker < 0 || hedged(sentence)) continue;
    const inside = mentions
      .filter((m) => m.first >= at && m.last <= at + sentence.length)
      .map((m) => ({ ...m, first: m.first - at, last: m.last - at }));
    const { kind, p } = kindOf(sentence, inside);
    // The words must say the kind too: a name alone ("my new office is in Sydney") is no residence.
    const byWords = kindScores(kindFeatures(sentence, inside).filter((f) => !f.startsWith('<')));
    if (p < SURE || byWords[model().kinds.indexOf(kind)]! < Math.max(...byWords)) continue;
    // With no subject named, the writer's, unless it speaks of someone ("you're loving life now").
    const someoneElse = inside.some((m) => m.type === 'person') || sentence.some((t) => OTHERS.has(t.lower));
    const subject = subjectOf(sentence, at, marker, mentions, self) ?? (someoneElse ? null : self);
    if (!subject) continue;
    const values = [...new Set(inside.map((m) => m.type))];
    if (sentence.some((t) => /^\d/.test(t.lower) || NUMBER_WORDS.has(t.lower))) values.push('number');
    out.push({ subject, kind, words: headsOf(sentence), values });
  }
  return out;
}
