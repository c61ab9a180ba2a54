// Predicates the copula and the verb readers share (split from fact-statements.ts, session 15): a job lost, a partner
// dated, a habit stopped, the employer named after "at".
import type { EntityMention } from './entities.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import { activityKey, concept, conceptRef, phrase } from './fact-phrases.js';
import { PRONOUNS, STOP } from './fact-words.js';
import { GIVEN_NAMES } from './lexicon.js';
import type { Token } from './tokens.js';

export function lostJob(
  rest: Token[],
  at: (k: number) => number,
  owner: EntityRef,
  mentionAt: Map<number, EntityMention>,
  emit: Emit,
): void {
  const job = rest.findIndex((t) => t.key === 'job');
  if (job < 0) return;
  // Out of work now, whatever the job was.
  emit(owner, FACT_RELATIONS.worksAs, conceptRef('unemployed'), false);
  const link = rest[job + 1]?.key;
  if (link === 'at' || link === 'with') {
    const m = mentionAt.get(at(job + 2)) ?? mentionAt.get(at(job + 3));
    if (m)
      emit(
        owner,
        FACT_RELATIONS.worksAt,
        conceptRef(m.name, m.type === 'organization' ? 'organization' : 'concept'),
        true,
      );
    else {
      const p = phrase(rest, job + 2, 3);
      if (p.words.length) emit(owner, FACT_RELATIONS.worksAt, concept(p.words), true);
    }
  } else if (link === 'as') {
    const p = phrase(rest, job + 2, 3);
    if (p.words.length) emit(owner, FACT_RELATIONS.worksAs, concept(p.words), true);
  }
}

/** "seeing a guy called Omar", "dating Theo": the person is the subject's partner. */
export function dating(
  rest: Token[],
  at: (k: number) => number,
  owner: EntityRef,
  neg: boolean,
  mentionAt: Map<number, EntityMention>,
  emit: Emit,
): boolean {
  for (let k = 1; k <= 5 && k < rest.length; k++) {
    const m = mentionAt.get(at(k));
    if (m?.type === 'person') {
      emit(owner, FACT_RELATIONS.partner, conceptRef(m.name, 'person'), neg);
      if (!neg) emit(owner, FACT_RELATIONS.status, conceptRef('dating'), false);
      return true;
    }
  }
  return false;
}

/** "stopped going to the gym", "gave up smoking": the activity is no longer done. */
export function stopped(rest: Token[], owner: EntityRef, emit: Emit): void {
  const from = rest[1]?.key === 'up' ? 2 : 1;
  const gerund = rest[from];
  if (gerund && /ing$/.test(gerund.lower)) {
    const until = rest.findIndex((t, k) => k > from && STOP.has(t.key) && !['to', 'the', 'at'].includes(t.key));
    emit(owner, FACT_RELATIONS.does, conceptRef(activityKey(rest.slice(from, until < 0 ? undefined : until))), true);
  }
}

/** "at Bosch", "at a primary school" from `k` (the "at"): where the subject works. */
export function worksAtAfter(
  rest: Token[],
  k: number,
  at: (k: number) => number,
  owner: EntityRef,
  neg: boolean,
  mentionAt: Map<number, EntityMention>,
  emit: Emit,
): void {
  const employer = employerAt(k + 1, at, mentionAt);
  if (employer) emit(owner, FACT_RELATIONS.worksAt, conceptRef(employer, 'organization'), neg);
  else if (!mentionAt.get(at(k + 1)) && !mentionAt.get(at(k + 2))) {
    const p = phrase(rest, k + 1, 3);
    if (p.words.length && !PRONOUNS.has(p.words[0]!.key)) emit(owner, FACT_RELATIONS.worksAt, concept(p.words), neg);
  }
}

/**
 * The employer named at `k` (or after "the" there): an organisation, or a one-word capitalised name the entity rules
 * took for a person that is no given name ("a shelf stacker at Aldi").
 */
export function employerAt(k: number, at: (k: number) => number, mentionAt: Map<number, EntityMention>): string | null {
  const m = mentionAt.get(at(k)) ?? mentionAt.get(at(k + 1));
  if (m?.type === 'organization') return m.name;
  if (m?.type === 'person' && m.last - m.first === 1 && !GIVEN_NAMES.has(m.name.toLowerCase())) return m.name;
  return null;
}
