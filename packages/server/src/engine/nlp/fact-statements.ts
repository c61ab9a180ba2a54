// Statement forms of the fact rules (facts.ts) that stand on their own: a copula, a possessive attribute,
// a favourite stated backwards, a home, a preference (dating, a stopped habit, a lost job and employers: fact-predicates.ts).
import type { EntityMention } from './entities.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import {
  concept,
  conceptRef,
  dayOfYear,
  endedState,
  ownBirthdayAge,
  phrase,
  placeLike,
  singleThing,
  spelledNumber,
  type Subject,
} from './fact-phrases.js';
import {
  ADVERBS,
  ATTRIBUTES,
  DEATH_VERBS,
  DETERMINERS,
  DISMISSED,
  HABIT_AGENTS,
  INTENSIFIERS,
  LEADING,
  NEGATORS,
  NOT_A_KIND,
  NOT_AGE,
  OCCUPATIONS,
  PARTNERS,
  PERSON_NOUNS,
  PRONOUNS,
  SPOUSES,
  STATUS,
  STAY_WORDS,
  STOP,
  TRAITS,
  unitOf,
  WORK_STATES,
  WORKPLACES,
} from './fact-words.js';
import { favoriteKind, GIVEN_NAMES } from './lexicon.js';
import type { Token } from './tokens.js';
import { nounIs, verbClassAt } from './word-kinds.js';
import { dating, employerAt } from './fact-predicates.js';

