// Personal facts as attribute-value statements about a subject (issue 53): who says what about whom,
// with polarity. Clause by clause, a subject ("I", "we", a named person, "my wife", "Mel's") and the
// predicate after it are matched against a few statement forms: a copula ("I'm 30", "I'm a nurse",
// "I'm not vegetarian"), a possessive attribute ("my birthday is in May"), a preference ("I prefer
// tea to coffee"), a possession and its loss ("I sold my piano"), a habit with a frequency or a time
// ("I swim twice a week") and its end ("I quit swimming"), a job or a home left ("I left Google").
// Deterministic and offline; complements the cue relations of extract.ts.
import type { EntityMention } from './entities.js';
import { type Emit, type EntityRef, FACT_RELATIONS, PRONOUN_SUBJECT } from './fact-model.js';
import {
  clausesOf,
  conceptRef,
  endedState,
  isParticiple,
  ownBirthdayAge,
  type Subject,
  subjectOf,
} from './fact-phrases.js';
import { copulaFacts, favouriteBackward, homeIs, possessive } from './fact-statements.js';
import {
  ADVERBS,
  ATTRIBUTES,
  CHOOSE,
  DEATH_VERBS,
  HYPOTHETICAL,
  KIN,
  LEADING,
  NEGATORS,
  PARTNERS,
  PREFERENCE_LINKS,
  SPOUSES,
} from './fact-words.js';
import { MONTHS, speaksOfFuture } from './lexicon.js';
import { verbFacts } from './fact-verbs.js';
import { changeByKind, changeFacts, notDone, preferred } from './fact-changes.js';
import type { Token } from './tokens.js';
import { nounIs } from './word-kinds.js';

/**
 * Reads the personal facts of one text. `emit` receives each (subject, relation, value, negated, aspect);
 * the caller keeps those its ontology declares.
 */
/** Third-person subjects a fact may be stated of without naming whom ("He joined KPMG"). */
const PRONOUN_SUBJECTS = new Set(['he', 'she', 'they']);

export function personalFacts(tokens: Token[], mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  const mentionAt = new Map<number, EntityMention>();
  for (const m of mentions) mentionAt.set(m.first, m);
  let carried = null as Subject | null;
  let lastEntity: EntityRef | null = null;
  // The clause before when it was a subject alone ("My wife | and I separated", "Tom | and his wife divorced").
  let alone: Subject | null = null;
  // The last person other than the end user who was a clause's subject.
  let other: EntityRef | null = null;
  for (const { tokens: clause, offset, joinedBy } of clausesOf(tokens)) {
    // "When she's 10 we'll let her have a phone": a time to come, no fact of now.
    if ((FUTURE_WHEN.has(clause[0]?.key ?? '') || FUTURE_WHEN.has(joinedBy ?? '')) && futureAfter(tokens, offset))
      continue;
    let subject = subjectOf(clause, mentionAt, offset, self);
    const couple = alone && joinedBy === 'and' ? alone : null;
    alone =
      subject && subject.next >= clause.length
        ? subject
        : clause.length === 1 && clause[0]!.capitalized && !mentionAt.has(offset) && clause[0]!.lower !== 'i'
          ? { ref: { name: clause[0]!.text, type: 'person' }, role: null, roleName: null, next: 1 }
          : null;
    if (couple && parted(clause, couple, subject, self, emit)) continue;
    // "My sister lives in Leeds but she moved to York": "he"/"she" is the person the clause before spoke of.
    const pronoun = clause.findIndex((t) => !LEADING.has(t.key));
    if (!subject && other && ['he', 'she'].includes(clause[pronoun]?.lower ?? ''))
      subject = { ref: other, role: null, roleName: null, next: pronoun + 1 };
    // "She's moved to Atlanta" with no one named before it in the text: the person of an earlier memory, whom the
    // knowledge derivation names (knowledge.ts); marked here so no fact of the end user's is read from it.
    else if (!subject && !other && PRONOUN_SUBJECTS.has(clause[pronoun]?.lower ?? '') && pronoun + 1 < clause.length)
      subject = {
        ref: { name: `${PRONOUN_SUBJECT}${clause[pronoun]!.lower}`, type: 'person' },
        role: null,
        roleName: null,
        next: pronoun + 1,
      };
    if (subject && subject.ref !== self && !subject.role) other = subject.ref;
    else if (subject?.role && isKin(clause[subject.next - 1]) && !subject.roleName && subject.ref === self)
      other = { name: `my ${clause[subject.next - 1]!.lower}`, type: 'person' };
    else if (subject?.ref === self) other = null;
    // "Maria retired from cooking and is a painter now": a clause without a subject of its own keeps the last one.
    if (
      !subject &&
      carried &&
      joinedBy === 'and' &&
      clause[0] &&
      !mentionAt.has(offset) &&
      !THIRD_PERSON.has(clause[0].lower)
    )
      subject = { ...carried, next: 0 };
    const before = lastEntity;
    for (let i = 0; i < clause.length; i++) {
      const m = mentionAt.get(offset + i);
      if (m && m.type !== 'date' && m.type !== 'quantity') lastEntity = { name: m.name, type: m.type };
    }
    if (!subject && homeIs(clause, mentionAt, offset, self, before, emit)) continue;
    // "Biscuit died last week": a name the entity rules did not know (a pet's) is gone.
    if (!subject && clause[0]?.capitalized && !mentionAt.has(offset) && diedAt(clause, 1)) {
      emit(self, FACT_RELATIONS.has, conceptRef(clause[0].lower), true);
      continue;
    }
    // "(These days) Coldplay is my favorite band": the named value, not a person's fact.
    if ((!subject || (subject.ref !== self && !subject.role)) && clause.some((t) => t.key === 'favorit')) {
      favouriteBackward(clause, mentionAt, offset, self, before, emit);
      continue;
    }
    if (!subject) {
      favouriteBackward(clause, mentionAt, offset, self, before, emit);
      continue;
    }
    carried = subject.role ? null : subject;
    partnerNamed(clause, subject, self, emit);
    readClause(clause, offset, subject, mentionAt, self, before, emit);
  }
}

