// The fact model (issue 53): relation names and the shape of what the fact rules emit.

/** Relation names the fact rules produce; each is used only when the ontology declares it. */
export const FACT_RELATIONS = {
  age: 'age',
  birthYear: 'birth_year',
  birthday: 'birthday',
  anniversary: 'anniversary',
  worksAs: 'works_as',
  worksAt: 'works_at',
  livesIn: 'lives_in',
  is: 'is',
  status: 'relationship_status',
  partner: 'partner',
  married: 'married_to',
  children: 'children',
  childCount: 'child_count',
  count: 'has_count',
  has: 'has',
  drives: 'drives',
  phone: 'phone',
  prefers: 'prefers',
  does: 'does',
  habit: 'habit',
  likes: 'likes',
  religion: 'religion',
  speaks: 'speaks',
  supports: 'supports',
  favoritePrefix: 'favorite_',
} as const;

/**
 * The name prefix of a subject that is a bare pronoun ("she") in a text that names no one: the person it stands
 * for is the one the end user's memory before spoke of (knowledge.ts `pronounsNamed`).
 */
export const PRONOUN_SUBJECT = '@pronoun:';

const MALE_KIN = /^my (brother|dad|father|husband|son|boyfriend|uncle|grandad|grandfather|nephew|fianc[eé])$/;
const FEMALE_KIN = /^my (sister|mum|mom|mother|wife|daughter|girlfriend|aunt|grandma|grandmother|niece|fianc[eé]e)$/;
/** "my parents", "my kids"; not "my boss". */
const PLURAL_KIN = /^my \w+[^s]s$/;

/** Whether "he", "she" or "they" can stand for a person so named (a kin word's gender and number). */
export function pronounFits(pronoun: string, name: string): boolean {
  const plural = PLURAL_KIN.test(name);
  if (pronoun === 'they') return plural;
  if (plural) return false;
  return pronoun === 'he' ? !FEMALE_KIN.test(name) : !MALE_KIN.test(name);
}

/** A subject or a value (extract.ts's EntityRef; not imported, so the two files do not import each other). */
export interface EntityRef {
  name: string;
  type: string;
}

/** `past`: a denial from "used to" (true once, not now). */
export type Emit = (
  subject: EntityRef,
  relation: string,
  object: EntityRef,
  negated: boolean,
  aspect?: string,
  past?: boolean,
) => void;
