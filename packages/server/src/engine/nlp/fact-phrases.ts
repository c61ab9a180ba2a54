// Clause, subject and phrase reading for the fact rules (facts.ts): clauses, subjects, noun phrases, frequencies, numbers.
import type { EntityMention } from './entities.js';
import { type EntityRef, FACT_RELATIONS } from './fact-model.js';
import {
  ADVERBS,
  ATTRIBUTES,
  CLAUSE_BREAK,
  COUNT_WORDS,
  DETERMINERS,
  LEADING,
  LIGHT_VERBS,
  ORDINALS,
  PERIODS,
  SINGLE_THINGS,
  STATUS,
  STOP,
  TEENS,
  TENS,
  TIMES_OF_DAY,
  unitOf,
  WEEKDAYS,
} from './fact-words.js';
import { GIVEN_NAMES, MONTHS, NUMBER_WORDS } from './lexicon.js';
import type { Token } from './tokens.js';

export const numberOf = (t: Token | undefined): number | null => {
  if (!t) return null;
  if (/^\d+$/.test(t.text)) return Number(t.text);
  if (t.lower in COUNT_WORDS && NUMBER_WORDS.has(t.lower)) return COUNT_WORDS[t.lower]!;
  // "thirty-five" as one token.
  if (t.lower.includes('-')) return spelledNumber([t])?.value ?? null;
  return null;
};

export interface Clause {
  tokens: Token[];
  /** Index in the sentence's tokens of the clause's first token. */
  offset: number;
  joinedBy: string | null;
}

export function clausesOf(tokens: Token[]): Clause[] {
  const out: Clause[] = [];
  let start = 0;
  let joinedBy: string | null = null;
  for (let i = 0; i <= tokens.length; i++) {
    const t = tokens[i];
    if (t && !CLAUSE_BREAK.has(t.punct ? t.text : t.key)) continue;
    // "and"/"or" inside a noun phrase ("landscapes and still life", "tea and juice") does not break a clause
    // unless a subject or a verb-like word follows; kept simple: break and let an empty subject carry over.
    if (i > start) out.push({ tokens: tokens.slice(start, i), offset: start, joinedBy });
    joinedBy = t ? (t.punct ? t.text : t.key) : null;
    start = i + 1;
  }
  return out;
}

/** Prepositions that lead a time before the subject ("In May I turned 40"). */
const TIME_PREPOSITIONS = new Set(['in', 'on', 'at', 'sinc', 'after', 'befor', 'dure', 'by', 'for', 'over']);

export interface Subject {
  ref: EntityRef;
  /** "my wife" / "Mel's dog": the noun after the owner (stemmed), the owner in `ref`. */
  role: string | null;
  /** A name following the role ("my dog Max"). */
  roleName: string | null;
  next: number;
}

/** The end user ("I", "we", "my ..."), a named person, or an owner's role noun at the start of a clause. */
export function subjectOf(
  clause: Token[],
  mentionAt: Map<number, EntityMention>,
  offset: number,
  self: EntityRef,
): Subject | null {
  // Adjuncts before the subject do not count against the window: a time ("Last week we moved", "In May I
  // turned 40", "Two years ago my wife and I ..."), a manner adverb in -ly ("Sadly, I ...").
  let window = 5;
  for (let i = 0; i < Math.min(clause.length, window); i++) {
    const t = clause[i]!;
    const time = mentionAt.get(offset + i + (TIME_PREPOSITIONS.has(t.key) ? 1 : 0));
    if (time?.type === 'date' && (time.first === offset + i || TIME_PREPOSITIONS.has(t.key))) {
      const skip = time.last - offset - i;
      window += skip;
      i += skip - 1;
      continue;
    }
    if (!t.capitalized && /[a-z]{3}ly$/.test(t.lower) && i < clause.length - 1) {
      window++;
      continue;
    }
    const mention = mentionAt.get(offset + i);
    if (t.lower === 'i' || t.lower === 'we') return { ref: self, role: null, roleName: null, next: i + 1 };
    if (t.lower === 'my' || t.lower === 'our') return withRole(clause, i + 1, self, mentionAt, offset);
    if (mention?.type === 'person') {
      const end = mention.last - offset;
      const ref: EntityRef = { name: mention.name, type: 'person' };
      // "Gina's 24", "Nate's not a hiker", "Caroline's single": the clitic is "is", not a possessive.
      if (clause[end]?.text === "'s" && !isCopulaClitic(clause[end + 1], clause[end + 2]))
        return withRole(clause, end + 1, ref, mentionAt, offset);
      // "Emma and I broke up": the end user with the person as the object.
      return { ref, role: null, roleName: null, next: end };
    }
    if (mention) return null;
    // "Jess and I split up", "Dan is my ex": a name the entity rules did not know, in a person's place.
    const next = clause[i + 1]?.key;
    if (
      t.capitalized &&
      !PRONOUN_SUBJECTS.has(t.lower) &&
      ((next === 'and' && ['i', 'we'].includes(clause[i + 2]?.lower ?? '')) ||
        (next === 'be' && ['my', 'our'].includes(clause[i + 2]?.lower ?? '')))
    )
      return { ref: { name: t.text, type: 'person' }, role: null, roleName: null, next: i + 1 };
    if (!LEADING.has(t.key) && !LEADING.has(t.lower)) return null;
  }
  return null;
}