function readClause(
  clause: Token[],
  offset: number,
  subject: Subject,
  mentionAt: Map<number, EntityMention>,
  self: EntityRef,
  before: EntityRef | null,
  emit: Emit,
): void {
  // Being out of work is read from the speaker's own job loss, not from a story about someone else's.
  if (subject.ref !== self) {
    const emitAll = emit;
    emit = (s, r, o, n, a, p) => {
      if (r !== FACT_RELATIONS.worksAs || o.name !== 'unemployed' || n) emitAll(s, r, o, n, a, p);
    };
  }
  // Auxiliaries, adverbs and negation between the subject and its predicate.
  let i = subject.next;
  let negated = false;
  // "I worked at IKEA for ten years", "I was married until 2019": true once, not now (as "used to" below).
  const verbAt = clause.findIndex((t, k) => k >= i && !ADVERBS.has(t.key));
  if (verbAt >= 0 && endedState(clause, verbAt)) {
    negated = true;
    const emitNow = emit;
    emit = (s, r, o, n, a) => emitNow(s, r, o, n, a, n);
  }
  let copula = false;
  let progressive = false;
  for (; i < clause.length; i++) {
    const t = clause[i]!;
    // "I'd rather fly than drive", "I'd take coffee over tea": a preference, not a wish.
    if (t.key === 'would' && clause[i + 1]?.key === 'rather') {
      preferred(clause.slice(i + 2), subject.ref, negated, emit);
      return;
    }
    if (t.key === 'would' && CHOOSE.has(clause[i + 1]?.key ?? '')) {
      preferred(clause.slice(i + (clause[i + 2]?.key === 'for' ? 3 : 2)), subject.ref, negated, emit, PREFERENCE_LINKS);
      return;
    }
    // "I haven't been going", "I had to move out": auxiliaries before the verb.
    if (t.key === 'have' && ['not', 'never'].includes(clause[i + 1]?.key ?? '')) continue;
    if (t.lower === 'had' && clause[i + 1]?.key === 'to') {
      i++;
      continue;
    }
    // "I don't do yoga": the last "do" before its object is the verb.
    if (t.key === 'do' && clause[i + 1] && !NEGATORS.has(clause[i + 1]!.key) && !ADVERBS.has(clause[i + 1]!.key)) break;
    if (t.lower === 'been') progressive = true;
    // "I use an Android phone" is a fact; "I used to ..." is not one of today.
    // "I used to smoke": true once, so not now (a denial of today's fact).
    if (t.lower === 'used' && clause[i + 1]?.key === 'to') {
      negated = true;
      const emitNow = emit;
      emit = (s, r, o, n, a) => emitNow(s, r, o, n, a, n);
      i++;
      continue;
    }
    // "My birthday is May 2": the month, not a modal.
    if (t.capitalized && MONTHS.has(t.lower)) break;
    if (HYPOTHETICAL.has(t.key) && (t.key !== 'use' || clause[i + 1]?.key === 'to')) return;
    // After a pronoun, or a name the subject reader took as "Gina is" ("Gina's 24").
    const clitic =
      t.text === "'s" &&
      i === subject.next &&
      (THIRD_PERSON.has(clause[i - 1]?.lower ?? '') || (subject.ref !== self && !subject.role));
    // "she's moved to Boulder", "he's left Google": before a participle of an act the clitic is "has".
    if (clitic && isParticiple(clause[i + 1]) && clause[i + 1]!.lower !== 'been' && !STATES.has(clause[i + 1]!.lower))
      continue;
    // "she's a nurse": the clitic after a pronoun is "is", not a possessive.
    if (t.key === 'be' || clitic) copula = true;
    // "I've become a morning person", "I've turned into a hiker": the state now, as "I'm" states it.
    else if (BECOME.has(t.key) && ['a', 'an'].includes(clause[i + 1]?.lower ?? '')) copula = true;
    else if (
      (t.key === 'turn' || t.key === 'grow') &&
      clause[i + 1]?.key === 'into' &&
      ['a', 'an'].includes(clause[i + 2]?.lower ?? '')
    ) {
      copula = true;
      i++;
    }
    // "I'm at Deloitte", "I've been at IKEA for years": "at" starts the predicate here, not "at least".
    else if (t.key === 'at' && mentionAt.has(offset + i + 1)) break;
    else if (NEGATORS.has(t.key)) negated = true;
    else if (t.key === 'longer' && clause[i - 1]?.key === 'no') negated = true;
    else if (
      t.key === 'have' ||
      t.key === 'do' ||
      ADVERBS.has(t.key) ||
      t.key === 'these' ||
      t.key === 'day' ||
      t.key === 'ever'
    ) {
      // "have" is an auxiliary only before a past participle; as a main verb it is handled below.
      // "I've finally moved on": adverbs may stand between.
      let v = i + 1;
      while (ADVERBS.has(clause[v]?.key ?? '')) v++;
      if (t.key === 'have' && !isParticiple(clause[v])) break;
    } else break;
  }
  // "I've been going to choir", "I haven't been playing": the -ing form is the verb (not "I've been seeing Tom").
  if (copula && progressive && /ing$/.test(clause[i]?.lower ?? '') && !['see', 'date'].includes(clause[i]!.key))
    copula = false;
  // The ability frame: "I can't swim", "I can drive now", "I learned (how) to swim" state one fact, an activity one
  // can do, whatever the verb; its denial and its learning conflict.
  const learned = clause[i]?.key === 'learn' && clause[i + 1]?.key === 'how' ? 2 : clause[i]?.key === 'learn' ? 1 : 0;
  // Only a short predicate is an ability ("I can't swim", "I can drive now"); a longer one is a possibility
  // ("I can teach others the joy ...", "we can do great things together").
  const until = clause.findIndex((t, k) => k > i && (t.punct || ABILITY_ENDS.has(t.key)));
  const words = clause
    .slice(i, until < 0 ? clause.length : until)
    .filter((t) => !ADVERBS.has(t.key) && t.key !== 'not').length;
  const ability =
    ((clause[i]?.key === 'can' && !copula) || (!!learned && clause[i + learned]?.key === 'to')) &&
    words <= (learned ? learned + 4 : 4);
  if (ability) {
    i += learned ? learned + 1 : 1;
    if (NEGATORS.has(clause[i]?.key ?? '')) {
      negated = true;
      i++;
    }
    const emitFact = emit;
    // An ability is an activity one can do, not a job or a home ("I can teach" is no teacher).
    emit = (s, r, o, n, a, p) => {
      if (r === FACT_RELATIONS.does) emitFact(s, r, conceptRef(`can ${o.name}`), n, a, p);
    };
  }
  const rest = clause.slice(i);
  const after = clause.slice(i).map((t) => t.key);
  if (speaksOfFuture(after)) return;
  const anymore = after.includes('anymor') || (after.includes('ani') && after.includes('more'));
  const neg = negated || (anymore && negated);
  const owner = subject.ref;
  const at = (k: number) => offset + i + k;

  if (subject.role) {
    // "My birthday's in May", "my birthday falls on 3 August": a copula all the same.
    const linked = !copula && (clause[i]?.text === "'s" || (clause[i]?.key === 'fall' && ATTRIBUTES[subject.role]));
    let read = false;
    possessive(clause, linked ? i + 1 : i, subject, copula || !!linked, neg, mentionAt, offset, self, (...fact) => {
      read = true;
      emit(...fact);
    });
    // "My sister moved to Milan", "my husband is a plumber": a relative unnamed is a person all the same.
    // "My husband Raj is a software engineer at Google": the named relative's own facts.
    if (!read && copula && subject.roleName && subject.ref === self && !ATTRIBUTES[subject.role])
      copulaFacts(rest, at, { name: subject.roleName, type: 'person' }, neg, mentionAt, before, emit);
    if (read || !isKin(clause[subject.next - 1]) || subject.roleName || subject.ref !== self) return;
    const kin: EntityRef = { name: `my ${clause[subject.next - 1]!.lower}`, type: 'person' };
    if (copula) copulaFacts(rest, at, kin, neg, mentionAt, before, emit);
    else predicateFacts(rest, at, kin, neg || (anymore && negated), mentionAt, before, false, ability, emit);
    return;
  }
  if (
    subject.ref !== self &&
    subject.ref.type === 'person' &&
    clause[subject.next - 1] &&
    rest[0] &&
    DEATH_VERBS.has(rest[0].key)
  ) {
    // "Luna died": a named pet or person is gone; the end user no longer has them.
    if (rest[0].key !== 'run' || rest[1]?.key === 'away')
      emit(self, FACT_RELATIONS.has, conceptRef(subject.ref.name.toLowerCase()), true);
    // "Dave passed away": no longer one's husband or partner either.
    if (rest[0].key !== 'run') {
      emit(self, FACT_RELATIONS.married, conceptRef(subject.ref.name, 'person'), true);
      emit(self, FACT_RELATIONS.partner, conceptRef(subject.ref.name, 'person'), true);
    }
    return;
  }
  // "Emma and I broke up".
  if (
    subject.ref.type === 'person' &&
    subject.ref !== self &&
    clause[subject.next]?.lower === 'and' &&
    clause[subject.next + 1]?.lower === 'i'
  ) {
    if (splitUp(clause.slice(subject.next + 2).map((t) => t.key))) {
      emit(self, FACT_RELATIONS.partner, conceptRef(subject.ref.name, 'person'), true);
      emit(self, FACT_RELATIONS.married, conceptRef(subject.ref.name, 'person'), true);
    }
    return;
  }

  // "Dan is my ex now".
  if (copula && subject.ref !== self && rest[0]?.key === 'my' && rest[1]?.key === 'ex') {
    emit(self, FACT_RELATIONS.partner, conceptRef(subject.ref.name, 'person'), !neg);
    emit(self, FACT_RELATIONS.married, conceptRef(subject.ref.name, 'person'), !neg);
    return;
  }
  if (copula) {
    copulaFacts(rest, at, owner, neg, mentionAt, before, emit);
    return;
  }
  // "Tom celebrated his 40th birthday", "I had my 30th birthday": the subject's age now.
  const birthdayAge = neg ? undefined : ownBirthdayAge(rest, owner === self);
  if (birthdayAge) {
    emit(owner, FACT_RELATIONS.age, conceptRef(String(birthdayAge), 'quantity'), false);
    return;
  }
  predicateFacts(rest, at, owner, neg, mentionAt, before, subject.next === 0, ability, emit, anymore && negated);
}

