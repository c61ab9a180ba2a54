// Facts whose values only world knowledge tells apart (issue 53, session 14): a religion ("I'm Catholic" / "I
// converted to Buddhism", "I'm not religious" / "I started going to church"), a language spoken or not, the team a
// fan supports in its league, food a diet excludes, a home named only by a known place ("now that I'm in Japan for
// good"), and a thing named by a pronoun ("I sold it"), which the knowledge timeline gives the thing the memory
// before spoke of. Each reads a sentence by a word of a closed class (world.ts) and the few words around it.
import type { EntityMention } from './entities.js';
import { hedged, statementsOf, subjectOf } from './fact-endings.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import type { Token } from './tokens.js';
import { nounIs } from './word-kinds.js';
import { knownPlace, LANGUAGES, RELIGIONS, TEAMS, WORSHIP } from './world.js';

/** The object a possession's ending names by a pronoun; knowledge.ts gives it the thing the memory before named. */
export const THING_PRONOUN = '@it';

const NEGATORS = new Set(['not', "n't", 'never', 'no', 'nt']);
/** Subjects the sentence names that are not the writer (a dropped "I" is the writer's only without them). */
const OTHERS = new Set(['he', 'she', 'they', 'you', 'his', 'her', 'their', 'your']);
const BE = new Set(['be', 'becom', 'becam']);
const PAST = new Set(['was', 'were', 'used', 'raised', 'grew', 'born']);
/** Words that say a place is home now, not a stop ("in Japan for good", "in Tampa these days"). */
const NOW = new Set(['now', 'good', 'permanently', 'officially', 'settled', 'days', 'anymore']);

const concept = (name: string): EntityRef => ({ name, type: 'concept' });
const negatedBefore = (sentence: Token[], at: number, span = 3) =>
  sentence.slice(Math.max(0, at - span), at).some((t) => NEGATORS.has(t.lower));
const has = (sentence: Token[], words: Set<string>) => sentence.some((t) => words.has(t.lower) || words.has(t.key));

/** The longest phrase of a closed class starting at `i` (up to three words) and its length. */
function phraseIn(sentence: Token[], i: number, known: (p: string) => boolean): { name: string; n: number } | null {
  for (let n = 3; n >= 1; n--) {
    if (i + n > sentence.length) continue;
    const name = sentence
      .slice(i, i + n)
      .map((t) => t.lower)
      .join(' ');
    if (known(name)) return { name, n };
  }
  return null;
}

/** Whose statement the word at `cue` makes: the subject before it, else the writer when the sentence names no one else. */
export function whose(
  sentence: Token[],
  at: number,
  cue: number,
  mentions: EntityMention[],
  self: EntityRef,
): EntityRef | null {
  const named = subjectOf(sentence, at, cue, mentions, self);
  if (named) return named;
  return sentence.slice(0, cue).some((t) => OTHERS.has(t.lower)) ? null : self;
}

export function worldFacts(tokens: Token[], mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  for (const { sentence, at } of statementsOf(tokens)) {
    if (hedged(sentence)) continue;
    const who = (cue: number) => whose(sentence, at, cue, mentions, self);
    for (let i = 0; i < sentence.length; i++) {
      religionAt(sentence, i, who, emit);
      languageAt(sentence, i, who, emit);
      teamAt(sentence, i, who, emit);
      dietAt(sentence, i, who, emit);
      thingEndedAt(sentence, i, who, emit);
    }
    homeIn(sentence, at, mentions, who, emit);
  }
}

type Who = (cue: number) => EntityRef | null;

