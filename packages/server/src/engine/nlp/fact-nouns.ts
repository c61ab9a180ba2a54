// Facts stated through an attribute's noun rather than its verb (issue 53): "our new place in Nashville", "a lease on
// a flat in Sydney", "first week at Monzo", "my new employer is Adidas", "I handed in my resignation at Boots". A
// sentence is read here after the clause rules; a fact they already emitted is dropped by the caller as a repeat.
// The frames are general: a noun of the attribute (a home's, a job's), its owner (a possessive, or the subject of a
// verb of getting), and the value named beside it; a sentence that hedges, plans, denies or tells of a stay is left alone.
import type { EntityMention } from './entities.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import { conceptRef, placeLike } from './fact-phrases.js';
import { HYPOTHETICAL, NEGATORS, STAY_WORDS } from './fact-words.js';
import { GIVEN_NAMES } from './lexicon.js';
import type { Token } from './tokens.js';
import { verbClassAt } from './word-kinds.js';

/** Nouns of a home (stemmed keys). */
const HOMES = new Set([
  'home',
  'hous',
  'flat',
  'apart',
  'apartment',
  'condo',
  'place',
  'address',
  'neighbour',
  'neighbor',
  'neighbourhood',
  'neighborhood',
  'bungalow',
  'townhous',
]);
/** Nouns of a job ("new job at", "my employer is"); time nouns count only after "first"/"new" ("first week at"). */
const JOBS = new Set(['job', 'role', 'posit', 'employ', 'workplac', 'gig', 'internship', 'apprenticeship']);
const JOB_TIMES = new Set(['day', 'week', 'month', 'shift']);
/** Words between an owner and the noun that keep it the owner's current one. */
const CURRENT = new Set([
  'new',
  'own',
  'first',
  'current',
  'littl',
  'love',
  'lovely',
  'tini',
  'tiny',
  'big',
  'bigger',
  'small',
  'smaller',
  'cosi',
  'cozi',
  'nice',
  'beauti',
  'perman',
  'full-tim',
  'part-tim',
  'full',
  'time',
  'part',
  '-',
]);
/** Verbs by which a subject gets a home ("bought a house in", "signed a lease on a flat in"). */
const GETS = new Set(['buy', 'bought', 'rent', 'sign', 'get', 'found', 'find', 'close', 'purchas', 'leas', 'move']);
/** Words that make a sentence about something other than the current fact: a hedge, a plan, a question, a past home. */
const NOT_NOW = new Set([
  ...HYPOTHETICAL,
  ...NEGATORS,
  'old',
  'former',
  'previous',
  'childhood',
  'parent',
  'next',
  'futur',
  'offer',
  'interview',
  'appli',
  'ago',
  'until',
  'befor',
  'when',
  'second',
  'summer',
  '?',
]);
/** Verbs by which a fact ends, besides WordNet's classes of ending. */
const ENDS = new Set([
  'quit',
  'left',
  'leav',
  'lost',
  'lose',
  'sold',
  'sell',
  'miss',
  'fire',
  'sack',
  'laid',
  'redund',
]);
const ENDING_CLASSES = new Set(['job_end', 'possession_end', 'relationship_end', 'habit_end']);
/** The possessives of the end user. */
const SELF_OWNERS = new Set(['my', 'our']);

/** Reads the noun frames of a text; `emit` as for the clause rules. */
export function nounFacts(tokens: Token[], mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  const mentionAt = new Map<number, EntityMention>();
  for (const m of mentions) mentionAt.set(m.first, m);
  let from = 0;
  for (let i = 0; i <= tokens.length; i++) {
    if (i < tokens.length && !['.', '!', '?', ';'].includes(tokens[i]!.text)) continue;
    const end = i < tokens.length && tokens[i]!.text === '?' ? -1 : i;
    if (end > from) sentence(tokens, from, end, mentionAt, self, emit);
    from = i + 1;
  }
}