/** "I'm 30", "I'm a nurse", "I'm not vegetarian", "I'm married to Tom", "I'm at Deloitte", "I'm retired". */
export function copulaFacts(
  rest: Token[],
  at: (k: number) => number,
  owner: EntityRef,
  neg: boolean,
  mentionAt: Map<number, EntityMention>,
  before: EntityRef | null,
  emit: Emit,
): void {
  const first = rest[0];
  if (!first) return;
  const age = ageAt(rest, false);
  if (age !== undefined) {
    if (age !== null) emit(owner, FACT_RELATIONS.age, conceptRef(String(age), 'quantity'), neg);
    return;
  }
  if (first.key === 'born' && rest[1]?.lower === 'in' && /^(19|20)\d\d$/.test(rest[2]?.text ?? '')) {
    emit(owner, FACT_RELATIONS.birthYear, conceptRef(rest[2]!.text, 'date'), neg);
    return;
  }
  // "I was born on 2 May", "born on the 12th of May": the birthday (a year alone is the birth year).
  if (first.key === 'born' && rest[1]?.lower === 'on') {
    const day = dayOfYear(rest.slice(2, 7));
    if (day) emit(owner, FACT_RELATIONS.birthday, conceptRef(day), neg);
    return;
  }
  // "I'm not with my boyfriend anymore": the partner is no longer had.
  if (first.key === 'with' && ['my', 'our'].includes(rest[1]?.key ?? '') && PARTNERS.has(rest[2]?.key ?? '')) {
    emit(owner, FACT_RELATIONS.has, conceptRef(rest[2]!.key), neg);
    // "I've been with my girlfriend Sofia for two years": Sofia is the partner.
    const named = mentionAt.get(at(3));
    if (named?.type === 'person') emit(owner, FACT_RELATIONS.partner, conceptRef(named.name, 'person'), neg);
    return;
  }
  // "We're together now": a couple (the end user speaking of "we").
  if (
    first.key === 'togeth' &&
    (rest.length <= 3 || rest.slice(1).every((t) => TOGETHER_SINCE.has(t.key) || /^\d/.test(t.text)))
  ) {
    emit(owner, FACT_RELATIONS.status, conceptRef(neg ? 'single' : 'dating'), false);
    return;
  }
  // "These days I'm in Glasgow": where one lives, unless a stay ("in Rome for a week", "on a trip").
  // "I'm back home in Osaka now".
  // "she's out in Tacoma these days": "out" only with a word of now, else an outing ("out in London tonight").
  const out =
    rest[0]?.key === 'out' && rest.some((t, k) => t.key === 'now' || (t.key === 'these' && rest[k + 1]?.key === 'day'));
  const home = rest.findIndex((t) => t.key !== 'back' && t.key !== 'home' && !(out && t.key === 'out'));
  if (rest[home]?.key === 'in' && !rest.some((t) => STAY_WORDS.has(t.key))) {
    const place = mentionAt.get(at(home + 1)) ?? mentionAt.get(at(home + 2));
    if (placeLike(place)) {
      emit(owner, FACT_RELATIONS.livesIn, conceptRef(place!.name, 'place'), neg);
      return;
    }
  }
  // "I'm in a relationship (with Jess)".
  if (first.key === 'in' && rest[2]?.key === 'relationship') {
    emit(owner, FACT_RELATIONS.status, conceptRef('dating'), neg);
    const person = rest[3]?.key === 'with' ? mentionAt.get(at(4)) : undefined;
    if (person?.type === 'person') emit(owner, FACT_RELATIONS.partner, conceptRef(person.name, 'person'), neg);
    return;
  }
  // "I'm (not) a (big) fan of sushi".
  const fan = rest.findIndex((t, k) => k <= 3 && t.key === 'fan');
  if (fan > 0 && (first.key === 'a' || first.key === 'an') && rest[fan + 1]?.key === 'of') {
    const p = phrase(rest, fan + 2, 3);
    if (p.words.length && !PRONOUNS.has(p.words[0]!.key)) emit(owner, FACT_RELATIONS.likes, concept(p.words), neg);
    return;
  }
  // "I'm living with my parents in Leeds".
  if (first.key === 'live' && /ing$/.test(first.lower)) {
    const place = [...Array(6).keys()].map((k) => mentionAt.get(at(k + 1))).find((m) => m?.type === 'place');
    if (place) emit(owner, FACT_RELATIONS.livesIn, conceptRef(place.name, 'place'), neg);
    return;
  }
  // "I'm between jobs".
  if (first.key === 'between' && rest[1]?.key === 'job') {
    emit(owner, FACT_RELATIONS.worksAs, conceptRef('unemployed'), neg);
    return;
  }
  // "I'm out of work", "out of a job".
  if (
    first.key === 'out' &&
    rest[1]?.key === 'of' &&
    ['work', 'job'].includes((rest[2]?.key === 'a' ? rest[3] : rest[2])?.key ?? '')
  ) {
    emit(owner, FACT_RELATIONS.worksAs, conceptRef('unemployed'), neg);
    return;
  }
  // "I was promoted to finance director": the new job.
  if (first.key === 'promot' && rest[1]?.key === 'to') {
    const p = phrase(rest, 2, 3);
    if (p.words.length) emit(owner, FACT_RELATIONS.worksAs, concept(p.words), neg);
    return;
  }
  if (first.key === 'at' || first.key === 'with') {
    const m = mentionAt.get(at(1));
    // An unknown capitalised name after "at" is taken for a person by the entity rules ("I'm at Accenture").
    if (
      m?.type === 'organization' ||
      (first.key === 'at' && m?.type === 'person' && m.last - m.first === 1 && !GIVEN_NAMES.has(m.name.toLowerCase()))
    )
      emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), neg);
    return;
  }
  // "Mike is employed at Tesco"; "I was fired from Tesco", "I was laid off by Tesco"; any verb of hiring or of
  // dismissal by its class ("I was recruited by Acme", "I got furloughed").
  const hiring = WORK_STATES.has(first.lower) ? undefined : verbClassAt(rest)?.kind;
  if (first.key === 'employ' || DISMISSED.has(first.key) || hiring === 'job_start' || hiring === 'job_end') {
    const k = rest.findIndex((t, j) => j > 0 && j <= 3 && ['at', 'by', 'with', 'from'].includes(t.key));
    const m = k > 0 ? (mentionAt.get(at(k + 1)) ?? mentionAt.get(at(k + 2))) : undefined;
    const employed = first.key === 'employ' || hiring === 'job_start';
    if (m?.type === 'organization')
      emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), employed ? neg : true);
    else if (!employed && k > 0 && !m) {
      const p = phrase(rest, k + 1, 3);
      if (p.words.length && !PRONOUNS.has(p.words[0]!.key)) emit(owner, FACT_RELATIONS.worksAt, concept(p.words), true);
    }
    // Dismissed: out of work now.
    if (!employed && !neg) emit(owner, FACT_RELATIONS.worksAs, conceptRef('unemployed'), false);
    return;
  }
  const word = first.lower;
  if (WORK_STATES.has(word)) {
    emit(owner, FACT_RELATIONS.worksAs, conceptRef(word), neg);
    return;
  }
  // "I'm freelancing now": working for oneself, as "self-employed" says it.
  if (
    word === 'freelancing' ||
    (word === 'freelance' && !rest[1]?.capitalized && !OCCUPATIONS.has(rest[1]?.lower ?? ''))
  ) {
    emit(owner, FACT_RELATIONS.worksAs, conceptRef('self-employed'), neg);
    return;
  }
  // "I'm seeing a guy called Omar", "I'm dating someone named Theo".
  if ((first.key === 'see' || first.key === 'date') && /ing$/.test(first.lower)) {
    // "I'm not seeing anyone": single; "I'm dating someone": not.
    if (['anyon', 'anybodi', 'someon', 'somebodi'].includes(rest[1]?.key ?? '')) {
      emit(owner, FACT_RELATIONS.status, conceptRef(neg ? 'single' : 'dating'), false);
      // "I'm seeing someone called Josh": Josh is the partner.
      if (['call', 'name'].includes(rest[2]?.key ?? '')) dating(rest, at, owner, neg, mentionAt, emit);
      return;
    }
    if (dating(rest, at, owner, neg, mentionAt, emit)) return;
    // "I've been seeing a woman from work" (not "seeing a movie").
    if (rest.slice(1, 4).some((t) => PERSON_NOUNS.has(t.key))) {
      emit(owner, FACT_RELATIONS.status, conceptRef('dating'), neg);
      return;
    }
  }
  if (STATUS.has(word) || first.key === 'date') {
    const status = first.key === 'date' ? 'dating' : word;
    emit(owner, FACT_RELATIONS.status, conceptRef(status), neg);
    const link = rest[1]?.key;
    const k = link === 'to' || link === 'from' || link === 'with' ? 2 : 1;
    // "married to Hugo": a capitalised name the entity rules did not know, alone before the end.
    const bare = k === 2 && /^[A-Z][a-z]+$/.test(rest[2]?.text ?? '') && (!rest[3] || rest[3].punct);
    const known = mentionAt.get(at(k));
    const person = known?.type === 'person' ? known : bare ? { name: rest[2]!.text, type: 'person' } : undefined;
    if (person?.type === 'person') {
      if (status === 'divorced' || status === 'separated' || status === 'married')
        emit(owner, FACT_RELATIONS.married, conceptRef(person.name, 'person'), status !== 'married' || neg);
      else if (status === 'engaged' || status === 'dating')
        emit(owner, FACT_RELATIONS.partner, conceptRef(person.name, 'person'), neg);
    } else if (!neg && (status === 'divorced' || status === 'separated') && before?.type === 'person') {
      // "Mark and I are divorced now": the person of the clause before.
      emit(owner, FACT_RELATIONS.married, conceptRef(before.name, 'person'), true);
    }
    return;
  }
  // "I'm a widow": widowed, which a new marriage ends.
  if (
    (first.key === 'a' || first.key === 'an') &&
    ['widow', 'widower'].includes(rest[1]?.lower ?? '') &&
    (!rest[2] || rest[2].punct)
  ) {
    emit(owner, FACT_RELATIONS.status, conceptRef('widowed'), neg);
    return;
  }
  if (TRAITS.has(word)) {
    emit(owner, FACT_RELATIONS.is, conceptRef(word), neg);
    return;
  }
  // "a nurse", "an accountant at a big firm", "a full-time painter", "a morning person", "a smoker".
  if (first.lower === 'a' || first.lower === 'an') {
    const p = phrase(rest, 0, 3);
    if (!p.words.length) return;
    const last = p.words[p.words.length - 1]!;
    const occupation =
      OCCUPATIONS.has(last.lower) || OCCUPATIONS.has(last.lower.replace(/s$/, '')) || nounIs(last.lower, 'occupation');
    if (occupation) {
      const words = p.words.filter(
        (w) =>
          ![
            'full-time',
            'part-time',
            'profession',
            'freelanc',
            'senior',
            'junior',
            'head',
            'great',
            'good',
            'big',
            'proud',
          ].includes(w.key),
      );
      emit(owner, FACT_RELATIONS.worksAs, concept(words.length ? words : p.words), neg);
      // "a software engineer at Spotify": where, too.
      if (['at', 'with', 'for'].includes(rest[p.end]?.key ?? '')) {
        const employer = employerAt(p.end + 1, at, mentionAt);
        if (employer) emit(owner, FACT_RELATIONS.worksAt, conceptRef(employer, 'organization'), neg);
        else {
          // "a cashier at a supermarket", "a nurse at the hospital": the workplace as "I work at a supermarket" says it.
          const place = phrase(rest, p.end + 1, 2).words;
          if (place.length && WORKPLACES.has(place[place.length - 1]!.key))
            emit(owner, FACT_RELATIONS.worksAt, concept(place), neg);
        }
      }
    } else if (p.words.length === 1 && HABIT_AGENTS[p.words[0]!.key]) {
      // "I'm a smoker" is the habit "I quit smoking" ends.
      emit(owner, FACT_RELATIONS.does, conceptRef(HABIT_AGENTS[p.words[0]!.key]!), neg);
      emit(owner, FACT_RELATIONS.is, concept(p.words), neg);
    } else if (p.words.length === 2 && INTENSIFIERS.has(p.words[0]!.key) && /(er|ist|ian)$/.test(p.words[1]!.lower)) {
      // "a real hiker", "a huge runner": the kind of person, as "not a hiker" names it.
      emit(owner, FACT_RELATIONS.is, concept(p.words.slice(1)), neg);
    } else if (p.words.length <= 2 && !NOT_A_KIND.has(p.words[0]!.key)) {
      emit(owner, FACT_RELATIONS.is, concept(p.words), neg);
    }
  }
}

