// Implied attribute slots (issue 53, session 16): a home or an employer a statement implies without a verb of living
// or working ("ugh the new landlord here in leeds", "my shift at the hospital ran late", "we closed on the house in
// Columbus"). A slot is recognised by a cue vocabulary written by category (fact-slot-words.ts: the things, people
// and events that surround a home or a job), not from any set's sentences, and its value by type: a place name for
// a home, an organisation or a workplace noun for an employer. Words of modality (a visit, a plan, a condition, a
// past) keep the near misses compatible. A different value of the slot, stated later, is then a change (knowledge.ts).
// The word one names one's partner by implies a relationship status the same way ("my fiancée": engaged).
import { canonicalName, type EntityMention } from './entities.js';
import { hedged, statementsOf } from './fact-endings.js';
import { ELSEWHERE } from './fact-changes.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import { someoneElses, whose } from './fact-world.js';
import {
  HOME_CUES,
  HOME_DEIXIS,
  JOB_CUES,
  JOB_ENDED,
  NEW_JOB,
  NOT_NOW,
  OLD_BEFORE,
  OLD_HOME,
  PARTED,
  PARTNER_PRAISE,
  PARTNER_STATUS,
  ORIGIN,
  SLOT_HEDGES,
  STAY_SPANS,
  STATUS_HEDGES,
  STAY_UNITS,
  WORK_HERE,
} from './fact-slot-words.js';
import { WORKPLACES, WRITTEN_NEGATIONS } from './fact-words.js';
import { ORGANIZATIONS, speaksOfFuture } from './lexicon.js';
import type { Token } from './tokens.js';
import { FIRST_WORDS, knownPlace } from './world.js';

const NEGATORS = new Set<string>([...WRITTEN_NEGATIONS, 'longer']);
/** Words that link a place to what is said of it ("in Leeds", "to Leeds", "the Leeds flat"). */
const PLACE_LINKS = new Set(['in', 'to', 'into', 'from', 'near', 'outside', 'around']);
/** Possessors other than the writer ("my sister's flat in Leeds", "his office at Google"). */
const OTHERS = new Set(['he', 'she', 'they', 'his', 'her', 'their', 'you', 'your', "'s"]);
/** How far from the value a cue may stand, before and after it. */
const CUE_BEFORE = 7;
const CUE_AFTER = 5;
const ANY_CUE = new Set([...HOME_CUES, ...JOB_CUES, ...PARTNER_STATUS.keys(), 'here']);

const titled = (name: string) => name.replace(/\b\p{L}/gu, (c) => c.toUpperCase());
const cueIn = (words: Token[], cues: ReadonlySet<string>) => words.some((t) => cues.has(t.lower) || cues.has(t.key));

/** A plan, a wish, a condition, a visit or a past: nothing that holds now. */
function modal(sentence: Token[]): boolean {
  if (hedged(sentence) || speaksOfFuture(sentence.map((t) => t.key))) return true;
  return sentence.some((t) => SLOT_HEDGES.has(t.lower) || SLOT_HEDGES.has(t.key) || NOT_NOW.has(t.lower));
}

/** "for two weeks", "for a few days", "this week": a stay, not a home (a job may start this week). */
const stay = (sentence: Token[]) =>
  sentence.some(
    (t, k) => STAY_UNITS.has(t.lower) && sentence.slice(Math.max(0, k - 3), k).some((s) => STAY_SPANS.has(s.lower)),
  );

/** A text's mentions by the token each starts at (one map a text: a look-up a sentence would be quadratic). */
type MentionAt = Map<number, EntityMention>;

