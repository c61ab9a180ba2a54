// Verbs of change that name the attribute they change rather than its old value (issue 53): a home settled in
// or lived near, a move whose destination is not said, a job begun or had, work done "as" or "for" someone, a
// liking ranked ("better than"), and an activity no longer done. Read before the verb rules of fact-verbs.ts;
// each returns whether it read the clause.
import type { EntityMention } from './entities.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import {
  activityKey,
  concept,
  conceptRef,
  headOf,
  isParticiple,
  ordinalOf,
  phrase,
  placeLike,
} from './fact-phrases.js';
import { employerAt, worksAtAfter } from './fact-predicates.js';
import { ADVERBS, PRONOUNS, STAY_WORDS, STOP, WORKPLACES } from './fact-words.js';
import { GIVEN_NAMES, NUMBER_WORDS, singular } from './lexicon.js';
import type { Token } from './tokens.js';
import { type VerbClass, verbClassAt } from './word-kinds.js';

/** A move whose destination is not named ends the home stated before: its value is no place. */
export const ELSEWHERE = 'elsewhere';

/** Verbs whose denial says nothing about an activity done ("I don't know", "I don't think so"). */
const NOT_ACTIVITIES = new Set([
  'be',
  'have',
  'know',
  'think',
  'want',
  'need',
  'mind',
  'care',
  'like',
  'love',
  'hate',
  'enjoy',
  'mean',
  'rememb',
  'forget',
  'see',
  'feel',
  'believ',
  'understand',
  'get',
  'got',
  'live',
  'work',
  'own',
  'let',
  'say',
  'tell',
  'agre',
  'expect',
  'wait',
  'worri',
  'usual',
  'alway',
  'realli',
  'quit',
  'stop',
  'gave',
  'give',
  'left',
  'leav',
  'stand',
  'afford',
  'help',
  'imagin',
]);
/** Verbs of a paid task: "I deliver for DoorDash", "she writes for the Guardian". */
const WORK_FOR = new Set(['work', 'deliv', 'deliver', 'drive', 'write', 'cook', 'code', 'design', 'clean', 'nurs']);
/** Where a move leaves from without a destination: "we moved across town", "I had to move out". */
const MOVE_ENDS = new Set([
  'across',
  'out',
  'away',
  'hous',
  'home',
  'last',
  'recent',
  'again',
  'back',
  'abroad',
  'into',
  'to',
  'in',
  'off',
  'here',
  'there',
  'closer',
  'nearer',
]);

/**
 * The residence frame has two single-valued slots (issue 53): the place (`lives_in`, a named place) and the
 * dwelling (`lives_in` with this aspect: "a flat above the bakery", "the dorms", "a small village near York"),
 * so "I live in a flat" and "I live in London" are both true, and a move ends both.
 */
export const DWELLING = 'dwelling';
/** Heads after "live in" that are a way of living, not a home ("I live in fear", "we live in hope"). */
const NOT_HOMES = new Set([
  'fear',
  'hope',
  'moment',
  'present',
  'past',
  'denial',
  'peac',
  'harmoni',
  'luxuri',
  'poverti',
  'comfort',
  'style',
  'dream',
  'shadow',
  'world',
  'bubbl',
]);

/** Words that end a dwelling's noun phrase: "a flat above the bakery", "a village near York". */
const PLACE_LINKS = new Set(
  'in at on near above below by with outsid behind next off over under the a an of for from close across around'.split(
    ' ',
  ),
);

