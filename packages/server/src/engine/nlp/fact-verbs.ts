// Verb-led statements of the fact rules (facts.ts): habits with a frequency, activities begun, done and stopped,
// jobs begun, lost and left, homes rented, moved into and out of, relationships begun and ended, ages turned,
// preferences, possessions had, counted, bought, replaced and lost. `rest` starts at the verb.
import { STOP_WORDS } from '../stopwords.js';
import type { EntityMention } from './entities.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import {
  activityKey,
  concept,
  conceptRef,
  frequencyIn,
  frequencyStart,
  headOf,
  impliedFrequency,
  isParticiple,
  numberOf,
  phrase,
  singleThing,
  placeLike,
} from './fact-phrases.js';
import { preferred } from './fact-changes.js';
import { copulaFacts } from './fact-statements.js';
import { dating, lostJob, stopped, worksAtAfter } from './fact-predicates.js';
import {
  ACTIVITY_VERBS,
  ADVERBS,
  CHILD_WORDS,
  COMMUTE,
  DISMISSED,
  FOOD_KINDS,
  FIELDS,
  HOMES,
  JOB_STARTS,
  JOB_WORDS,
  LEAVE_VERBS,
  LOSS_VERBS,
  MODES,
  OCCUPATIONS,
  ORDINALS,
  PREFERENCE_LINKS,
  PRONOUNS,
  SACKED,
  STATUS_CHANGES,
  STOP,
  STOP_VERBS,
  TRAITS,
} from './fact-words.js';
import { singular } from './lexicon.js';
import type { Token } from './tokens.js';
import { isKind, nounIs, verbClassAt } from './word-kinds.js';

/** Verbs whose "as" names the job one has from then on. */
const AS_JOB = new Set(['retrain', 'requalifi', 'qualifi', 'start', 'begin', 'began', 'begun']);