/** "I'm Catholic", "converted to Buddhism", "started going to church", "found my faith", "lost my faith". */
function religionAt(sentence: Token[], i: number, who: Who, emit: Emit): void {
  const t = sentence[i]!;
  if (t.lower === 'faith' && sentence[i - 1]?.lower === 'my') {
    const subject = who(i);
    if (!subject || negatedBefore(sentence, i, 4)) return;
    const lost = sentence.slice(Math.max(0, i - 3), i).some((s) => s.key === 'lost' || s.key === 'lose');
    emit(subject, FACT_RELATIONS.is, concept('religious'), lost);
    return;
  }
  const found = phraseIn(sentence, i, (p) => p in RELIGIONS);
  if (!found) return;
  const family = RELIGIONS[found.name]!;
  const before = sentence.slice(Math.max(0, i - 4), i);
  if (before.some((s) => PAST.has(s.lower))) return;
  if (WORSHIP.has(found.name)) {
    // Worship as a practice: "go to church", "started attending mass", "got baptised"; not "a wedding at a church".
    const practice =
      found.name.startsWith('bapti') ||
      before.some((s) => ['go', 'attend', 'join', 'start'].includes(s.key) || s.lower === 'goes');
    if (!practice || negatedBefore(sentence, i, 5)) return;
    const subject = who(i);
    if (!subject) return;
    emit(subject, FACT_RELATIONS.religion, concept(family), false);
    emit(subject, FACT_RELATIONS.is, concept('religious'), false);
    return;
  }
  // A creed one is or has become: after a copula or a word of conversion.
  const stated = before.some((s) => BE.has(s.key) || s.key === 'convert' || s.key === 'turn');
  if (!stated) return;
  const subject = who(i);
  if (!subject) return;
  const negated = negatedBefore(sentence, i);
  if (family === 'none') {
    if (negated) return;
    emit(subject, FACT_RELATIONS.religion, concept(family), false);
    emit(subject, FACT_RELATIONS.is, concept('religious'), true);
    return;
  }
  emit(subject, FACT_RELATIONS.religion, concept(family), negated);
  if (!negated) emit(subject, FACT_RELATIONS.is, concept('religious'), false);
}

/** "I speak French", "fluent in Spanish", "I don't speak any Spanish", "I speak no French"; not "learning Spanish". */
function languageAt(sentence: Token[], i: number, who: Who, emit: Emit): void {
  const found = phraseIn(sentence, i, (p) => LANGUAGES.has(p));
  if (!found) return;
  const before = sentence.slice(Math.max(0, i - 4), i);
  const speak = before.findIndex((s) => s.lower === 'speak' || s.lower === 'speaks');
  const fluent = sentence[i - 1]?.lower === 'in' && sentence[i - 2]?.lower === 'fluent';
  if (speak < 0 && !fluent) return;
  const cue = speak >= 0 ? i - before.length + speak : i - 2;
  if (sentence.slice(Math.max(0, cue - 3), cue).some((s) => PAST.has(s.lower) || s.key === 'could')) return;
  const subject = who(cue);
  if (!subject) return;
  const negated = negatedBefore(sentence, cue) || (speak >= 0 && sentence[i - 1]?.lower === 'no');
  if (fluent && negated) return; // "not fluent in Spanish" still speaks some
  emit(subject, FACT_RELATIONS.speaks, concept(found.name), negated);
}

/** Words after a team's name that make a fan of it ("a Lakers fan"), and before it ("root for", "support"). */
const FAN_AFTER = new Set(['fan', 'fans', 'supporter', 'fanatic', 'diehard']);
const FAN_BEFORE = new Set(['support', 'root', 'cheer', 'full', 'fan', 'follow']);

/** "I'm a Lakers fan", "I support Liverpool", "switched to supporting Arsenal", "I've gone full Red Sox". */
function teamAt(sentence: Token[], i: number, who: Who, emit: Emit): void {
  const found = phraseIn(sentence, i, (p) => p in TEAMS);
  if (!found) return;
  const after = sentence[i + found.n];
  const before = sentence.slice(Math.max(0, i - 3), i);
  const cueBefore = before.findLastIndex((s) => FAN_BEFORE.has(s.key) || FAN_BEFORE.has(s.lower));
  if (!FAN_AFTER.has(after?.lower ?? '') && cueBefore < 0) return;
  const cue = cueBefore >= 0 ? i - before.length + cueBefore : i;
  const subject = who(cue);
  if (!subject) return;
  emit(subject, FACT_RELATIONS.supports, concept(found.name), negatedBefore(sentence, cue), TEAMS[found.name]);
}

const DIET_WORDS: Record<string, string> = {
  meat: 'meat',
  chicken: 'meat',
  beef: 'meat',
  pork: 'meat',
  bacon: 'meat',
  steak: 'meat',
  lamb: 'meat',
  burger: 'meat',
  burgers: 'meat',
  fish: 'fish',
  seafood: 'fish',
  salmon: 'fish',
  tuna: 'fish',
  shrimp: 'fish',
  prawns: 'fish',
  dairy: 'dairy',
  cheese: 'dairy',
  eggs: 'dairy',
};
/** Words that make eating a habit of now, not one meal ("started eating fish again"). */
const EATING_NOW = new Set(['again', 'now', 'start', 'started', 'back', 'days', 'every']);