/** Words of a couple's time together ("together two months now", "together since May"). */
const TOGETHER_SINCE = new Set([
  'for',
  'sinc',
  'now',
  'year',
  'month',
  'week',
  'two',
  'three',
  'four',
  'five',
  'six',
  'a',
  'few',
  'offici',
  'again',
  '.',
  '!',
]);

/** "my birthday is in May", "our anniversary is on October 5", "my girlfriend is Emma", "Mel's dog Max died", "my favorite X is Y". */
export function possessive(
  clause: Token[],
  i: number,
  subject: Subject,
  copula: boolean,
  neg: boolean,
  mentionAt: Map<number, EntityMention>,
  offset: number,
  self: EntityRef,
  emit: Emit,
): void {
  const owner = subject.ref;
  const role = subject.role!;
  const rest = clause.slice(i);
  // "My son is eight", "our cat Mittens turned four": the age of the one named (else of the owner's role).
  const turned = !copula && (rest[0]?.key === 'turn' || rest[0]?.key === 'turned');
  // "My son celebrated his fifth birthday": the age of the one whose birthday it is.
  const age = copula || turned ? ageAt(rest.slice(turned ? 1 : 0), true) : ownBirthdayAge(rest, false);
  if (age !== undefined && !ATTRIBUTES[role]) {
    if (age === null) return;
    const value = conceptRef(String(age), 'quantity');
    if (subject.roleName) emit({ name: subject.roleName, type: 'person' }, FACT_RELATIONS.age, value, neg);
    else emit(owner, FACT_RELATIONS.age, value, neg, role);
    return;
  }
  if (!copula) {
    // "Our first baby was born" is a copula; "my bike got stolen": the owner no longer has it.
    const verb = rest[0]?.key;
    if (
      (verb === 'got' || verb === 'get') &&
      ['stolen', 'wreck', 'total', 'scrap', 'sold', 'lost'].includes(rest[1]?.key ?? '')
    ) {
      emit(owner, FACT_RELATIONS.has, conceptRef(role), true);
      return;
    }
    if (
      verb &&
      DEATH_VERBS.has(verb) &&
      (verb !== 'run' || rest[1]?.key === 'away') &&
      (verb !== 'pass' || rest[1]?.key === 'away')
    ) {
      emit(owner, FACT_RELATIONS.has, conceptRef(role), true);
      if (subject.roleName) emit(owner, FACT_RELATIONS.has, conceptRef(subject.roleName.toLowerCase()), true);
    }
    return;
  }
  // "Our first baby was born last week": the owner has children.
  if ((role === 'babi' || role === 'son' || role === 'daughter') && rest[0]?.key === 'born') {
    emit(owner, FACT_RELATIONS.children, conceptRef('children'), neg);
    return;
  }
  // "my bike was stolen", "my car got totalled": the owner no longer has it.
  if (['stolen', 'sold', 'lost', 'wreck', 'total', 'scrap'].includes(rest[0]?.key ?? '') && !ATTRIBUTES[role]) {
    emit(owner, FACT_RELATIONS.has, conceptRef(role), true);
    return;
  }
  if (role === 'favorit') return; // extract.ts reads "my favorite X is Y"
  // "my phone is a Samsung Galaxy", "my car is a Volvo": the one phone or car the owner has.
  if (role === 'phone' || role === 'car') {
    const p = phrase(rest, rest[0]?.key === 'now' ? 1 : 0, 3);
    const named = p.words.some((w) => w.capitalized)
      ? {
          relation: role === 'phone' ? FACT_RELATIONS.phone : FACT_RELATIONS.drives,
          value: p.words.map((w) => w.lower).join(' '),
        }
      : null;
    const single = singleThing(p.words, role === 'car') ?? named;
    if (single) emit(owner, single.relation, conceptRef(single.value), neg);
    return;
  }
  let j = 0;
  while (rest[j] && (rest[j]!.key === 'on' || rest[j]!.key === 'in' || ADVERBS.has(rest[j]!.key))) j++;
  const person = mentionAt.get(offset + i + j);
  if (PARTNERS.has(role) && person?.type === 'person') {
    emit(owner, FACT_RELATIONS.partner, conceptRef(person.name, 'person'), neg);
    return;
  }
  if (SPOUSES.has(role)) return; // extract.ts reads "my wife is Anna"
  const relation = ATTRIBUTES[role];
  if (!relation) return;
  if (relation === FACT_RELATIONS.livesIn) {
    if (person?.type === 'place') emit(owner === self ? self : owner, relation, conceptRef(person.name, 'place'), neg);
    else {
      // "Our home is a little cottage in Devon".
      const place = [...Array(7).keys()].map((k) => mentionAt.get(offset + i + j + k)).find((m) => m?.type === 'place');
      if (place) emit(owner, relation, conceptRef(place.name, 'place'), neg);
    }
    return;
  }
  // "My job is at the city library": where one works.
  // ("at" may have been read as an adverb before the predicate.)
  const at = rest[j]?.key === 'at' ? j + 1 : clause[i - 1]?.key === 'at' ? j : -1;
  if (relation === FACT_RELATIONS.worksAs && at >= 0) {
    const m = mentionAt.get(offset + i + at);
    const p = phrase(rest, at, 3);
    if (m?.type === 'organization') emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), neg);
    else if (p.words.length) emit(owner, FACT_RELATIONS.worksAt, concept(p.words), neg);
    return;
  }
  // "on 3 August", "August 3rd", "the 3rd of August": one spelling of a day of the year.
  const day =
    relation === FACT_RELATIONS.birthday || relation === FACT_RELATIONS.anniversary
      ? dayOfYear(rest.slice(j, j + 5).filter((t) => !t.punct))
      : null;
  if (day) {
    emit(owner, relation, conceptRef(day), neg);
    return;
  }
  const words: string[] = [];
  for (
    let k = j;
    rest[k] &&
    words.length < 4 &&
    !rest[k]!.punct &&
    !['now', 'too', 'and', 'but', 'this', 'anymor', 'again'].includes(rest[k]!.key);
    k++
  ) {
    words.push(rest[k]!.lower.replace(/(st|nd|rd|th)$/, (s) => (/\d/.test(rest[k]!.lower) ? '' : s)));
  }
  if (words.length) emit(owner, relation, conceptRef(words.join(' ')), neg);
}