export function verbFacts(
  rest: Token[],
  at: (k: number) => number,
  owner: EntityRef,
  neg: boolean,
  mentionAt: Map<number, EntityMention>,
  before: EntityRef | null,
  emit: Emit,
): void {
  const verb = rest[0];
  if (!verb) return;
  const v = verb.key;
  // Habits: an activity with a frequency or a time of day; one value per activity and dimension.
  const f = frequencyIn(rest);
  if (f) {
    const start = frequencyStart(rest, f);
    const words = rest.slice(0, start);
    const toIdx = words.findIndex((w, k) => w.key === 'to' && COMMUTE.has(words[k + 1]?.key ?? ''));
    if (toIdx >= 0) {
      const mode = words
        .slice(0, toIdx)
        .map((w) => MODES[w.key])
        .find(Boolean);
      if (mode) emit(owner, FACT_RELATIONS.habit, conceptRef(mode), neg, `commute to ${words[toIdx + 1]!.key}`);
      return;
    }
    const activity = activityKey(words);
    if (!activity) return;
    emit(owner, FACT_RELATIONS.does, conceptRef(activity), neg);
    if (neg) return;
    emit(owner, FACT_RELATIONS.habit, conceptRef(f.value), false, `${activity} | ${f.dimension}`);
    // "every Sunday" is also once a week, "every morning" once a day: a new frequency changes either.
    const implied = impliedFrequency(rest, f);
    if (implied) emit(owner, FACT_RELATIONS.habit, conceptRef(implied), false, `${activity} | frequency`);
    return;
  }
  // "I started eating meat again", "I've begun running": the activity is done (again).
  if ((v === 'start' || v === 'began' || v === 'begin') && rest[1] && /ing$/.test(rest[1].lower)) {
    if (rest[1].key === 'date' || rest[1].key === 'see') {
      dating(rest.slice(1), (k) => at(k + 1), owner, neg, mentionAt, emit);
      return;
    }
    const until = rest.findIndex((t, k) => k > 1 && STOP.has(t.key) && !['the', 'to'].includes(t.key));
    const activity = activityKey(rest.slice(1, until < 0 ? undefined : until));
    if (activity) emit(owner, FACT_RELATIONS.does, conceptRef(activity), neg);
    // "I started eating salmon", "I've started having a glass of wine": fish eaten, alcohol drunk.
    const kind = consumedKind(rest[1].key, rest.slice(2));
    if (kind && !neg) emit(owner, FACT_RELATIONS.does, conceptRef(kind), false);
    return;
  }
  // "I've gone vegetarian", "we went vegan", "he turned vegan": a trait taken up.
  if ((v === 'go' || v === 'turn') && rest[1] && TRAITS.has(rest[1].lower)) {
    emit(owner, FACT_RELATIONS.is, conceptRef(rest[1].lower), neg);
    return;
  }
  // "I became a principal", "(gave up law and) became a teacher", "I've become a morning person".
  if (v === 'becam' || v === 'becom' || v === 'became' || v === 'become') {
    copulaFacts(rest.slice(1), (k) => at(k + 1), owner, neg, mentionAt, before, emit);
    return;
  }
  // "I handed in my notice at IKEA", "I resigned from the library": no longer works there.
  if (v === 'resign' || (v === 'hand' && rest.slice(1, 4).some((t) => t.key === 'notic'))) {
    const k = rest.findIndex((t, j) => j > 0 && j <= 5 && ['at', 'from', 'with'].includes(t.key));
    if (k > 0) {
      const m = mentionAt.get(at(k + 1)) ?? mentionAt.get(at(k + 2));
      if (m && m.type !== 'place' && m.type !== 'date')
        emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), !neg);
      else {
        const p = phrase(rest, k + 1, 3);
        if (p.words.length && !PRONOUNS.has(p.words[0]!.key))
          emit(owner, FACT_RELATIONS.worksAt, concept(p.words), !neg);
      }
    }
    return;
  }
  // "We rent a flat in Leeds", "I'm renting an apartment in Lyon": where one lives.
  // "We rent a flat in Leeds", "I got my own place in Sheffield", "we bought a house in Nice".
  if (
    ['rent', 'get', 'got', 'buy', 'bought', 'found', 'find', 'share', 'own', 'have'].includes(v) &&
    rest.slice(1, 4).some((t) => HOMES.has(t.key))
  ) {
    const place = [...Array(6).keys()].map((k) => mentionAt.get(at(k + 2))).find((m) => m?.type === 'place');
    if (place) emit(owner, FACT_RELATIONS.livesIn, conceptRef(place.name, 'place'), neg);
    return;
  }
  // "(We bought a house in Nice and) moved there": the place of the clause before.
  if ((v === 'move' || v === 'relocat') && rest[1]?.key === 'there' && before?.type === 'place') {
    emit(owner, FACT_RELATIONS.livesIn, conceptRef(before.name, 'place'), neg);
    return;
  }
  // "We had a baby", "I had a son last year": the subject has children.
  if (
    (v === 'had' || v === 'have') &&
    (rest[1]?.lower === 'a' || rest[1]?.key === 'our' || rest[1]?.key === 'my') &&
    rest[2] &&
    ['babi', 'son', 'daughter', 'boy', 'girl'].includes(rest[2].key) &&
    (v === 'had' || isParticiple(rest[0]))
  ) {
    emit(owner, FACT_RELATIONS.children, conceptRef('children'), neg);
    return;
  }
  // "I got laid off from Barclays", "I got fired by Tesco", "I got promoted to manager".
  const jobChange = rest[1] ? verbClassAt(rest, 1)?.kind : undefined;
  if (
    (v === 'got' || v === 'get') &&
    rest[1] &&
    (DISMISSED.has(rest[1].key) || rest[1].key === 'promot' || jobChange === 'job_start' || jobChange === 'job_end')
  ) {
    copulaFacts(rest.slice(1), (k) => at(k + 1), owner, neg, mentionAt, before, emit);
    return;
  }
  // "I got the sack from Tesco": as "fired".
  if ((v === 'got' || v === 'get') && rest[1]?.key === 'the' && SACKED.has(rest[2]?.key ?? '')) {
    copulaFacts(
      [{ ...rest[2]!, key: 'fire' }, ...rest.slice(3)],
      (k) => at(k + 2),
      owner,
      neg,
      mentionAt,
      before,
      emit,
    );
    return;
  }
  // "I teach at a primary school": a teacher, working there.
  if (v === 'teach') {
    emit(owner, FACT_RELATIONS.worksAs, conceptRef('teacher'), neg);
    if (rest[1]?.key === 'at') worksAtAfter(rest, 1, at, owner, neg, mentionAt, emit);
    return;
  }
  // "I run my own bakery", "I started my own business": one's own business is one's work.
  if (
    ['run', 'start', 'open', 'own'].includes(v) &&
    ['my', 'our'].includes(rest[1]?.key ?? '') &&
    rest[2]?.key === 'own'
  ) {
    emit(owner, FACT_RELATIONS.worksAs, conceptRef('business owner'), neg);
    return;
  }
  // "I earn my living as a photographer", "I make a living from gaming".
  if ((v === 'earn' || v === 'make') && rest[2]?.key === 'live' && ['my', 'a', 'our'].includes(rest[1]?.key ?? '')) {
    const link = rest[3]?.key;
    const p = phrase(rest, 4, 3);
    if (link === 'as' && p.words.length) emit(owner, FACT_RELATIONS.worksAs, concept(p.words), neg);
    else if ((link === 'from' || link === 'by' || link === 'off') && p.words.length)
      emit(owner, FACT_RELATIONS.worksAs, conceptRef(activityKey(p.words)), neg);
    return;
  }
  // "I call Denver home".
  if (v === 'call' && rest.slice(2, 6).some((t) => t.key === 'home')) {
    const m = mentionAt.get(at(1));
    if (m?.type === 'place') emit(owner, FACT_RELATIONS.livesIn, conceptRef(m.name, 'place'), neg);
    return;
  }
  // "(We moved out of Bristol and) now live in Bath": a clause whose subject carried over, which the cues do not see.
  if (v === 'live' && rest[1]?.key === 'in') {
    const place = [...Array(6).keys()].map((k) => mentionAt.get(at(k + 2))).find((m) => m?.type === 'place');
    if (place) emit(owner, FACT_RELATIONS.livesIn, conceptRef(place.name, 'place'), neg);
    return;
  }
  // "We moved out of Bristol", "I moved away from Leeds": no longer lives there.
  if ((v === 'move' || v === 'relocat') && (rest[1]?.key === 'out' || rest[1]?.key === 'away')) {
    const place = [...Array(4).keys()].map((k) => mentionAt.get(at(k + 2))).find(placeLike);
    if (place) emit(owner, FACT_RELATIONS.livesIn, conceptRef(place.name, 'place'), true);
    return;
  }
  // "I take the bus to work now", "I walk to school": how one commutes, without a frequency.
  const toCommute = rest.findIndex((w, k) => k <= 4 && w.key === 'to' && COMMUTE.has(rest[k + 1]?.key ?? ''));
  if (toCommute > 0) {
    const mode = rest
      .slice(0, toCommute)
      .map((w) => MODES[w.key])
      .find(Boolean);
    if (mode) {
      emit(owner, FACT_RELATIONS.habit, conceptRef(mode), neg, `commute to ${rest[toCommute + 1]!.key}`);
      return;
    }
  }
  // "Sam retired last year": a work situation, like "I'm retired".
  if (v === 'retir') {
    emit(owner, FACT_RELATIONS.worksAs, conceptRef('retired'), neg);
    return;
  }
  // "I got married (to Tom)", "Elena and I got divorced", "we got engaged": a change of relationship status.
  if ((v === 'got' || v === 'get') && rest[1] && STATUS_CHANGES[rest[1].key]) {
    const status = STATUS_CHANGES[rest[1].key]!;
    emit(owner, FACT_RELATIONS.status, conceptRef(status), neg);
    const named = rest[2]?.key === 'to' || rest[2]?.key === 'with' ? mentionAt.get(at(3)) : undefined;
    const person = named?.type === 'person' ? named.name : before?.type === 'person' ? before.name : null;
    if (person && (status === 'divorced' || status === 'separated'))
      emit(owner, FACT_RELATIONS.married, conceptRef(person, 'person'), true);
    else if (named?.type === 'person' && status === 'married')
      emit(owner, FACT_RELATIONS.married, conceptRef(named.name, 'person'), neg);
    else if (named?.type === 'person' && status === 'engaged')
      emit(owner, FACT_RELATIONS.partner, conceptRef(named.name, 'person'), neg);
    return;
  }
  // "We called off the engagement", "I broke off our engagement".
  if (
    ['call', 'broke', 'break', 'cancel'].includes(v) &&
    rest.slice(1, 5).some((t) => t.key === 'engag' || t.key === 'wed')
  ) {
    emit(owner, FACT_RELATIONS.status, conceptRef('engaged'), true);
    return;
  }
  // "(We packed up and) moved to Leeds", "I've just moved into a house in Edinburgh": where the subject lives.
  if ((v === 'move' || v === 'relocat') && ['to', 'into', 'back', 'in'].includes(rest[1]?.key ?? '')) {
    const place = [...Array(6).keys()].map((k) => mentionAt.get(at(k + 2))).find(placeLike);
    if (place) {
      emit(owner, FACT_RELATIONS.livesIn, conceptRef(place.name, 'place'), neg);
      return;
    }
  }
  // "I retrained as a paramedic", "she qualified as a nurse", "I was taken on as a chef": the job now.
  if ((AS_JOB.has(v) || verbClassAt(rest)?.kind === 'job_start') && rest[1]?.key === 'as') {
    const p = phrase(rest, 2, 3);
    const last = p.words[p.words.length - 1];
    if (last && (OCCUPATIONS.has(last.lower) || nounIs(last.lower, 'occupation')))
      emit(owner, FACT_RELATIONS.worksAs, concept(p.words), neg);
    return;
  }
  // "I've moved on to BP": a named employer moved on to (a place so named is a home, read elsewhere).
  if (v === 'move' && rest[1]?.key === 'on' && rest[2]?.key === 'to') {
    const m = mentionAt.get(at(3));
    if (m && (m.type === 'organization' || (m.type === 'place' && !nounIs(m.name.toLowerCase(), 'place'))))
      emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), neg);
    return;
  }
  // "I started a new job at Bosch", "I took a position with the council", "she landed a role as a designer".
  if (JOB_STARTS.has(v)) {
    const job = rest.findIndex((t, k) => k > 0 && k <= 4 && JOB_WORDS.has(t.key));
    const link = job > 0 ? rest[job + 1]?.key : undefined;
    if (link === 'at' || link === 'with' || link === 'for') {
      const m = mentionAt.get(at(job + 2)) ?? mentionAt.get(at(job + 3));
      if (m?.type === 'organization') emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), neg);
      else {
        const p = phrase(rest, job + 2, 3);
        if (p.words.length && !PRONOUNS.has(p.words[0]!.key))
          emit(owner, FACT_RELATIONS.worksAt, concept(p.words), neg);
      }
      return;
    }
    if (link === 'as') {
      const p = phrase(rest, job + 2, 3);
      if (p.words.length) emit(owner, FACT_RELATIONS.worksAs, concept(p.words), neg);
      return;
    }
  }
  // "(Ana quit the Red Cross and) joined UNICEF": an organisation joined is where one works (a club or a gym is not named one).
  if (v === 'join') {
    const m = mentionAt.get(at(1)) ?? mentionAt.get(at(2));
    if (m?.type === 'organization') emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), neg);
    return;
  }
  // Ages and birth years.
  if (v === 'turn' || v === 'turned') {
    const n = numberOf(rest[1]);
    if (n !== null && n > 0 && n < 130) emit(owner, FACT_RELATIONS.age, conceptRef(String(n), 'quantity'), neg);
    return;
  }
  if (v === 'born' && rest[1]?.lower === 'in' && /^(19|20)\d\d$/.test(rest[2]?.text ?? '')) {
    emit(owner, FACT_RELATIONS.birthYear, conceptRef(rest[2]!.text, 'date'), neg);
    return;
  }
  // Preferences of one thing over another: the pair is the attribute, the preferred one its value.
  if (v === 'prefer') {
    preferred(rest.slice(1), owner, neg, emit, PREFERENCE_LINKS);
    return;
  }
  // Relationships.
  if ((v === 'date' || v === 'see') && mentionAt.get(at(1))?.type === 'person') {
    emit(owner, FACT_RELATIONS.partner, conceptRef(mentionAt.get(at(1))!.name, 'person'), neg);
    if (!neg) emit(owner, FACT_RELATIONS.status, conceptRef('dating'), false);
    return;
  }
  if ((v === 'broke' || v === 'break' || v === 'split') && rest[1]?.key === 'up') {
    // "I broke up with Leo"; "Leo and I split up" (the person is the clause before).
    const person =
      rest[2]?.key === 'with'
        ? mentionAt.get(at(3))
        : before?.type === 'person'
          ? { name: before.name, type: 'person' }
          : undefined;
    if (person?.type === 'person') {
      emit(owner, FACT_RELATIONS.partner, conceptRef(person.name, 'person'), true);
      emit(owner, FACT_RELATIONS.married, conceptRef(person.name, 'person'), true);
    }
    return;
  }
  if (v === 'divorc' && mentionAt.get(at(1))?.type === 'person') {
    emit(owner, FACT_RELATIONS.married, conceptRef(mentionAt.get(at(1))!.name, 'person'), true);
    emit(owner, FACT_RELATIONS.status, conceptRef('divorced'), false);
    return;
  }
  // Children: "I have two kids", "I have a son", "I have no kids", "I don't have any children".
  if (v === 'have' || v === 'got') {
    let j = 1;
    let none = false;
    if (rest[j]?.key === 'no') {
      none = true;
      j++;
    }
    const article = rest[j]?.lower === 'a' || rest[j]?.lower === 'an';
    const count = rest[j]?.key === 'ani' ? null : article ? 1 : numberOf(rest[j]);
    const k = rest[j]?.key === 'ani' || count !== null ? j + 1 : j;
    if (
      rest[k] &&
      CHILD_WORDS.has(rest[k]!.key) &&
      !rest.slice(k + 1, k + 3).some((t) => t.key === 'name' || mentionAt.has(at(t === rest[k + 1] ? k + 1 : k + 2)))
    ) {
      const denied = neg || none;
      emit(owner, FACT_RELATIONS.children, conceptRef('children'), denied);
      if (
        !denied &&
        count !== null &&
        !article &&
        (rest[k]!.key === 'kid' || rest[k]!.key === 'child' || rest[k]!.key === 'children')
      ) {
        emit(owner, FACT_RELATIONS.childCount, conceptRef(String(count), 'quantity'), false);
      }
      return;
    }
  }
  // Possessions: what is had (named: "a cat named Luna") and what is lost ("I sold my piano").
  if ((v === 'got' || v === 'get') && rest[1]?.key === 'rid') {
    const p = phrase(rest, 3, 3);
    if (p.words.length && !PRONOUNS.has(p.words[0]!.key))
      emit(owner, FACT_RELATIONS.has, conceptRef(headOf(p.words)), true);
    return;
  }
  if (
    v === 'have' ||
    v === 'own' ||
    v === 'got' ||
    v === 'get' ||
    v === 'adopt' ||
    v === 'bought' ||
    v === 'buy' ||
    v === 'drive' ||
    v === 'use'
  ) {
    const p = phrase(rest, 1, 3);
    if (!p.words.length || PRONOUNS.has(p.words[0]!.key)) return;
    const thing = headOf(p.words);
    // How many of a kind: "I have three cats", "we adopted a fourth cat" (one count per kind).
    const counted = numberOf(p.words[0]) ?? ORDINALS[p.words[0]!.lower];
    if (!neg && p.words.length >= 2 && counted !== undefined && counted !== null && counted > 1)
      emit(owner, FACT_RELATIONS.count, conceptRef(String(counted), 'quantity'), false, singular(thing));
    // "I bought a car": had now (a plain "I have a dog" is the cue relation's, extract.ts).
    if (['buy', 'bought', 'get', 'got', 'adopt'].includes(v) && !neg)
      emit(owner, FACT_RELATIONS.has, conceptRef(thing), false);
    // Here only its loss and a name it goes by.
    if (v === 'have' || v === 'own' || v === 'adopt' || v === 'got' || v === 'get') {
      if (neg) emit(owner, FACT_RELATIONS.has, conceptRef(thing), true);
      // "a cat named Luna", "a goldfish called Bubbles" (a name the entity rules may not know).
      const naming = rest[p.end]?.key === 'name' || rest[p.end]?.key === 'call';
      const named = naming
        ? (mentionAt.get(at(p.end + 1))?.name ?? (rest[p.end + 1]?.capitalized ? rest[p.end + 1]!.text : null))
        : null;
      // The name is had as its kind (the aspect), so that losing Luna is losing the cat.
      if (named) emit(owner, FACT_RELATIONS.has, conceptRef(named.toLowerCase()), neg, thing);
    }
    const single = singleThing(p.words, v === 'drive');
    if (single && !neg) emit(owner, single.relation, conceptRef(single.value), false);
    return;
  }
  if (
    v === 'switch' ||
    v === 'swap' ||
    v === 'chang' ||
    v === 'upgrad' ||
    v === 'move' ||
    v === 'trade' ||
    v === 'exchang'
  ) {
    const to = rest.findIndex((t) => t.key === 'to' || t.key === 'for');
    if (to > 0) {
      const p = phrase(rest, to + 1, 3);
      const single = singleThing(p.words, false);
      if (single) {
        emit(owner, single.relation, conceptRef(single.value), false);
        return;
      }
    }
  }
  // "I replaced the Ford with a Toyota": the old one is gone, the new one is had.
  if (v === 'replac') {
    const withAt = rest.findIndex((t, k) => k > 1 && t.key === 'with');
    const p = phrase(rest, 1, 3);
    if (p.words.length && !PRONOUNS.has(p.words[0]!.key)) {
      emit(owner, FACT_RELATIONS.has, conceptRef(headOf(p.words)), true);
      if (withAt > 0) {
        const single = singleThing(phrase(rest, withAt + 1, 3).words, true);
        if (single) emit(owner, single.relation, conceptRef(single.value), false);
      }
    }
    return;
  }
  // "I gave up pilates": an activity stopped (a thing given up is no longer had, below).
  if ((v === 'gave' || v === 'give') && rest[1]?.key === 'up' && rest[2] && !/ing$/.test(rest[2].lower)) {
    const p = phrase(rest, 2, 3);
    if (p.words.length && !PRONOUNS.has(p.words[0]!.key) && !FIELDS[p.words[0]!.key])
      emit(owner, FACT_RELATIONS.does, conceptRef(activityKey(p.words)), true);
  }
  // "We had to put our cat down", "put him to sleep": a pet is gone.
  if (
    v === 'put' &&
    (rest.slice(2, 5).some((t) => t.key === 'down') || rest.slice(2, 6).some((t) => t.key === 'sleep'))
  ) {
    const end = rest.findIndex((t, k) => k > 1 && (t.key === 'down' || t.key === 'to'));
    const p = phrase(rest.slice(0, end), 1, 3);
    if (p.words.length && !PRONOUNS.has(p.words[0]!.key))
      emit(owner, FACT_RELATIONS.has, conceptRef(headOf(p.words)), true);
    return;
  }
  if ((v === 'gave' || v === 'give') && rest[1]?.key === 'up' && /ing$/.test(rest[2]?.lower ?? ''))
    return stopped(rest, owner, emit);
  if (LOSS_VERBS.has(v) || (v === 'got' && rest[1]?.key === 'rid')) {
    // A particle before or after the thing: "traded in my car", "gave my bike away", "sold off the boat".
    const from = v === 'got' ? 3 : PARTICLES.has(rest[1]?.key ?? '') ? 2 : 1;
    const p = phrase(rest, from, 3);
    while (p.words.length > 1 && PARTICLES.has(p.words[p.words.length - 1]!.key)) p.words.pop();
    if (p.words.length && !PRONOUNS.has(p.words[0]!.key) && numberOf(p.words[0]) === null) {
      if (rest[from - 1]?.key === 'job' || p.words[0]?.key === 'job') return lostJob(rest, at, owner, mentionAt, emit);
      emit(owner, FACT_RELATIONS.has, conceptRef(headOf(p.words)), true);
    }
    if (v === 'lost' || v === 'lose') lostJob(rest, at, owner, mentionAt, emit);
    return;
  }
  // "I quit teaching to become a nurse", "she stopped acting to become a director": the new work.
  const become = rest.findIndex(
    (t, k) => k > 1 && (t.key === 'becom' || t.key === 'become') && rest[k - 1]?.key === 'to',
  );
  if ((LEAVE_VERBS.has(v) || STOP_VERBS.has(v)) && become > 0)
    copulaFacts(rest.slice(become + 1), (k) => at(k + become + 1), owner, neg, mentionAt, before, emit);
  // Leaving a job or a home: "I left Google", "I left the law firm", "I left Paris".
  if (LEAVE_VERBS.has(v) || (v === 'gave' && rest[1]?.key === 'up')) {
    // "I left nursing (to become a midwife)", "gave up law": the work of that field has ended.
    const field = FIELDS[rest[v === 'gave' ? 2 : 1]?.key ?? ''];
    if (field) {
      emit(owner, FACT_RELATIONS.worksAs, conceptRef(field), true);
      const become = rest.findIndex((t) => t.key === 'becom' || t.key === 'become');
      if (become > 0)
        copulaFacts(rest.slice(become + 1), (k) => at(k + become + 1), owner, neg, mentionAt, before, emit);
      return;
    }
    if (v === 'gave') return stopped(rest, owner, emit);
    let j = 1;
    // "I quit my barista job": that work has ended.
    const jobAt = rest.findIndex((t, k) => k >= 3 && k <= 4 && t.key === 'job');
    if (rest[1]?.key === 'my' && jobAt > 0) {
      emit(owner, FACT_RELATIONS.worksAs, concept(rest.slice(2, jobAt)), true);
      return;
    }
    if (rest[j]?.key === 'my' && rest[j + 1]?.key === 'job') {
      j += 2;
      // "I quit my job (last week)": out of work, whatever the employer was.
      if (!rest.slice(j, j + 3).some((t) => ['at', 'with', 'as', 'to'].includes(t.key)) && !neg)
        return void emit(owner, FACT_RELATIONS.worksAs, conceptRef('unemployed'), false);
    }
    if (rest[j]?.key === 'at' || rest[j]?.key === 'with') j++;
    const m = mentionAt.get(at(j)) ?? mentionAt.get(at(j + 1));
    // A name the entity rules could not type ("I left Siemens", "I quit Globex") is a home or a workplace left: the
    // denial ends whichever was stated; one quits a job, never a town.
    if (placeLike(m) && (m!.type === 'place' || v !== 'quit'))
      emit(owner, FACT_RELATIONS.livesIn, conceptRef(m!.name, 'place'), true);
    if (placeLike(m) && m!.type !== 'place')
      emit(owner, FACT_RELATIONS.worksAt, conceptRef(m!.name, 'organization'), true);
    if (placeLike(m)) return;
    if (m?.type === 'organization') emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), true);
    else if (rest[j] && rest[j]!.key !== 'job') {
      const p = phrase(rest, j, 3);
      if (p.words.length && !PRONOUNS.has(p.words[0]!.key) && !ADVERBS.has(p.words[0]!.key)) {
        if (STOP_VERBS.has(v) && /ing$/.test(p.words[0]!.lower)) {
          emit(owner, FACT_RELATIONS.does, conceptRef(activityKey(rest.slice(j, p.end))), true);
        } else {
          emit(owner, FACT_RELATIONS.worksAt, concept(p.words), true);
          // "I quit tennis": a place of work or an activity; the denial ends whichever was stated.
          if (STOP_VERBS.has(v)) emit(owner, FACT_RELATIONS.does, conceptRef(activityKey(p.words)), true);
        }
      }
    }
    return;
  }
  if (v === 'lost' || v === 'lose') return lostJob(rest, at, owner, mentionAt, emit);
  // "I stopped going to the gym", "I gave up smoking".
  if (STOP_VERBS.has(v)) return stopped(rest, owner, emit);
  // "I do pilates", "I play tennis", "I've been going to choir": an activity done (many-valued: only its denial conflicts).
  if (ACTIVITY_VERBS.has(v)) {
    const from = v === 'go' && rest[1]?.key === 'to' ? 2 : 1;
    const place = mentionAt.get(at(from)) ?? mentionAt.get(at(from + 1));
    if (place && place.type !== 'organization') return;
    const until = rest.findIndex((t, k) => k >= from && STOP.has(t.key) && !['the', 'to'].includes(t.key));
    const words = rest.slice(from, until < 0 ? undefined : until);
    if (words.length && !PRONOUNS.has(words[0]!.key) && !(v === 'go' && from === 1 && !/ing$/.test(words[0]!.lower))) {
      const activity = activityKey(words);
      if (activity) emit(owner, FACT_RELATIONS.does, conceptRef(activity), neg);
    }
    return;
  }
  // A bare habit stated as a present-tense verb with its object ("I smoke", "I don't drink", "I eat meat").
  if (['smoke', 'drink', 'eat', 'meditat', 'vape', 'gambl'].includes(v)) {
    // "I drink a lot of water", "lots of tea": the amount is no object.
    const amount = rest.findIndex((t, k) => k >= 1 && k <= 3 && t.key === 'of' && AMOUNTS.has(rest[k - 1]!.key));
    const p = phrase(rest, amount > 0 ? amount + 1 : 1, 2);
    const activity = activityKey([verb, ...p.words]);
    emit(owner, FACT_RELATIONS.does, conceptRef(activity), neg);
    // "I drink wine now" is drinking, which "I don't drink" denied (eating is not a habit one gives up; "I drink
    // water" is no drinking of that sense).
    const kind = consumedKind(v, p.words);
    if (!neg && v !== 'eat' && activity !== v && (v !== 'drink' || kind))
      emit(owner, FACT_RELATIONS.does, conceptRef(v), false);
    // "I eat chicken now" is eating meat, which a vegetarian does not; "I drink wine" drinking alcohol.
    if (kind && !neg) emit(owner, FACT_RELATIONS.does, conceptRef(kind), false);
  }
}