/** "(live) in the dorms", "(moved) into a bigger house": the dwelling's head noun, when no named place stands first. */
function dwelling(rest: Token[], at: (k: number) => number, mentionAt: Map<number, EntityMention>): string | null {
  const link = rest.findIndex((t, k) => k >= 1 && k <= 2 && ['in', 'at', 'into', 'to'].includes(t.key));
  if (link < 0 || mentionAt.has(at(link + 1)) || mentionAt.has(at(link + 2))) return null;
  const p = phrase(rest, link + 1, 4);
  const cut = p.words.findIndex((w) => PLACE_LINKS.has(w.key) || PLACE_LINKS.has(w.lower));
  const words = p.words.slice(0, cut < 0 ? p.words.length : cut).filter((w) => !ADVERBS.has(w.key));
  if (!words.length || words.some((w) => w.capitalized || PRONOUNS.has(w.key) || /\d/.test(w.lower))) return null;
  const head = words[words.length - 1]!;
  if (NOT_HOMES.has(head.key) || STOP.has(head.key) || head.key === 'live') return null;
  return singular(head.lower);
}

export function changeFacts(
  rest: Token[],
  at: (k: number) => number,
  owner: EntityRef,
  neg: boolean,
  mentionAt: Map<number, EntityMention>,
  before: EntityRef | null,
  carried: boolean,
  emit: Emit,
): boolean {
  const v = rest[0]?.key;
  if (!v) return false;
  // "(I grew up in Sweden and) I still live there": the place of the clause before.
  if (v === 'live' && rest[1]?.key === 'there' && before?.type === 'place') {
    emit(owner, FACT_RELATIONS.livesIn, conceptRef(before.name, 'place'), neg);
    return true;
  }
  // "We celebrated my daughter's seventh birthday": her age now.
  const birthday = rest.findIndex((t, k) => k >= 2 && t.key === 'birthday' && rest[k - 2]?.text === "'s");
  if (birthday > 2 && !neg && ['my', 'our'].includes(rest[birthday - 4]?.key ?? '')) {
    const n = ordinalOf(rest[birthday - 1]!);
    if (n) {
      emit(owner, FACT_RELATIONS.age, conceptRef(String(n), 'quantity'), false, rest[birthday - 3]!.key);
      return true;
    }
  }
  // "(I passed my test and) have a licence now": a clause whose subject carried over, which the cue relations do not see.
  if (carried && !neg && (v === 'have' || v === 'own')) {
    const p = phrase(rest, 1, 3);
    if (p.words.length && !PRONOUNS.has(p.words[0]!.key) && !NUMBER_WORDS.has(p.words[0]!.lower)) {
      emit(owner, FACT_RELATIONS.has, conceptRef(headOf(p.words)), false);
      return true;
    }
  }
  const placeWithin = (from: number, to: number) =>
    [...Array(to - from).keys()].map((k) => mentionAt.get(at(k + from))).find(placeLike);
  // "Ravi has settled in Bangalore", "we live just outside York", "I live near Leeds": where one lives.
  if ((v === 'settl' || v === 'live') && !rest.some((t) => STAY_WORDS.has(t.key))) {
    const home = dwelling(rest, at, mentionAt);
    if (home) emit(owner, FACT_RELATIONS.livesIn, conceptRef(home), neg, DWELLING);
    const place = placeWithin(1, 6);
    if (place) emit(owner, FACT_RELATIONS.livesIn, conceptRef(place.name, 'place'), neg);
    return !!(place || home);
  }
  // "We moved across town last year", "she had to move out", "we moved into a bigger house": the home stated
  // before, place and dwelling, is no longer it.
  if ((v === 'move' || v === 'relocat') && !neg && (!rest[1] || MOVE_ENDS.has(rest[1].key)) && !placeWithin(1, 6)) {
    const into = rest[1]?.key === 'into' || rest[1]?.key === 'to' ? dwelling(rest, at, mentionAt) : null;
    emit(owner, FACT_RELATIONS.livesIn, conceptRef(into ?? ELSEWHERE), false, DWELLING);
    emit(owner, FACT_RELATIONS.livesIn, conceptRef(ELSEWHERE), false);
    return true;
  }
  // "I work on the team as an engineer": the job after "as", whatever stands between.
  if (v === 'work') {
    const as = rest.findIndex((t, k) => k >= 1 && k <= 6 && t.key === 'as');
    if (as > 0 && !rest.slice(1, as).some((t) => t.key === 'for' || t.key === 'at')) {
      const p = phrase(rest, as + 1, 3);
      if (p.words.length && !PRONOUNS.has(p.words[0]!.key)) {
        emit(owner, FACT_RELATIONS.worksAs, concept(p.words), neg);
        // "I work as a pharmacist at Boots": where, too.
        const employer = ['at', 'for', 'with'].includes(rest[p.end]?.key ?? '') && employerAt(p.end + 1, at, mentionAt);
        if (employer) emit(owner, FACT_RELATIONS.worksAt, conceptRef(employer, 'organization'), neg);
        return true;
      }
    }
  }
  // "I work at a call centre", "I don't work at the bakery anymore": a workplace named by its kind.
  const link = v === 'work' ? rest.findIndex((t, k) => k >= 1 && k <= 2 && (t.key === 'at' || t.key === 'in')) : -1;
  if (link > 0 && !mentionAt.get(at(link + 1)) && !mentionAt.get(at(link + 2))) {
    const place = rest.findIndex((t, k) => k > link && k <= link + 4 && WORKPLACES.has(t.key));
    const from = rest.findIndex((t, k) => k > link && !['a', 'an', 'the', 'my', 'our'].includes(t.key));
    if (place > 0 && from <= place && !rest.slice(from, place).some((t) => t.punct)) {
      emit(owner, FACT_RELATIONS.worksAt, concept(rest.slice(from, place + 1)), neg);
      return true;
    }
  }
  // "I started working as an engineer".
  if (['start', 'began', 'begin'].includes(v) && rest[1]?.key === 'work' && rest[2]?.key === 'as') {
    const p = phrase(rest, 3, 3);
    if (p.words.length) {
      emit(owner, FACT_RELATIONS.worksAs, concept(p.words), neg);
      return true;
    }
  }
  // "I deliver for DoorDash": an organisation one works for.
  if (WORK_FOR.has(v) && rest[1]?.key === 'for') {
    const m = mentionAt.get(at(2)) ?? mentionAt.get(at(3));
    // An unknown capitalised name after "for" is taken for a person by the entity rules.
    if (m?.type === 'organization' || (m?.type === 'person' && !GIVEN_NAMES.has(m.name.toLowerCase()))) {
      emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), neg);
      return true;
    }
  }
  // "I like summer better than winter", "I love tea more than coffee" (a word or three between).
  if (['like', 'love', 'enjoy'].includes(v)) {
    const than = rest.findIndex((t, k) => k > 1 && k <= 5 && t.key === 'than');
    if (than > 0 && ['better', 'more'].includes(rest[than - 1]!.key)) {
      preferred([...rest.slice(1, than - 1), rest[than]!, ...rest.slice(than + 1)], owner, neg, emit);
      return true;
    }
  }
  // "I don't have a job", "I have no job": out of work; "I have a job (I enjoy)": not.
  if ((v === 'have' || v === 'got') && !rest.slice(1, 4).some((t) => PRONOUNS.has(t.key))) {
    const none = rest[1]?.key === 'no';
    const job = rest.findIndex((t, k) => k >= 1 && k <= 3 && t.key === 'job');
    if (job > 0 && ['a', 'an', 'no', 'ani'].includes(rest[1]!.key) && !rest.slice(2, job).some((t) => t.punct)) {
      emit(owner, FACT_RELATIONS.worksAs, conceptRef('unemployed'), !(neg || none));
      return true;
    }
  }
  // "I started a part-time job in the fashion department": working (somewhere) ends being out of work.
  if (['start', 'began', 'begin', 'land', 'found', 'find', 'got', 'get', 'took', 'take'].includes(v) && !neg) {
    const job = rest.findIndex((t, k) => k >= 1 && k <= 4 && t.key === 'job');
    if (job > 0 && rest[job + 1]?.key === 'in') {
      const p = phrase(rest, job + 2, 3);
      if (p.words.length) {
        emit(owner, FACT_RELATIONS.worksAt, concept(p.words), false);
        return true;
      }
    }
  }
  return false;
}