/** "Hiking is my favorite hobby", "it's my favorite city", "Inception is no longer my favorite movie". */
export function favouriteBackward(
  clause: Token[],
  mentionAt: Map<number, EntityMention>,
  offset: number,
  self: EntityRef,
  before: EntityRef | null,
  emit: Emit,
): void {
  // "Purple has become my favourite colour".
  const be = clause.findIndex((t) => t.key === 'be' || t.key === 'becom' || t.key === 'becam');
  if (be <= 0) return;
  let j = be + 1;
  let negated = false;
  while (clause[j] && (NEGATORS.has(clause[j]!.key) || clause[j]!.key === 'longer' || ADVERBS.has(clause[j]!.key))) {
    if (NEGATORS.has(clause[j]!.key)) negated = true;
    j++;
  }
  let owner: EntityRef | null = null;
  if (clause[j]?.lower === 'my' || clause[j]?.lower === 'our') owner = self;
  else {
    const m = mentionAt.get(offset + j);
    if (m?.type === 'person' && clause[m.last - offset]?.text === "'s") {
      owner = { name: m.name, type: 'person' };
      j = m.last - offset;
    }
  }
  if (!owner) return;
  // "my new favorite band".
  while (['new', 'current', 'all-tim', 'all-time', 'absolut'].includes(clause[j + 1]?.key ?? '')) j++;
  if (clause[j + 1]?.key !== 'favorit') return;
  const words: string[] = [];
  for (
    let k = j + 2;
    clause[k] && !clause[k]!.punct && words.length < 4 && (!STOP.has(clause[k]!.key) || clause[k]!.key === 'of');
    k++
  )
    words.push(clause[k]!.lower);
  const thing = favoriteKind(words);
  if (!thing) return;
  const subjectWords = clause
    .slice(0, be)
    .filter((t) => !DETERMINERS.has(t.key) && !LEADING.has(t.key) && !ADVERBS.has(t.key) && t.key !== 'have');
  if (!subjectWords.length) return;
  let value: EntityRef;
  if (subjectWords.length === 1 && PRONOUNS.has(subjectWords[0]!.key)) {
    if (!before) return;
    value = before;
  } else {
    const m = mentionAt.get(offset + clause.indexOf(subjectWords[0]!));
    value = m && m.last - offset >= be ? { name: m.name, type: m.type } : concept(subjectWords.slice(-3));
  }
  emit(owner, `${FACT_RELATIONS.favoritePrefix}${thing}`, value, negated);
}