/** A verb's predicate, the same frames for every subject (the end user, a named person, "my sister"). */
function predicateFacts(
  rest: Token[],
  at: (k: number) => number,
  owner: EntityRef,
  neg: boolean,
  mentionAt: Map<number, EntityMention>,
  before: EntityRef | null,
  carried: boolean,
  ability: boolean,
  emit: Emit,
  notAnymore = false,
): void {
  if (changeFacts(rest, at, owner, neg, mentionAt, before, carried, emit)) return;
  const verbsRead = (words: Token[], position: (k: number) => number) => {
    let read = false;
    verbFacts(words, position, owner, neg, mentionAt, before, (...fact) => {
      read = true;
      emit(...fact);
    });
    return read;
  };
  if (verbsRead(rest, at)) return;
  // Wording the rules were not written for, read by the kind of its verb (WordNet's classes of change).
  if (changeByKind(rest, at, owner, neg, mentionAt, verbsRead, emit)) return;
  notDone(rest, owner, neg || notAnymore, emit, ability);
}

/** Words after which an ability's predicate has ended: a time or a place ("learned to drive over the summer"). */
const ABILITY_ENDS = new Set([
  'over',
  'in',
  'on',
  'at',
  'last',
  'this',
  'dure',
  'for',
  'after',
  'befor',
  'when',
  'sinc',
]);
/** Participles that name a state after "'s" ("she's married", "he's based in Oslo"), read as "is". */
const STATES = new Set([
  'married',
  'engaged',
  'divorced',
  'separated',
  'retired',
  'widowed',
  'based',
  'employed',
  'unemployed',
  'settled',
  'located',
  'interested',
  'tired',
  'done',
  'gone',
]);
const ENGAGED = new Set(['fianc', 'fiance', 'fiancé', 'fiancée']);
const FUTURE_WHEN = new Set(['when', 'onc', 'whenev', 'until', 'till']);
/** Whether the sentence from `offset` speaks of what will be ("... we'll let her", "... I'm gonna"). */
const futureAfter = (tokens: Token[], offset: number) => {
  for (let k = offset; k < tokens.length && !/^[.!?;]$/.test(tokens[k]!.text); k++)
    if (tokens[k]!.key === 'will' || tokens[k]!.key === 'gonna') return true;
  return false;
};
const BECOME = new Set(['becom', 'becam']);
const THIRD_PERSON = new Set(['he', 'she', 'they', 'it', 'you']);