/** "I started eating fish again" as `does eat fish`, which a vegetarian's or a vegan's diet excludes (knowledge.ts). */
function dietAt(sentence: Token[], i: number, who: Who, emit: Emit): void {
  const t = sentence[i]!;
  if (t.key !== 'eat' && t.lower !== 'ate') return;
  for (let k = i + 1; k < sentence.length && k <= i + 3; k++) {
    const w = sentence[k]!.lower;
    const kind = DIET_WORDS[w] ?? (nounIs(w, 'fish') ? 'fish' : nounIs(w, 'meat') ? 'meat' : undefined);
    if (!kind) continue;
    const now = t.lower === 'eat' || t.lower === 'eats' || has(sentence, EATING_NOW);
    if (!now || negatedBefore(sentence, i)) return;
    const subject = who(i);
    if (subject) emit(subject, FACT_RELATIONS.does, concept(`eat ${kind}`), false);
    return;
  }
}

/** Verbs that end a possession named after them by "it" ("I sold it", "someone stole it", "we gave it away"). */
const ENDS_IT = new Set(['sold', 'sell', 'stole', 'donat', 'scrap', 'total', 'rehom', 'pawn']);
const ENDS_IT_WITH = new Map([
  ['gave', 'away'],
  ['give', 'away'],
  ['trade', 'in'],
  ['traded', 'in'],
  ['got', 'rid'],
  ['get', 'rid'],
]);

/** A possession ended and named by "it" (or "it got stolen"): `has @it`, denied. */
function thingEndedAt(sentence: Token[], i: number, who: Who, emit: Emit): void {
  const t = sentence[i]!;
  const it = sentence[i + 1]?.lower === 'it';
  const named =
    (it && (ENDS_IT.has(t.key) || ENDS_IT.has(t.lower) || (ENDS_IT_WITH.has(t.lower) && ENDS_IT_WITH.get(t.lower) === sentence[i + 2]?.lower))) ||
    (t.lower === 'rid' && sentence[i + 1]?.lower === 'of' && sentence[i + 2]?.lower === 'it') ||
    (t.lower === 'it' &&
      ['got', 'was', 'been'].includes(sentence[i + 1]?.lower ?? '') &&
      ['stolen', 'nicked', 'sold', 'towed', 'written', 'totaled', 'totalled'].includes(sentence[i + 2]?.lower ?? ''));
  if (!named || negatedBefore(sentence, i)) return;
  const subject = who(i);
  if (subject) emit(subject, FACT_RELATIONS.has, concept(THING_PRONOUN), true);
}

/**
 * A home named by a known place, when the sentence says it is home now: "living in Spain", "now that I'm in Japan
 * for good", "been in Tokyo a year now", "Berlin ... my new flat here".
 */
function homeIn(sentence: Token[], at: number, mentions: EntityMention[], who: Who, emit: Emit): void {
  const placeAt = new Map<number, string>();
  for (const m of mentions) if (m.type === 'place' && m.first >= at) placeAt.set(m.first - at, m.name);
  for (let i = 0; i < sentence.length; i++) {
    const known = placeAt.has(i) ? null : phraseIn(sentence, i, knownPlace);
    const name = placeAt.get(i) ?? (known ? titled(known.name) : undefined);
    if (!name) continue;
    const prev = sentence[i - 1]?.lower;
    const living =
      prev === 'in' &&
      (sentence[i - 2]?.lower === 'living' || sentence[i - 2]?.lower === 'settled') &&
      !['after', 'before', 'when', 'since'].includes(sentence[i - 3]?.lower ?? '');
    const inNow = prev === 'in' && ['be', 'back'].includes(sentence[i - 2]?.key ?? '') && has(sentence.slice(i), NOW);
    const here = sentence.some(
      (t, k) => t.lower === 'here' && HOMES.has(sentence[k - 1]?.lower ?? '') && sentence[k - 2]?.lower === 'new',
    );
    if (!living && !inNow && !here) continue;
    if (sentence.slice(0, i).some((s) => PAST.has(s.lower) || s.lower === 'grew')) continue;
    const subject = who(living || inNow ? i - 1 : sentence.length);
    if (subject) emit(subject, FACT_RELATIONS.livesIn, { name, type: 'place' }, false);
    return;
  }
}
const HOMES = new Set(['flat', 'apartment', 'place', 'house', 'home']);
const titled = (name: string) => name.replace(/\b\p{L}/gu, (c) => c.toUpperCase());