const AMOUNTS = new Set(['lot', 'lots', 'plenti', 'ton', 'tons', 'load', 'loads', 'bunch']);
/** Containers a drink is had in ("a glass of wine", "a pint of beer"). */
const SERVINGS = new Set(['glass', 'pint', 'bottl', 'can', 'cup', 'shot', 'drink']);

/**
 * The kind of diet or abstinence a verb and its object state, as the activity that denies it names it: "eat chicken"
 * is "eat meat", "eat salmon" "eat fish", "drink wine" and "have a glass of wine" "drink alcohol".
 */
function consumedKind(verb: string, words: Token[]): string | undefined {
  const heads = words.filter((w) => !w.punct && !STOP.has(w.key) && !STOP_WORDS.has(w.lower));
  const thing = singular(heads.find((w, k) => !SERVINGS.has(w.key) || k === heads.length - 1)?.lower ?? '');
  if (!thing) return undefined;
  if (verb === 'eat') {
    const kind = FOOD_KINDS[thing] ?? (['meat', 'dairy', 'fish'] as const).find((k) => isKind(thing, k));
    return kind && `eat ${kind}`;
  }
  const served = verb === 'have' && words.some((w) => SERVINGS.has(w.key));
  if ((verb === 'drink' || served) && isKind(thing, 'alcohol')) return 'drink alcohol';
  return undefined;
}
/** Particles of a phrasal verb of loss, on either side of its object. */
const PARTICLES = new Set(['away', 'in', 'off', 'out', 'up']);