/** "I no longer read before bed", "I don't bake anymore": an activity not done, when no other rule read the clause (a denial ends the activity by its head). */
export function notDone(rest: Token[], owner: EntityRef, neg: boolean, emit: Emit, ability = false): void {
  const v = rest[0]?.key;
  if (!v || NOT_ACTIVITIES.has(v) || ADVERBS.has(v) || rest[0]!.capitalized || rest[0]!.punct) return;
  // Affirmed, only a verb in the present with its object ("I speak Spanish now"), which a denial before may have
  // denied; an ability may be a bare verb ("I can drive now", "I learned to swim").
  if (
    !neg &&
    ((!ability && (!rest[1] || rest[1].punct)) ||
      isParticiple(rest[0]) ||
      PAST.has(rest[0]!.lower) ||
      /ing$/.test(rest[0]!.lower))
  )
    return;
  const until = rest.findIndex((t, k) => k > 0 && STOP.has(t.key) && !['the', 'to', 'befor', 'after'].includes(t.key));
  const words = rest.slice(0, until < 0 ? rest.length : until).filter((t) => !AGAIN.has(t.key));
  const activity = activityKey(words.slice(0, 4));
  if (activity) emit(owner, FACT_RELATIONS.does, conceptRef(activity), neg);
}
const PAST = new Set([
  'went',
  'saw',
  'took',
  'came',
  'ate',
  'drank',
  'ran',
  'swam',
  'wrote',
  'read',
  'met',
  'felt',
  'told',
  'said',
  'put',
  'sat',
  'spent',
  'found',
  'gave',
  'bought',
  'thought',
  'brought',
  'caught',
  'taught',
  'kept',
  'slept',
  'won',
  'began',
  'did',
  'was',
  'were',
]);
const AGAIN = new Set(['anymor', 'ani', 'more', 'again', 'now', 'longer', 'these', 'day', 'nowaday']);