/** Words after a name's "'s" that make it "is" or "has": a negation, an article, a status, an adverb, a participle. */
const CLITIC_NEXT = new Set(
  'not never a an been becom got gone just still now back alreadi final offici actual realli alway onli also in at out from move left start quit turn no over my our'.split(
    ' ',
  ),
);
const CLITIC_ING = new Set(['living', 'working', 'dating', 'seeing', 'staying', 'moving', 'getting']);
/** Whether a name's "'s" before `t` is "is"/"has" ("Gina's 24", "Nate's not a hiker", "Caroline's single"). */
const isCopulaClitic = (t: Token | undefined, after: Token | undefined) =>
  !!t &&
  (CLITIC_NEXT.has(t.key) ||
    CLITIC_NEXT.has(t.lower) ||
    STATUS.has(t.lower) ||
    CLITIC_ING.has(t.lower) ||
    // A figure as an age ("Gina's 24", "Leo's one year old now"), not a count ("Mel's two dogs").
    ((/^\d+$/.test(t.text) || NUMBER_WORDS.has(t.lower)) &&
      (!after || after.punct || ['year', 'month', 'week', 'now', 'old', 'today', 'soon'].includes(after.key))));

export function withRole(
  clause: Token[],
  i: number,
  owner: EntityRef,
  mentionAt: Map<number, EntityMention>,
  offset: number,
): Subject {
  let j = i;
  while (
    clause[j] &&
    ['new', 'old', 'late', 'current', 'little', 'older', 'younger', 'ex', 'belov', 'first', 'second', 'third'].includes(
      clause[j]!.key,
    )
  )
    j++;
  // A modifier before an attribute noun ("wedding anniversary", "cell phone number") names the same attribute.
  if (clause[j] && clause[j + 1] && ATTRIBUTES[clause[j + 1]!.key] && !ATTRIBUTES[clause[j]!.key]) j++;
  const role = clause[j] && !clause[j]!.punct ? clause[j]!.key : null;
  let next = role ? j + 1 : j;
  let roleName: string | null = null;
  if (clause[next]?.text === ',') next++;
  const named = mentionAt.get(offset + next);
  if (role && named?.type === 'person') {
    roleName = named.name;
    next = named.last - offset;
  }
  return { ref: owner, role, roleName, next };
}

/** Words of a noun phrase from `i` (determiners skipped) up to a stop word, at most `max`. */
export function phrase(clause: Token[], i: number, max = 3): { words: Token[]; end: number } {
  let j = i;
  while (clause[j] && DETERMINERS.has(clause[j]!.key)) j++;
  const words: Token[] = [];
  while (
    clause[j] &&
    words.length < max &&
    !STOP.has(clause[j]!.key) &&
    !clause[j]!.punct &&
    !RELATIVE_SUBJECTS.has(clause[j]!.lower)
  )
    words.push(clause[j++]!);
  return { words, end: j };
}

export const concept = (words: Token[]): EntityRef => ({ name: words.map((w) => w.lower).join(' '), type: 'concept' });
export const conceptRef = (name: string, type = 'concept'): EntityRef => ({ name, type });

/** The activity of a verb phrase as a short stable key: light verbs, determiners and particles dropped ("go running" -> "run"). */
export function activityKey(words: Token[]): string {
  const keys = words.filter(
    (w) =>
      !w.punct &&
      !LIGHT_VERBS.has(w.key) &&
      !/^\d/.test(w.text) &&
      !NUMBER_WORDS.has(w.lower) &&
      !['cup', 'glass', 'time', 'of', 'with', 'mile', 'km', 'hour', 'minut', 'it'].includes(w.key) &&
      !ADVERBS.has(w.key),
  );
  return keys
    .map((w) => w.key)
    .slice(0, 3)
    .join(' ');
}

/** The number of an ordinal word or figure ("fifth", "40th"). */
export const ordinalOf = (t: Token): number | undefined =>
  ORDINALS[t.lower] ?? (/^\d+(st|nd|rd|th)$/.test(t.lower) ? Number.parseInt(t.lower, 10) : undefined);