/** "Home is Galway now", "Galway is home now", "Galway is my home": where the end user lives. */
export function homeIs(
  clause: Token[],
  mentionAt: Map<number, EntityMention>,
  offset: number,
  self: EntityRef,
  before: EntityRef | null,
  emit: Emit,
): boolean {
  // "that's" is "that is" ("'s" is otherwise a possessive).
  const be = clause.findIndex(
    (t, k) => t.key === 'be' || (t.text === "'s" && ['that', 'it', 'there'].includes(clause[k - 1]?.key ?? '')),
  );
  if (be < 0) return false;
  // "(We bought a house in Queens,) that's home now".
  const pointing = clause.slice(0, be).filter((t) => !LEADING.has(t.key));
  if (
    before?.type === 'place' &&
    pointing.length === 1 &&
    ['that', 'thi', 'it', 'there'].includes(pointing[0]!.key) &&
    clause[be + 1]?.key === 'home'
  ) {
    emit(self, FACT_RELATIONS.livesIn, conceptRef(before.name, 'place'), false);
    return true;
  }
  const named = (from: number, to: number) => {
    for (let k = from; k < to; k++) {
      const m = mentionAt.get(offset + k);
      if (m && m.type !== 'date' && m.type !== 'quantity' && m.type !== 'organization') return m;
    }
    return undefined;
  };
  const words = clause.map((t) => t.key);
  // "Chicago was home for years": a home once, not now.
  const ended = endedState(clause, be);
  const negated = ended || words.slice(be, be + 3).some((w) => NEGATORS.has(w));
  let m: EntityMention | undefined;
  const head = words
    .slice(0, be)
    .filter((w) => !LEADING.has(w))
    .join(' ');
  if (head === 'home' || head === 'home for me' || head === 'home for us') m = named(be + 1, clause.length);
  else if (
    words
      .slice(be + 1)
      .filter((w) => !NEGATORS.has(w) && w !== 'my' && w !== 'our' && !ADVERBS.has(w) && w !== 'longer')
      .join(' ')
      .startsWith('home')
  )
    m = named(0, be);
  if (!m) return false;
  emit(self, FACT_RELATIONS.livesIn, conceptRef(m.name, 'place'), negated, undefined, ended);
  return true;
}

/**
 * An age at the start of `rest` ("27", "twenty-six", with `units` also "eight"): undefined when no number is
 * there, null when a unit follows that makes it something else ("5 minutes away", "two kids").
 */
function ageAt(rest: Token[], units: boolean): number | null | undefined {
  const first = rest[0];
  if (!first) return undefined;
  const spelled = spelledNumber(rest);
  // A unit alone is an age only for a relative's age ("my son is four") or before "years old" ("Max is nine years
  // old"): "I'm one of them" is none.
  const yearsOld = rest[1]?.key === 'year' && rest[2]?.key === 'old';
  const unit = (units || yearsOld) && !spelled ? unitOf(first.lower) : undefined;
  const n = spelled ? spelled.value : /^\d+$/.test(first.text) ? Number(first.text) : (unit ?? null);
  if (n === null || n <= 0 || n >= 130) return undefined;
  const next = rest[spelled ? spelled.end : 1];
  return !next || next.punct || next.key === 'year' || next.key === 'yo' || !NOT_AGE.has(next.key) ? n : null;
}
