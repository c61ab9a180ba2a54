// A couple's status said of both ("Jake and I got divorced", "Leah and Tom got married", "Alex and I tied the knot")
// and a divorce said by its noun ("since the divorce", "Melanie's divorce from Rick was finalized") (issue 53,
// session 14): a `relationship_status` of each person of the couple, which a status stated before contradicts; one's
// own break-up ("I broke up with him", session 15; "she dumped me", session 16): single.
import type { EntityMention } from './entities.js';
import { hedged, statementsOf } from './fact-endings.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import type { Token } from './tokens.js';
import { dict } from './world.js';

/** Words of a status a couple gets, by the status they give. */
const STATUSES: Record<string, string> = dict<string>(
  Object.entries({
    divorced: 'divorced',
    separated: 'separated',
    married: 'married',
    engaged: 'engaged',
    wed: 'married',
  }),
);
const status = (name: string): EntityRef => ({ name, type: 'concept' });

export function coupleStatuses(tokens: Token[], mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  for (const { sentence, at } of statementsOf(tokens)) {
    if (hedged(sentence)) continue;
    const people = mentions
      .filter((m) => m.type === 'person' && m.first >= at && m.last <= at + sentence.length)
      .map((m) => ({ ...m, first: m.first - at, last: m.last - at }));
    for (let k = 0; k < sentence.length; k++) {
      const t = sentence[k]!;
      // "<A> and <B|I> got/are/were <status>", "<A> and I tied the knot".
      const knot = t.lower === 'tied' && sentence[k + 1]?.lower === 'the' && sentence[k + 2]?.lower === 'knot';
      const value = knot ? 'married' : STATUSES[t.lower];
      if (!value) continue;
      const verb = sentence[k - 1];
      if (!knot && !(verb && (['get', 'be'].includes(verb.key) || verb.lower === 'just'))) continue;
      const couple = coupleBefore(sentence, k, people, self);
      for (const person of couple) emit(person, FACT_RELATIONS.status, status(value), false);
    }
    // "since the divorce", "my divorce came through", "Melanie's divorce from Rick was finalized".
    const divorce = sentence.findIndex((t) => t.lower === 'divorce');
    const before = sentence[divorce - 1]?.lower;
    const owner = before === "'s" ? people.find((p) => p.last === divorce - 1) : undefined;
    const the = before === 'the' && (divorce === 1 || ['since', 'after'].includes(sentence[divorce - 2]?.lower ?? ''));
    if (before === 'my' || the) emit(self, FACT_RELATIONS.status, status('divorced'), false);
    else if (owner) emit({ name: owner.name, type: 'person' }, FACT_RELATIONS.status, status('divorced'), false);
  }
}

/**
 * "I broke up with the guy from the gym", "we split up", "Tom and I broke up": single again. Read on the text as written
 * (not on the frames' rewrites, which say "Jo and I split up" of "my ex-wife Jo").
 */
export function ownBreakUps(tokens: Token[], self: EntityRef, emit: Emit): void {
  for (const { sentence } of statementsOf(tokens)) {
    if (hedged(sentence)) continue;
    // "I broke up with the guy from the gym", "we split up", "Tom and I broke up": single again.
    const parted = sentence.findIndex(
      (t, k) => ['broke', 'split'].includes(t.lower) && ['up', 'from'].includes(sentence[k + 1]?.lower ?? ''),
    );
    let who = parted - 1;
    while (who > 0 && ['just', 'finally', 'have', "'ve", 'had'].includes(sentence[who]!.lower)) who--;
    // "kate dumped me", "he broke up with me": the writer is the one left, single again too.
    const left = sentence.findIndex(
      (t, k) =>
        (DUMPED.has(t.lower) && sentence[k + 1]?.lower === 'me') ||
        (k === parted && sentence[k + 2]?.lower === 'with' && sentence[k + 3]?.lower === 'me'),
    );
    if (
      (parted > 0 && !deniedBefore(sentence, parted) && ['i', 'we'].includes(sentence[who]!.lower)) ||
      (left > 0 &&
        !deniedBefore(sentence, left) &&
        !sentence.slice(0, left).some((t) => ['if', 'would'].includes(t.lower)))
    )
      emit(self, FACT_RELATIONS.status, status('single'), false);
  }
}

/** "never broke up", "didn't dump me": a denial before the words at `at` ("no" is left out: "no, we split up"). */
const deniedBefore = (sentence: Token[], at: number) =>
  sentence.slice(0, at).some((t) => t.lower === 'not' || t.lower === "n't" || t.lower === 'never');

/** Verbs of a partner ending it with the writer ("dumped me", "ditched me"). */
const DUMPED = new Set(['dumped', 'ditched', 'dumps', 'dump']);
const NOT_NAMES = new Set(['i', 'we', 'my', 'the', 'and', 'so', 'but', 'mum', 'mom', 'dad']);
type Person = { name: string; first: number; last: number };
/** "Jo And Sam", read as one name by the entity rules, is two people. */
const both = (p: Person): EntityRef[] => p.name.split(/ and /i).map((name) => ({ name, type: 'person' }));

/** The people of "<A> and <B>", "<A> and I" or "we" just before `end` (skipping "just", "finally"), or none. */
function coupleBefore(sentence: Token[], end: number, people: Person[], self: EntityRef): EntityRef[] {
  let k = end;
  while (k > 0 && ['just', 'finally', 'officially', 'now'].includes(sentence[k - 1]!.lower)) k--;
  if (['get', 'be'].includes(sentence[k - 1]?.key ?? '')) k--;
  while (k > 0 && ['just', 'finally', 'officially', 'now'].includes(sentence[k - 1]!.lower)) k--;
  const last = sentence[k - 1]?.lower;
  if (last === 'we' && sentence[k - 2]?.lower !== 'and') return [self];
  const second = people.find((p) => p.last === k);
  if (second?.name.includes(' And ')) return both(second);
  const secondStart = last === 'i' ? k - 1 : second ? second.first : -1;
  if (secondStart < 1 || sentence[secondStart - 1]?.lower !== 'and') return [];
  // A name the entity rules did not read as one ("Jake", opening the sentence): a capitalised word of its own.
  const word = sentence[secondStart - 2];
  const first =
    people.find((p) => p.last === secondStart - 1) ??
    (word?.capitalized && !word.punct && !NOT_NAMES.has(word.lower)
      ? { name: word.text, first: secondStart - 2, last: secondStart - 1 }
      : undefined);
  if (!first) return [];
  return [...both(first), ...(last === 'i' ? [self] : both(second!))];
}
