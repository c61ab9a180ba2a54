// Facts whose values only world knowledge tells apart (issue 53, session 14): a religion ("I'm Catholic" / "I
// converted to Buddhism", "I'm not religious" / "I started going to church"), a language spoken or not, the team a
// fan supports in its league, food a diet excludes, a home named only by a known place ("now that I'm in Japan for
// good"), and a thing named by a pronoun ("I sold it"), which the knowledge timeline gives the thing the memory
// before spoke of. Each reads a sentence by a word of a closed class (world.ts) and the few words around it.
import type { EntityMention } from './entities.js';
import { hedged, singularOf, statementsOf, subjectOf } from './fact-endings.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import { WEEKDAYS, WRITTEN_NEGATIONS } from './fact-words.js';
import type { Token } from './tokens.js';
import { MONTHS } from '../temporal.js';
import { speaksOfFuture } from './lexicon.js';
import { nounIs } from './word-kinds.js';
import { dict, FIRST_WORDS, knownPlace, LANGUAGES, RELIGIONS, TEAMS, WORSHIP } from './world.js';

/** The object a possession's ending names by a pronoun; knowledge.ts gives it the thing the memory before named. */
export const THING_PRONOUN = '@it';

const NEGATORS = new Set<string>(WRITTEN_NEGATIONS);
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

/** A sentence's phrases of up to three words from each word, longest first, computed once for every class. */
const gramsCache = new WeakMap<Token[], string[][]>();
function gramsOf(sentence: Token[]): string[][] {
  let grams = gramsCache.get(sentence);
  if (grams) return grams;
  grams = sentence.map((t, i) => {
    const two = i + 1 < sentence.length ? `${t.lower} ${sentence[i + 1]!.lower}` : '';
    const three = i + 2 < sentence.length ? `${two} ${sentence[i + 2]!.lower}` : '';
    return [three, two, t.lower];
  });
  gramsCache.set(sentence, grams);
  return grams;
}

/** The longest phrase of a closed class starting at `i` (up to three words) and its length. */
function phraseIn(sentence: Token[], i: number, known: (p: string) => boolean): { name: string; n: number } | null {
  if (!FIRST_WORDS.has(sentence[i]!.lower)) return null;
  const grams = gramsOf(sentence)[i]!;
  for (let g = 0; g < 3; g++) if (grams[g] && known(grams[g]!)) return { name: grams[g]!, n: 3 - g };
  return null;
}

/** Days and months ("on Saturdays", "in May"), which the entity rules may take for a person. */
const TIME_NAMES = new Set([...WEEKDAYS, ...MONTHS]);
const isTimeName = (name: string) => {
  const w = name.toLowerCase();
  return TIME_NAMES.has(w) || (w.endsWith('s') && TIME_NAMES.has(w.slice(0, -1)));
};
/** Whose statement the word at `cue` makes: the subject before it, else the writer when the sentence names no one else. */
export function whose(
  sentence: Token[],
  at: number,
  cue: number,
  mentions: EntityMention[],
  self: EntityRef,
): EntityRef | null {
  const named = subjectOf(sentence, at, cue, mentions, self);
  // A day or a month the entity rules took for a person ("on Saturdays") is no one.
  if (named && !isTimeName(named.name)) return named;
  return sentence.slice(0, cue).some((t) => OTHERS.has(t.lower)) ? null : self;
}