/** Verbs that lead an activity one prefers to another ("paint portraits", "watch films"). */
const DOING = new Set([
  'paint',
  'play',
  'watch',
  'read',
  'eat',
  'drink',
  'cook',
  'listen',
  'write',
  'draw',
  'make',
  'go',
]);
const POSSESSIVES = new Set(['my', 'our', 'your', 'his', 'her', 'their']);

/** "(I'd rather) take the train than fly", "(prefer) tea to coffee": the pair is the attribute, the first its value. */
export function preferred(rest: Token[], owner: EntityRef, neg: boolean, emit: Emit, links = ['than']): void {
  const a = phrase(rest, 0);
  const link = rest[a.end];
  if (!a.words.length || !link || !links.includes(link.key)) return;
  const b = phrase(rest, a.end + (link.key === 'instead' ? 2 : 1));
  if (!b.words.length) return;
  // "paint portraits than landscapes": the verb of the first is the second's too.
  const verb = a.words[0]!;
  if (a.words.length > 1 && b.words.length === 1 && (/ing$/.test(verb.lower) || DOING.has(verb.key)))
    b.words.unshift(verb);
  // Heads in the singular: "fantasy movies over thrillers" and "a thriller over a fantasy movie" name one pair.
  // A gerund by its verb: "painting landscapes" and "paint landscapes" name one thing.
  const [x, y] = [a.words, b.words].map((words) =>
    words
      .filter((w) => !POSSESSIVES.has(w.key))
      .map((w) => (/ing$/.test(w.lower) && w.key !== w.lower && w.lower.length > 5 ? w.key : singular(w.lower)))
      .join(' '),
  ) as [string, string];
  if (!x || !y) return;
  emit(owner, FACT_RELATIONS.prefers, conceptRef(x), neg, [x, y].sort().join(' | '));
}

/** A verb token standing for the rules' own verb of a class ("relocated" read as "moved"). */
const asVerb = (t: Token, key: string, lower = key): Token => ({ ...t, key, lower, text: lower });
/** What the rules' verb for each class reads ("emigrated to Canada" as "moved to Canada"). */
const CLASS_VERBS: Partial<Record<VerbClass, [string, string]>> = {
  residence: ['move', 'moved'],
  possession_end: ['sell', 'sold'],
  habit_end: ['quit', 'quit'],
  relationship_end: ['split', 'split'],
};