/** Places named in a sentence: the entity rules' and the gazetteer's lower-case ones after a link word. */
function placesIn(sentence: Token[], at: number, mentionAt: MentionAt): Array<{ i: number; n: number; name: string }> {
  const out: Array<{ i: number; n: number; name: string }> = [];
  const taken = new Set<number>();
  for (let i = 0; i < sentence.length; i++) {
    const m = mentionAt.get(at + i);
    if (m?.type !== 'place') continue;
    out.push({ i, n: m.last - m.first, name: m.name });
    for (let k = m.first; k < m.last; k++) taken.add(k - at);
  }
  for (let i = 0; i < sentence.length; i++) {
    if (taken.has(i) || !FIRST_WORDS.has(sentence[i]!.lower)) continue;
    for (let n = 3; n >= 1; n--) {
      const words = sentence.slice(i, i + n);
      if (words.length < n) continue;
      const name = words.map((t) => t.lower).join(' ');
      if (!knownPlace(name)) continue;
      // A lower-case name only after a link word or before a home ("in leeds", "the pittsburgh apartment").
      const linked = PLACE_LINKS.has(sentence[i - 1]?.lower ?? '') || HOME_CUES.has(sentence[i + n]?.lower ?? '');
      if (linked || words[0]!.capitalized) out.push({ i, n, name: titled(name) });
      i += n - 1;
      break;
    }
  }
  return out.sort((a, b) => a.i - b.i);
}

/** The home a sentence implies: one place with a cue of home near it and no word of leaving or of origin. */
function homeOf(sentence: Token[], at: number, mentionAt: MentionAt): { i: number; name: string } | null {
  const homes = new Map<string, number>();
  for (const p of placesIn(sentence, at, mentionAt)) {
    const before = sentence.slice(Math.max(0, p.i - CUE_BEFORE), p.i);
    const after = sentence.slice(p.i + p.n, p.i + p.n + CUE_AFTER);
    const prev = sentence[p.i - 1]?.lower ?? '';
    const deixis = HOME_DEIXIS.has(`${sentence[p.i - 2]?.lower} ${prev}`);
    if (!deixis && !cueIn(before, HOME_CUES) && !cueIn(after, HOME_CUES)) continue;
    // "moved from Denver", "left Lisbon", "the old flat in Leeds", "the Pittsburgh apartment is empty now";
    // "my new commute from Fort Worth" names the home it starts from.
    const commute = before.at(-2)?.key === 'commut';
    if (ORIGIN.has(prev) && !commute) continue;
    // "I work in Swansea", "my office in Sydney": a place of work, not a home.
    if (cueIn(sentence.slice(Math.max(0, p.i - 3), p.i), WORK_HERE)) continue;
    if (cueIn(before, OLD_HOME) || cueIn(after, OLD_HOME) || cueIn(before, OLD_BEFORE)) continue;
    // Another's home: "my sister's flat in Leeds", "his place in Austin".
    if (sentence.slice(Math.max(0, p.i - 4), p.i).some((t) => OTHERS.has(t.lower))) continue;
    homes.set(p.name, p.i);
  }
  // Two homes in one sentence are a move told in a way these words cannot order.
  if (homes.size !== 1) return null;
  const [name, i] = [...homes][0]!;
  return { i, name };
}

/** An employer named after "at"/"for"/"with": an organisation, a name the entity rules took for a person, a workplace. */
function employerAt(sentence: Token[], at: number, mentionAt: MentionAt, i: number): EntityRef | null {
  const link = sentence[i - 1]?.lower;
  if (link !== 'at' && link !== 'for' && link !== 'with' && link !== 'joined') return null;
  const m = mentionAt.get(at + i);
  if (m && (m.type === 'organization' || (m.type === 'person' && link === 'at')))
    return { name: m.name, type: 'organization' };
  if (m) return null;
  const name = sentence[i]!.lower;
  if (ORGANIZATIONS.has(name)) return { name: canonicalName(name, 'organization'), type: 'organization' };
  // "at the hospital", "for a small law firm": the workplace noun and the words of its kind before it.
  let k = i;
  if (['the', 'a', 'an', 'my', 'our', 'this'].includes(sentence[k]?.lower ?? '')) k++;
  const words: string[] = [];
  for (let n = 0; n < 3 && sentence[k + n] && !sentence[k + n]!.punct; n++) {
    const t = sentence[k + n]!;
    words.push(t.lower);
    if (WORKPLACES.has(t.key)) {
      const kept = words.filter((w) => !['small', 'big', 'new', 'local', 'little', 'huge', 'tiny'].includes(w));
      return { name: kept.join(' '), type: 'concept' };
    }
  }
  return null;
}