/** "died", "passed away", "ran away" at `i`. */
const diedAt = (clause: Token[], i: number) => {
  const verb = clause[i]?.key;
  return (
    !!verb &&
    DEATH_VERBS.has(verb) &&
    (verb !== 'run' || clause[i + 1]?.key === 'away') &&
    (verb !== 'pass' || clause[i + 1]?.key === 'away')
  );
};

/** Words of a couple's parting: "broke up", "split", "separated", "divorced", "ended things", "called it quits". */
const splitUp = (verbs: string[]) =>
  verbs.includes('broke') ||
  verbs.includes('break') ||
  verbs.includes('split') ||
  verbs.includes('separ') ||
  verbs.includes('divorc') ||
  (verbs.includes('end') && verbs.some((w) => ['thing', 'it', 'relationship'].includes(w))) ||
  (verbs.includes('call') && (verbs.includes('quit') || (verbs.includes('it') && verbs.includes('off')))) ||
  // "Leo and I are done", "we're over now": a couple's state, when nothing follows but a time.
  verbs.some((w, k) => w === 'be' && COUPLE_ENDED.has(verbs[k + 1] ?? '') && TAIL.has(verbs[k + 2] ?? ''));
const COUPLE_ENDED = new Set(['done', 'over', 'through', 'finish']);
/** What may follow "split"/"broke" when a couple parted ("split up", "broke up last week", "split for good"). */
const COUPLE_SPLIT_AFTER = new Set(['', 'up', 'apart', 'last', 'for', 'recent', 'yesterday', 'thi', 'in', 'after']);
const TAIL = new Set(['', 'now', 'for', 'offici', 'final', '.', '!']);