function sentence(
  tokens: Token[],
  from: number,
  to: number,
  mentionAt: Map<number, EntityMention>,
  self: EntityRef,
  emit: Emit,
): void {
  const s = tokens.slice(from, to);
  // "in May" is a month, not a hedge.
  if (s.some((t) => (NOT_NOW.has(t.key) || NOT_NOW.has(t.lower)) && !(t.capitalized && t.key === 'may'))) return;
  // "I quit my job at IBM", "we sold our house in Leeds", "I miss my old flat": the noun's fact ended, which the
  // clause rules read; a verb of ending anywhere in the sentence leaves it to them.
  const ending = s.some((t, k) => ENDS.has(t.key) || ENDING_CLASSES.has(verbClassAt(s, k)?.kind ?? ''));
  const at = (k: number) => mentionAt.get(from + k);
  for (let k = 0; k < s.length; k++) {
    const key = s[k]!.key;
    if (HOMES.has(key) && !ending && !s.some((t) => STAY_WORDS.has(t.key))) {
      const owner = ownerOf(s, k, at, self, true);
      const place = owner && valueAfter(s, k, at, ['in', 'at', 'near', 'outsid'], placeLike);
      if (owner && place) emit(owner, FACT_RELATIONS.livesIn, conceptRef(place.name, 'place'), false);
    }
    const timed = JOB_TIMES.has(key) && ['first', 'new'].includes(s[k - 1]?.key ?? '');
    if ((JOBS.has(key) || timed) && !ending) {
      // "First week at Monzo done!": a time at a workplace with no owner before it is the writer's.
      const owner = ownerOf(s, k, at, self, false) ?? (timed && !named(k, at) ? self : null);
      const org = owner && valueAfter(s, k, at, ['at', 'with', 'for', 'be', ':'], employer);
      if (owner && org) emit(owner, FACT_RELATIONS.worksAt, conceptRef(org.name, 'organization'), false);
    }
    // "I handed in my resignation at Boots", "I gave my notice at HSBC": the employer, no longer.
    if (
      (key === 'resign' || key === 'notic') &&
      s.slice(0, k).some((t) => ['hand', 'gave', 'give', 'put', 'submit', 'turn'].includes(t.key))
    ) {
      const owner = ownerOf(s, k, at, self, false);
      const org = owner && valueAfter(s, k, at, ['at', 'to'], employer);
      if (owner && org) emit(owner, FACT_RELATIONS.worksAt, conceptRef(org.name, 'organization'), true);
    }
    // "I filed for divorce (from Greg)": the marriage ends.
    if (key === 'divorc' && s[k - 1]?.key === 'for' && s[k - 2]?.key === 'file') {
      const owner = subjectBefore(s, k - 2, at, self);
      const spouse = s[k + 1]?.key === 'from' ? at(k + 2) : undefined;
      if (owner) emit(owner, FACT_RELATIONS.status, conceptRef('divorced'), false);
      if (owner && spouse?.type === 'person')
        emit(owner, FACT_RELATIONS.married, conceptRef(spouse.name, 'person'), true);
    }
    // "We've made Houston our home".
    if (key === 'make' || s[k]!.lower === 'made') {
      const place = at(k + 1);
      const after = place ? place.last - from : -1;
      if (placeLike(place) && SELF_OWNERS.has(s[after]?.lower ?? '') && s[after + 1]?.key === 'home')
        emit(subjectBefore(s, k, at, self) ?? self, FACT_RELATIONS.livesIn, conceptRef(place!.name, 'place'), false);
    }
  }
}

/** Whether a person or place is named before `k`. */
function named(k: number, at: (k: number) => EntityMention | undefined): boolean {
  for (let j = 0; j < k; j++) if (at(j)) return true;
  return false;
}

/** The owner of the noun at `k`: "my"/"our" (the end user), "Kev's", or the subject of a verb of getting before it. */
function ownerOf(
  s: Token[],
  k: number,
  at: (k: number) => EntityMention | undefined,
  self: EntityRef,
  home: boolean,
): EntityRef | null {
  let j = k - 1;
  while (j >= 0 && (CURRENT.has(s[j]!.key) || CURRENT.has(s[j]!.lower))) j--;
  const w = s[j];
  if (!w) return null;
  if (SELF_OWNERS.has(w.lower)) return self;
  if (w.text === "'s") {
    const m = findMentionEnding(j, at);
    return m?.type === 'person' ? { name: m.name, type: 'person' } : null;
  }
  // "(Kev) bought a house in", "(I) signed a lease on a flat in": a getting verb within three words before.
  if (home && ['a', 'an', 'the'].includes(w.lower)) {
    for (let v = j - 1; v >= Math.max(0, j - 4); v--) {
      if (GETS.has(s[v]!.key) || GETS.has(s[v]!.lower)) return subjectBefore(s, v, at, self);
    }
  }
  return null;
}

function findMentionEnding(j: number, at: (k: number) => EntityMention | undefined) {
  for (let k = j - 1; k >= 0 && k >= j - 3; k--) {
    const m = at(k);
    if (m && m.last - m.first + k === j) return m;
  }
  return undefined;
}

/** The subject of the verb at `v`: "I"/"we" or a named person, over a few auxiliaries and adverbs. */
function subjectBefore(
  s: Token[],
  v: number,
  at: (k: number) => EntityMention | undefined,
  self: EntityRef,
): EntityRef | null {
  for (let k = v - 1; k >= 0 && k >= v - 4; k--) {
    const t = s[k]!;
    if (t.lower === 'i' || t.lower === 'we') return self;
    const m = findMentionEnding(k + 1, at);
    if (m?.type === 'person') return { name: m.name, type: 'person' };
    // "Kev bought a house": a capitalised first word the entity rules did not know, right before its verb.
    if (k === 0 && t.capitalized && k === v - 1 && !['he', 'she', 'they', 'it', 'you'].includes(t.lower))
      return { name: t.text, type: 'person' };
    if (t.punct || at(k)) return null;
  }
  return null;
}

/** The value named within four words after the noun, after one of `links`. */
function valueAfter(
  s: Token[],
  k: number,
  at: (k: number) => EntityMention | undefined,
  links: string[],
  fits: (m: EntityMention | undefined) => boolean,
): EntityMention | null {
  for (let j = k + 1; j < s.length && j <= k + 4; j++) {
    if (s[j]!.punct && s[j]!.text !== ':') return null;
    if (!links.includes(s[j]!.key) && !links.includes(s[j]!.text)) continue;
    const m = at(j + 1) ?? (s[j + 1]?.key === 'the' ? at(j + 2) : undefined);
    return m && fits(m) ? m : null;
  }
  return null;
}

/** An organisation, or a capitalised name the entity rules took for a person that is no given name ("Monzo"). */
const employer = (m: EntityMention | undefined): boolean =>
  !!m &&
  (m.type === 'organization' ||
    (m.type === 'person' && m.last - m.first === 1 && !GIVEN_NAMES.has(m.name.toLowerCase())));