/**
 * A clause the rules did not read, read by the kind of its verb (word-kinds.ts, from WordNet): a verb of a class
 * stands for the verb the rules know for it ("I emigrated to Canada" as "I moved to Canada", "I auctioned off my
 * cello" as "I sold my cello", "I ceased smoking" as "I quit smoking"); a job or a marriage begun is read here.
 * `read` runs the verb rules on the rewritten clause; returns whether the clause was read.
 */
export function changeByKind(
  rest: Token[],
  at: (k: number) => number,
  owner: EntityRef,
  neg: boolean,
  mentionAt: Map<number, EntityMention>,
  read: (rest: Token[], at: (k: number) => number) => boolean,
  emit: Emit,
): boolean {
  const verb = verbClassAt(rest);
  if (!verb) return false;
  const { kind, span } = verb;
  // The words after the verb phrase, at their places in the text; "abstain from", "parted ways with" drop the link.
  let skip = span;
  if (kind === 'habit_end' && rest[skip]?.key === 'from') skip++;
  if (kind === 'relationship_end' && rest[skip]?.key === 'way') skip++;
  const after = rest.slice(skip);
  const atAfter = (k: number) => at(k === 0 ? 0 : k + skip - 1);
  const link = after.findIndex((t, k) => k <= 3 && ['at', 'with', 'for', 'by', 'from'].includes(t.key));
  const named = (from: number) =>
    [...Array(3).keys()].map((k) => mentionAt.get(atAfter(from + k))).find((m) => m?.type === 'person');
  switch (kind) {
    case 'job_end':
      // "I stepped down from the board", "I was furloughed by Tesco": as resigning from it; without a place, as quitting.
      return read([asVerb(rest[0]!, link >= 0 ? 'resign' : 'quit'), ...after], atAfter);
    case 'job_start': {
      // "I signed on with Acme", "I took up a post at the museum", "I took on a role as a tutor".
      const as = after.findIndex((t, k) => k <= 3 && t.key === 'as');
      if (as >= 0) {
        const p = phrase(after, as + 1, 3);
        if (!p.words.length) return false;
        emit(owner, FACT_RELATIONS.worksAs, concept(p.words), neg);
        return true;
      }
      if (link < 0 || link + 1 >= after.length) return false;
      worksAtAfter(after, link, atAfter, owner, neg, mentionAt, emit);
      return true;
    }
    case 'marriage': {
      // "I married Tom", "we eloped": married (to the person named).
      const person = named(1);
      emit(owner, FACT_RELATIONS.status, conceptRef('married'), neg);
      if (person) emit(owner, FACT_RELATIONS.married, conceptRef(person.name, 'person'), neg);
      return true;
    }
    case 'courtship': {
      const person = named(1);
      if (!person) return false;
      emit(owner, FACT_RELATIONS.partner, conceptRef(person.name, 'person'), neg);
      if (!neg) emit(owner, FACT_RELATIONS.status, conceptRef('dating'), false);
      return true;
    }
    case 'habit_start': {
      // "I took up pottery", "I've resumed running": the activity is done.
      const until = after.findIndex((t, k) => k > 0 && STOP.has(t.key) && !['the', 'to'].includes(t.key));
      const activity = activityKey(after.slice(0, until < 0 ? undefined : until));
      if (!activity || neg) return false;
      emit(owner, FACT_RELATIONS.does, conceptRef(activity), false);
      return true;
    }
    default: {
      const [key, lower] = CLASS_VERBS[kind]!;
      const rewritten = [
        asVerb(rest[0]!, key, lower),
        ...(kind === 'relationship_end' ? [asVerb(rest[0]!, 'up')] : []),
      ];
      const shift = rewritten.length;
      return read([...rewritten, ...after], (k) => (k < shift ? at(0) : atAfter(k - shift + 1)));
    }
  }
}