/** "My wife and I separated", "my girlfriend and I broke up", "Tom and his wife divorced": the couple's status after. */
function parted(clause: Token[], couple: Subject, subject: Subject | null, self: EntityRef, emit: Emit): boolean {
  let owner: EntityRef;
  let partner: string;
  let verbs: string[];
  if (couple.role && couple.ref === self && subject?.ref === self && !subject.role) {
    owner = self;
    partner = couple.role;
    verbs = clause.slice(subject.next).map((t) => t.key);
  } else if (!couple.role && couple.ref !== self && subject?.ref === self && !subject.role) {
    // "Jess and I are no longer together", "Jess and I split up".
    const words = clause.slice(subject.next).map((t) => t.key);
    const apart =
      words.includes('togeth') && words.some((w, k) => w === 'not' || (w === 'no' && words[k + 1] === 'longer'));
    if (!apart && !splitUp(words)) return false;
    emit(self, FACT_RELATIONS.partner, conceptRef(couple.ref.name, 'person'), true);
    emit(self, FACT_RELATIONS.married, conceptRef(couple.ref.name, 'person'), true);
    return true;
  } else if (
    !couple.role &&
    couple.ref !== self &&
    couple.ref.type === 'person' &&
    subject?.ref.type === 'person' &&
    subject.ref !== self &&
    !subject.role
  ) {
    // "Lisa and Greg are getting divorced", "Kate and Tom split up": each is no longer the other's.
    const words = clause.slice(subject.next).map((t) => t.key);
    // "split the bill", "broke a window": a split or a break of something else.
    const cue = words.findIndex((w) => w === 'split' || w === 'broke' || w === 'break');
    const ofSomething = cue >= 0 && !COUPLE_SPLIT_AFTER.has(words[cue + 1] ?? '');
    if (!splitUp(words) || (ofSomething && !words.includes('divorc') && !words.includes('separ'))) return false;
    const status = words.includes('divorc') ? 'divorced' : words.includes('separ') ? 'separated' : 'single';
    for (const [one, other] of [
      [couple.ref, subject.ref],
      [subject.ref, couple.ref],
    ] as const) {
      emit(one, FACT_RELATIONS.partner, conceptRef(other.name, 'person'), true);
      emit(one, FACT_RELATIONS.married, conceptRef(other.name, 'person'), true);
      emit(one, FACT_RELATIONS.status, conceptRef(status), false);
    }
    return true;
  } else if (!couple.role && couple.ref !== self && ['his', 'her', 'their'].includes(clause[0]?.lower ?? '')) {
    owner = couple.ref;
    partner = clause[1]?.key ?? '';
    verbs = clause.slice(2).map((t) => t.key);
  } else return false;
  if (!splitUp(verbs)) return false;
  if (SPOUSES.has(partner))
    emit(owner, FACT_RELATIONS.status, conceptRef(verbs.includes('divorc') ? 'divorced' : 'separated'), false);
  else if (PARTNERS.has(partner)) {
    emit(owner, FACT_RELATIONS.has, conceptRef(partner), true);
    emit(owner, FACT_RELATIONS.status, conceptRef('single'), false);
  } else return false;
  return true;
}