/** The employer a sentence implies: a job cue just before an employer ("my boss at Tesco", "first day at the bank"). */
function employerOf(sentence: Token[], at: number, mentionAt: MentionAt): { i: number; value: EntityRef } | null {
  const found = new Map<string, { i: number; value: EntityRef }>();
  for (let i = 1; i < sentence.length; i++) {
    const value = employerAt(sentence, at, mentionAt, i);
    if (!value) continue;
    const before = sentence.slice(Math.max(0, i - 5), i);
    // A job ended ("quit my job at IBM", "last day at Tesco") is the ending rules' to read.
    if (!cueIn(before, JOB_CUES) || cueIn(sentence.slice(Math.max(0, i - 6), i), JOB_ENDED)) continue;
    if (sentence.slice(Math.max(0, i - 4), i).some((t) => OTHERS.has(t.lower))) continue;
    found.set(value.name.toLowerCase(), { i, value });
  }
  return found.size === 1 ? [...found.values()][0]! : null;
}

/** "Started a new job", "my new coworkers": a job begun whose employer is not named (the token of "new"). */
function newJobAt(sentence: Token[]): number {
  return sentence.findIndex(
    (t, k) =>
      t.lower === 'new' &&
      NEW_JOB.has(sentence[k + 1]?.lower ?? '') &&
      ['my', 'a', 'our'].includes(sentence[k - 1]?.lower ?? '') &&
      !cueIn(sentence.slice(0, k), JOB_ENDED),
  );
}

/** The relationship status the word naming one's partner implies: "my girlfriend", "my lovely wife", "my fiancé Tom". */
function statusOf(sentence: Token[]): { i: number; value: string } | null {
  let found: { i: number; value: string } | null = null;
  for (let k = 1; k < sentence.length; k++) {
    const value = PARTNER_STATUS.get(sentence[k]!.lower);
    if (!value) continue;
    const mine =
      sentence[k - 1]!.lower === 'my' ||
      (PARTNER_PRAISE.has(sentence[k - 1]!.lower) && sentence[k - 2]?.lower === 'my');
    if (!mine) continue;
    // "my wife ... my fiancé": two statuses in one sentence are a story these words cannot order.
    if (found && found.value !== value) return null;
    found = { i: k, value };
  }
  if (!found || cueIn(sentence, PARTED)) return null;
  // "my friend's girlfriend", "her husband": the word must be the writer's own ("my" just before it).
  return found;
}

/** The homes and employers a text's statements imply, for the writer or the person they speak of. */
export function slotFacts(tokens: Token[], mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  let mentionAt: MentionAt | null = null;
  for (const { sentence, at } of statementsOf(tokens)) {
    // Most sentences name no home and no work: a cue word of either is needed before anything else is read.
    if (!cueIn(sentence, ANY_CUE)) continue;
    mentionAt ??= new Map(mentions.map((m) => [m.first, m]));
    const found = homeOf(sentence, at, mentionAt);
    const home = found && !stay(sentence) ? found : null;
    const named = employerOf(sentence, at, mentionAt);
    // A job begun at an employer not named ends the one stated before, as a move to a place not named does.
    const unnamed = named ? -1 : newJobAt(sentence);
    const job = named ?? (unnamed >= 0 ? { i: unnamed, value: { name: ELSEWHERE, type: 'concept' } } : null);
    // A partner's word holds through a trip or a visit ("me and my girlfriend went to Paris"), not through a wish.
    const status = statusOf(sentence);
    if (status && !cueIn(sentence, STATUS_HEDGES))
      emit(self, FACT_RELATIONS.status, { name: status.value, type: 'concept' }, false);
    if ((!home && !job) || modal(sentence)) continue;
    for (const [slot, relation, value, cues] of [
      [home?.i, FACT_RELATIONS.livesIn, home ? { name: home.name, type: 'place' } : null, HOME_CUES],
      [job?.i, FACT_RELATIONS.worksAt, job?.value ?? null, JOB_CUES],
    ] as const) {
      if (slot === undefined || !value) continue;
      if (sentence.slice(0, slot).some((t) => NEGATORS.has(t.lower))) continue;
      if (someoneElses(sentence.slice(0, slot), cues)) continue;
      const subject = whose(sentence, at, slot, mentions, self);
      // "my boss at Tesco", "my roommate in Chicago": a person of the writer's job or home, so the writer's.
      const ofSlot = subject && /^my \S+$/.test(subject.name) && cues.has(subject.name.slice(3));
      if (subject) emit(ofSlot ? self : subject, relation, value, false);
    }
  }
}