/** Possessives by which the writer, or someone else, speaks of their own birthday. */
const OWN_POSSESSIVES = { writer: new Set(['my', 'our']), other: new Set(['his', 'her', 'their']) };
/**
 * The age a predicate gives its subject by its own birthday ("celebrated his fifth birthday", "had my 40th birthday");
 * `writer`: whether the subject is the writer ("I went to his fifth birthday" gives no one's age).
 */
export function ownBirthdayAge(rest: Token[], writer: boolean): number | undefined {
  const own = OWN_POSSESSIVES[writer ? 'writer' : 'other'];
  const k = rest.findIndex((t, j) => j >= 2 && t.key === 'birthday' && own.has(rest[j - 2]!.lower));
  return k < 0 ? undefined : ordinalOf(rest[k - 1]!);
}

export interface Frequency {
  dimension: 'frequency' | 'time_of_day' | 'weekday';
  value: string;
  start: number;
}

/** "every morning", "twice a week", "three times a week", "on Saturdays", "in the evenings", "daily", "two cups a day". */
export function frequencyIn(clause: Token[]): Frequency | null {
  for (let i = 0; i < clause.length; i++) {
    const t = clause[i]!;
    const next = clause[i + 1];
    if (t.key === 'everi' && next) {
      if (next.key in TIMES_OF_DAY && next.key !== 'day')
        return { dimension: 'time_of_day', value: TIMES_OF_DAY[next.key]!, start: i };
      if (WEEKDAYS.has(next.lower)) return { dimension: 'weekday', value: next.lower, start: i };
      const n = numberOf(next);
      const period = PERIODS[(n !== null ? clause[i + 2] : next)?.key ?? ''];
      if (period)
        return { dimension: 'frequency', value: n !== null ? `every ${n} ${period}s` : `1/${period}`, start: i };
    }
    if (t.key === 'daili' || t.key === 'weekli' || t.key === 'monthli') {
      return {
        dimension: 'frequency',
        value: `1/${t.key === 'daili' ? 'day' : t.key === 'weekli' ? 'week' : 'month'}`,
        start: i,
      };
    }
    if (
      (t.lower === 'on' || t.lower === 'most') &&
      next &&
      WEEKDAYS.has(next.lower.replace(/s$/, '')) &&
      /s$/.test(next.lower)
    ) {
      return { dimension: 'weekday', value: next.lower.replace(/s$/, ''), start: i };
    }
    if (
      t.lower === 'in' &&
      clause[i + 1]?.lower === 'the' &&
      clause[i + 2] &&
      /s$/.test(clause[i + 2]!.lower) &&
      clause[i + 2]!.key in TIMES_OF_DAY
    ) {
      return { dimension: 'time_of_day', value: TIMES_OF_DAY[clause[i + 2]!.key]!, start: i };
    }
    if ((t.lower === 'at' && next?.lower === 'night') || t.lower === 'nightly')
      return { dimension: 'time_of_day', value: 'night', start: i };
    // "<count> a/per <period>": "twice a week", "three times a week", "two cups a day".
    if (
      (t.lower === 'a' || t.lower === 'per') &&
      next &&
      PERIODS[next.key] &&
      next.key !== 'night' &&
      next.key !== 'morn'
    ) {
      let count: number | null = null;
      for (let j = i - 1; j >= 0 && j >= i - 5; j--) {
        const n = numberOf(clause[j]);
        if (n !== null && clause[j]!.lower !== 'a' && clause[j]!.lower !== 'an') {
          count = n;
          break;
        }
        if (clause[j]!.key === 'onc' || clause[j]!.lower === 'once') {
          count = 1;
          break;
        }
        if (clause[j]!.lower === 'twice') {
          count = 2;
          break;
        }
      }
      if (count !== null) return { dimension: 'frequency', value: `${count}/${PERIODS[next.key]}`, start: i };
    }
  }
  return null;
}

/** Where a frequency phrase begins, so the activity before it does not swallow its count ("three times a week"). */
export function frequencyStart(clause: Token[], f: Frequency): number {
  let s = f.start;
  while (
    s > 0 &&
    (numberOf(clause[s - 1]) !== null ||
      ['time', 'onc', 'once', 'twice', 'cup', 'glass', 'of'].includes(clause[s - 1]!.key) ||
      clause[s - 1]!.lower === 'twice')
  )
    s--;
  return s;
}

export const isParticiple = (t: Token | undefined) =>
  !!t &&
  (/(ed|en|wn)$/.test(t.lower) ||
    [
      'been',
      'got',
      'had',
      'done',
      'made',
      'sold',
      'left',
      'lost',
      'bought',
      'quit',
      'switched',
      'gone',
      'become',
      'begun',
    ].includes(t.lower));

/** The last noun of a short phrase ("my old piano" -> "piano"); a plural keeps its stem form. */
export const headOf = (words: Token[]) => words[words.length - 1]!.lower.replace(/(?<=[^s])s$/, '');