/** Words before a partner's role that make the partner a former one ("my ex husband", "my late wife"). */
const FORMER = new Set(['ex', 'late', 'former', 'old', 'first']);

/**
 * "Hugo is my husband", "my new girlfriend, Amy, ...", "my husband Hugo ...": the partner named is the value of
 * the end user's spouse or partner, as "My husband is Hugo" states it.
 */
function partnerNamed(clause: Token[], subject: Subject, self: EntityRef, emit: Emit): void {
  const link = (role: Token | undefined) =>
    role && SPOUSES.has(role.key)
      ? FACT_RELATIONS.married
      : role && PARTNERS.has(role.key)
        ? FACT_RELATIONS.partner
        : null;
  const k = subject.next;
  if (
    subject.ref !== self &&
    !subject.role &&
    clause[k]?.key === 'be' &&
    ['my', 'our'].includes(clause[k + 1]?.lower ?? '')
  ) {
    const relation = link(clause[k + 2]);
    if (relation && (!clause[k + 3] || clause[k + 3]!.punct)) {
      emit(self, relation, subject.ref, false);
      // "Jo is my fiancée": engaged, which a wedding ends.
      if (ENGAGED.has(clause[k + 2]!.key))
        emit(self, FACT_RELATIONS.status, { name: 'engaged', type: 'concept' }, false);
    }
    return;
  }
  if (subject.ref !== self || !subject.roleName) return;
  const role = clause.findIndex((t) => t.key === subject.role);
  const owner = clause.findIndex((t) => t.lower === 'my' || t.lower === 'our');
  const relation = link(clause[role]);
  if (relation && owner >= 0 && owner < role && !clause.slice(owner, role).some((t) => FORMER.has(t.key)))
    emit(self, relation, { name: subject.roleName, type: 'person' }, false);
}

/** A relative or another person one names by role ("my sister", "my stepdad", "my boss"): WordNet's relatives too. */
const isKin = (role: Token | undefined) => !!role && (KIN.has(role.key) || nounIs(role.lower, 'relative'));