export function worldFacts(tokens: Token[], mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  for (const { sentence, at } of statementsOf(tokens)) {
    if (hedged(sentence)) continue;
    const who = (cue: number) => whose(sentence, at, cue, mentions, self);
    for (let i = 0; i < sentence.length; i++) {
      // Most words start no name of a closed class; only they are looked up as one.
      if (FIRST_WORDS.has(sentence[i]!.lower) || sentence[i]!.lower === 'faith') {
        religionAt(sentence, i, who, emit);
        languageAt(sentence, i, who, emit);
        teamAt(sentence, i, who, emit);
      }
      dietAt(sentence, i, who, emit);
      drinkAt(sentence, i, who, emit);
      thingEndedAt(sentence, i, who, emit);
    }
    homeIn(sentence, at, mentions, who, emit);
    employerIn(sentence, at, mentions, self, who, emit);
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

const DIET_WORDS: Record<string, string> = dict<string>(
  Object.entries({
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
  }),
);
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

/** Drinks of alcohol, beside the lexicon's kind ("a couple of beers", "a glass of wine"). */
const ALCOHOL = new Set([
  'beer',
  'beers',
  'wine',
  'pint',
  'pints',
  'cocktail',
  'cocktails',
  'booze',
  'whisky',
  'vodka',
]);
const HAVING = new Set(['have', 'having', 'had', 'drink', 'drinking', 'drank', 'grab', 'grabbing', 'order']);

/** "I've started having a beer after work", "had a couple of beers", "I'm drinking again": `does drink`, a teetotaller's end. */
function drinkAt(sentence: Token[], i: number, who: Who, emit: Emit): void {
  const t = sentence[i]!;
  const alcohol = ALCOHOL.has(t.lower) || nounIs(t.lower, 'alcohol');
  const again = t.lower === 'drinking' && ['again', 'socially'].includes(sentence[i + 1]?.lower ?? '');
  if (!again && !(alcohol && sentence.slice(Math.max(0, i - 4), i).some((s) => HAVING.has(s.lower)))) return;
  if (negatedBefore(sentence, i, 5) || sentence.slice(0, i).some((s) => PAST.has(s.lower))) return;
  const subject = who(i);
  if (subject) emit(subject, FACT_RELATIONS.does, concept('drink'), false);
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
    (it &&
      (ENDS_IT.has(t.key) ||
        ENDS_IT.has(t.lower) ||
        (ENDS_IT_WITH.has(t.lower) && ENDS_IT_WITH.get(t.lower) === sentence[i + 2]?.lower))) ||
    (t.lower === 'rid' && sentence[i + 1]?.lower === 'of' && sentence[i + 2]?.lower === 'it') ||
    (t.lower === 'it' &&
      ['got', 'was', 'been'].includes(sentence[i + 1]?.lower ?? '') &&
      ['stolen', 'nicked', 'sold', 'towed', 'written', 'totaled', 'totalled'].includes(sentence[i + 2]?.lower ?? ''));
  if (!named || negatedBefore(sentence, i)) return;
  const subject = who(i);
  if (subject) emit(subject, FACT_RELATIONS.has, concept(THING_PRONOUN), true);
}

/** Keys of words that make a place named in the sentence a home: a verb of living or moving, a word for home. */
const HOME_VERBS = new Set(['live', 'rent', 'reloc', 'settl', 'move', 'base', 'home']);
/** A dwelling, a home when it is the writer's own or new ("our new place in Leeds", "my flat in Gothenburg"). */
const DWELLINGS = new Set([
  'flat',
  'apartment',
  'place',
  'hous',
  'condo',
  'dorm',
  'houseboat',
  'cottag',
  'neighbourhood',
]);
/** Words before a place that make it the home left or another one ("left Lisbon for Porto", "from Fort Worth"). */
const NOT_THIS_PLACE = new Set(['from', 'left', 'leav', 'of', 'visit', 'near', 'outsid']);
/** Words that make a stay or a place of work, not a home ("my office in Sydney", "a conference in Berlin"). */
const NOT_HOME = new Set(['offic', 'confer', 'job', 'work', 'school', 'colleg', 'univers', 'meet', 'wed', 'hotel']);

/**
 * A home named by a known place and a word of home anywhere in its sentence: "living in Spain", "we relocated ...
 * Sacramento", "now that I'm in Japan for good", "been in Tokyo a year now", "Berlin ... my new flat here".
 */
function homeIn(sentence: Token[], at: number, mentions: EntityMention[], who: Who, emit: Emit): void {
  const placeAt = new Map<number, string>();
  for (const m of mentions)
    if (m.type === 'place' && m.first >= at && m.first < at + sentence.length) placeAt.set(m.first - at, m.name);
  // Most sentences name no place: nothing more to read in them.
  if (!placeAt.size && !sentence.some((t) => FIRST_WORDS.has(t.lower) && knownPlaceAt(sentence, t))) return;
  // "home" but not "from home", "my home country" or "my hometown" (where one is from).
  const verb = sentence.some(
    (t, k) =>
      HOME_VERBS.has(t.key) &&
      !(t.key === 'home' && (sentence[k - 1]?.lower === 'from' || ORIGINS.has(sentence[k + 1]?.lower ?? ''))),
  );
  // A move to come ("we're moving to York next month") is a plan.
  if (
    speaksOfFuture(sentence.map((t) => t.key)) ||
    sentence.some((t, k) => t.lower === 'moving' && sentence[k - 1]?.key === 'be')
  )
    return;
  const dwelling = sentence.some(
    (t, k) => DWELLINGS.has(t.key) && ['my', 'our', 'new', 'own'].includes(sentence[k - 1]?.lower ?? ''),
  );
  const noHome =
    sentence.some((t) => NOT_HOME.has(t.key)) && !sentence.some((t) => t.key === 'reloc' || t.key === 'move');
  // The last place the sentence makes a home: "moved from Denver to Austin", "sold our house in Bristol and rent in Bath".
  let home: { i: number; name: string } | null = null;
  for (let i = 0; i < sentence.length; i++) {
    const known = placeAt.has(i) ? null : phraseIn(sentence, i, knownPlace);
    const name = placeAt.get(i) ?? (known ? titled(known.name) : undefined);
    if (!name) continue;
    const prev = sentence[i - 1];
    if (prev && (NOT_THIS_PLACE.has(prev.key) || NOT_THIS_PLACE.has(prev.lower))) continue;
    if (sentence.slice(Math.max(0, i - 4), i).some((t) => t.key === 'sold' || t.key === 'sell')) continue;
    const inNow =
      prev?.lower === 'in' && ['be', 'back'].includes(sentence[i - 2]?.key ?? '') && has(sentence.slice(i), NOW);
    const life = sentence[i + 1]?.lower === 'life' || sentence[i + 1]?.lower === 'people';
    if (noHome || (!verb && !dwelling && !inNow && !life)) continue;
    home = { i, name };
  }
  if (!home) return;
  const before = sentence.slice(0, home.i);
  if (before.some((s) => PAST.has(s.lower) || s.lower === 'grew' || s.lower === 'after' || s.key === 'rememb')) return;
  // "My best friend just moved to Mombasa": someone of the writer's, not the writer, unless "I" or "we" is said too;
  // "Ben's brother lives in Oakland": someone of Ben's. "I don't live in Seattle anymore" is the rules' to deny.
  if (someoneElses(before)) return;
  if (before.some((t) => NEGATORS.has(t.lower) || t.lower === 'longer')) return;
  const subject = who(home.i);
  if (subject) emit(subject, FACT_RELATIONS.livesIn, { name: home.name, type: 'place' }, false);
}
/** Whether a known place's name starts at token `t` of the sentence. */
const knownPlaceAt = (sentence: Token[], t: Token) => !!phraseIn(sentence, sentence.indexOf(t), knownPlace);
const ORIGINS = new Set(['country', 'town', 'state', 'city']);
const SUBJECT_SELF = new Set(['i', 'we', "i'm", "we're"]);
const PEOPLE = new Set([
  'friend',
  'boss',
  'colleague',
  'coworker',
  'neighbour',
  'neighbor',
  'roommate',
  'partner',
  'kids',
]);
const isPerson = (t: Token | undefined) =>
  !!t && (PEOPLE.has(singularOf(t.lower)) || nounIs(singularOf(t.lower), 'relative'));
/** "my best friend", "our neighbour": a person of the writer's at `k` ("my"/"our" and a person noun in two words). */
const isMine = (words: Token[], k: number) =>
  ['my', 'our'].includes(words[k]!.lower) &&
  [words[k + 1], words[k + 2]].some(
    (t) => !!t && (PEOPLE.has(singularOf(t.lower)) || PEOPLE.has(t.lower) || nounIs(singularOf(t.lower), 'relative')),
  );
/**
 * Whether words before a value make it someone else's: "My best friend just moved to Mombasa" is a friend's home,
 * unless "I" or "we" is said too; "Ben's brother lives in Oakland" is someone of Ben's. `except` (a boss, for a
 * job) is a person of the writer's whose mention makes the value the writer's own.
 */
export function someoneElses(before: Token[], except?: ReadonlySet<string>): boolean {
  const mine = (k: number) =>
    isMine(before, k) && !(except && [1, 2].some((d) => except.has(before[k + d]?.lower ?? '')));
  if (!before.some((t) => SUBJECT_SELF.has(t.lower)) && before.some((_, k) => mine(k))) return true;
  return before.some((t, k) => t.lower === "'s" && isPerson(before[k + 1]));
}
const titled = (name: string) => name.replace(/\b\p{L}/gu, (c) => c.toUpperCase());

/** Keys of words that make an organisation named in the sentence an employer: a job, an offer, a start, a hire. */
const JOB_WORDS = new Set([
  'job',
  'role',
  'posit',
  'offer',
  'hire',
  'hired',
  'poach',
  'employ',
  'gig',
  'intern',
  'sign',
  'recruit',
  'career',
]);
const NOT_HIRED = new Set(['interview', 'appli', 'apply', 'down', 'declin', 'reject', 'hope', 'dream']);
/** Words before an organisation that end the job there ("last day at Tesco", "notice at Boots", "fired from Ikea"). */
const JOB_ENDS = new Set(['quit', 'left', 'leav', 'fire', 'fired', 'notic', 'laid', 'redund', 'last']);

/** "got a job at the BBC", "starting at Lidl on Monday", "poached by Stripe"; "last day at Tesco" ends Tesco. */
function employerIn(
  sentence: Token[],
  at: number,
  mentions: EntityMention[],
  self: EntityRef,
  who: Who,
  emit: Emit,
): void {
  for (const m of mentions) {
    const i = m.first - at;
    if (i < 1 || i >= sentence.length) continue;
    const link = sentence[i - 1]!.key;
    // An unknown name after "at" is taken for a person by the entity rules; people are seldom worked "at".
    if (m.type !== 'organization' && !(m.type === 'person' && link === 'at')) continue;
    const before = sentence.slice(Math.max(0, i - 4), i);
    const ended = before.some((t) => JOB_ENDS.has(t.key) || JOB_ENDS.has(t.lower));
    const started =
      (['at', 'for', 'with', 'by', 'join'].includes(link) || (link === 'from' && sentence[i - 2]?.key === 'offer')) &&
      sentence.slice(Math.max(0, i - 6), i).some((t) => JOB_WORDS.has(t.key) || t.key === 'start');
    if (!ended && !started) continue;
    if (!ended && sentence.slice(0, i).some((t) => NEGATORS.has(t.lower) || t.lower === 'longer')) continue;
    // An interview, an application or an offer turned down is no job; nor a start to come ("next week").
    if (!ended && (sentence.some((t) => NOT_HIRED.has(t.key)) || speaksOfFuture(sentence.map((t) => t.key)))) continue;
    if (!ended && sentence.slice(0, i).some((s) => PAST.has(s.lower) || s.lower === 'after')) continue;
    const subject = who(i);
    // The subject found may be a workplace the rules took for a person ("notice at Boots, starting at Lloyds").
    const workplace = mentions.some((o) => o.name === subject?.name && sentence[o.first - at - 1]?.key === 'at');
    if (subject)
      emit(workplace ? self : subject, FACT_RELATIONS.worksAt, { name: m.name, type: 'organization' }, ended);
  }
}