export function singleThing(words: Token[], driving: boolean): { relation: string; value: string } | null {
  if (!words.length) return null;
  for (const [relation, names] of SINGLE_THINGS) {
    if (!words.some((w) => names.has(w.key) || names.has(w.lower))) continue;
    if (relation === FACT_RELATIONS.drives && !driving && !words.some((w) => w.capitalized)) return null;
    // A bare category word ("a phone") names no particular one.
    const specific = words.filter((w) => !['phone', 'car', 'truck', 'van', 'suv', 'new', 'old'].includes(w.key));
    if (!specific.length) return null;
    return { relation, value: specific.map((w) => w.lower).join(' ') };
  }
  return driving ? { relation: FACT_RELATIONS.drives, value: words.map((w) => w.lower).join(' ') } : null;
}

/** "twenty-six", "thirty one", "nineteen": a number spelled out at the start of `words`. */
export function spelledNumber(words: Token[]): { value: number; end: number } | null {
  const first = words[0]?.lower;
  if (!first) return null;
  const [tens, unit] = first.split('-');
  if (TENS[tens!] !== undefined) {
    if (unitOf(unit)) return { value: TENS[tens!]! + unitOf(unit)!, end: 1 };
    const k = words[1]?.text === '-' ? 2 : 1;
    const u = unitOf(words[k]?.lower);
    return u ? { value: TENS[tens!]! + u, end: k + 1 } : { value: TENS[tens!]!, end: 1 };
  }
  if (TEENS[first] !== undefined) return { value: TEENS[first]!, end: 1 };
  return null;
}

/** "2 May", "the 12th of May", "May 2nd": "may 2"; a month alone: "may". */
export function dayOfYear(words: Token[]): string | null {
  const month = words.find((w) => MONTHS.has(w.lower));
  if (!month) return null;
  const day = words.find((w) => /^\d{1,2}(st|nd|rd|th)?$/.test(w.lower));
  return day ? `${month.lower} ${Number.parseInt(day.lower, 10)}` : month.lower;
}

/** "once a week" implied by "every Sunday" and "every weekend", "once a day" by "every morning". */
export function impliedFrequency(rest: Token[], f: Frequency): string | null {
  if (rest[f.start]?.key !== 'everi') return null;
  if (f.dimension === 'weekday') return '1/week';
  if (f.dimension === 'time_of_day') return f.value === 'weekend' ? '1/week' : '1/day';
  return null;
}

/**
 * A place, or a one-word name the entity rules took for a person that is no known given name: "out of Cork",
 * "I left Cork", where only the context ("in Cork") would have typed it.
 */
export const placeLike = (m: EntityMention | undefined): boolean =>
  !!m &&
  (m.type === 'place' || (m.type === 'person' && m.last - m.first === 1 && !GIVEN_NAMES.has(m.name.toLowerCase())));

/** A relative clause's subject ends a noun phrase: "an old car I barely drive". */
const RELATIVE_SUBJECTS = new Set(['i', 'we', 'you', 'he', 'she', 'they']);

/** Capitalised words at a clause's start that are not names. */
const PRONOUN_SUBJECTS = new Set([
  'he',
  'she',
  'they',
  'it',
  'this',
  'that',
  'there',
  'here',
  'what',
  'who',
  'you',
  'my',
  'our',
]);

/** Simple-past forms of the verbs of a state (being, living, working, having, owning, dating, staying, renting). */
const PAST_STATES = new Set(['was', 'were', 'lived', 'worked', 'had', 'owned', 'dated', 'stayed', 'rented']);
/** Units of a span long enough to be a state of one's life ("for years", "for a decade"), not a visit. */
const LIFE_SPANS = new Set(['year', 'month', 'decad', 'age', 'long', 'while', 'life', 'childhood']);

/**
 * Tense as polarity (issue 53): a state in the simple past over a span ("Chicago was home for years", "I worked at
 * IKEA for a decade", "I was married until 2019") is true once and not now, like "used to". The present perfect
 * ("I've lived here for years") is a state that holds, and a past without a span ("I was in Rome") says nothing.
 * `verb`: where the verb or copula stands in `clause`.
 */
export function endedState(clause: Token[], verb: number): boolean {
  const v = clause[verb];
  if (!v || !PAST_STATES.has(v.lower)) return false;
  if (clause.slice(0, verb).some((t) => t.key === 'have' || t.key === 'use')) return false;
  const words = clause.slice(verb + 1).map((t) => t.key);
  // "I was married until 2019", "I was an actress before I got into writing".
  if (words.some((w) => w === 'until' || w === 'till' || w === 'befor')) return true;
  const span = words.indexOf('for');
  return span >= 0 && words.slice(span + 1, span + 5).some((w) => LIFE_SPANS.has(w));
}
