// What a sentence of ending or a statement of now ends in the knowledge timeline (issue 53, session 12): which current
// fact an ending names (engine/nlp/fact-endings.ts), and which an update of a kind replaces (engine/nlp/fact-kinds.ts).
import { type NounKind, nounIs, singularOf } from '../../engine/nlp/index.js';

/** Relations an ending cannot end: an age or a date is replaced, never given up. */
const NOT_ENDED = new Set(['age', 'birthday', 'birth_year', 'anniversary', 'child_count', 'has_count']);
/** Likes and dislikes, said of in passing in any chat, are the rules' to end, not a word's nearby. */
const NOT_ENDED_BY_WORDS = new Set(['likes', 'dislikes']);
/** Heads too general to say which fact a sentence ends ("I left work early" ends no "work out"). */
const GENERAL_HEADS = new Set([
  'work',
  'go',
  'do',
  'make',
  'get',
  'have',
  'thing',
  'time',
  'lot',
  'day',
  'week',
  'year',
]);

/**
 * Whether an ending's words name a current fact's value: a name by any of its words, a concept by its head ("drink
 * tea" by "tea"), or by the key of a word of the ending's object (an activity's value is its words' keys: "drink
 * coffe" named by "cut out coffee"). The slot carries the relation and, for a habit or preference, its aspect.
 */
export function valueNamed(slot: string, target: string, named: Set<string>, objectKeys: string[] = []): boolean {
  const [, relation, activity, dimension] = slot.split('|').map((p) => p.trim());
  if (!relation || NOT_ENDED.has(relation) || NOT_ENDED_BY_WORDS.has(relation)) return false;
  // A habit's time ("every Thursday") is no thing to end: the habit ends when its activity is named.
  if (relation === 'habit' && activity && TIMES.has(dimension ?? ''))
    return valueNamed('|does', `concept:${activity}`, named, objectKeys);
  const kind = target.slice(0, target.indexOf(':'));
  const words = valueWords(target).filter((w) => w.length > 2 && !GENERAL_HEADS.has(w));
  const isNamed = (w: string) => named.has(w) || objectKeys.includes(w);
  if (kind !== 'concept') return words.some(isNamed);
  if (words.length > 0 && isNamed(words[words.length - 1]!)) return true;
  // "No more baking for me" ends "bake bread": an activity of its own verb is named by it in the ending's object.
  const verb = valueWords(target)[0]!;
  return relation === 'does' && !GENERAL_VERBS.has(verb) && objectKeys.includes(verb);
}
/** A habit's dimensions of time (fact-phrases.ts frequencyIn). */
const TIMES = new Set(['frequency', 'time_of_day', 'weekday']);
/** Verbs (keys) of activities too general to be named by the verb alone ("I stopped eating out" ends no "eat meat"). */
const GENERAL_VERBS = new Set([
  'eat',
  'drink',
  'play',
  'go',
  'do',
  'have',
  'make',
  'get',
  'take',
  'see',
  'use',
  'visit',
]);

export const valueWords = (target: string) =>
  target
    .slice(target.indexOf(':') + 1)
    .split(/\s+/)
    .map(singularOf);
/** The single-valued relations of a kind of attribute (fact-kinds.ts), which a statement of now of that kind replaces. */
export const KIND_RELATIONS: Partial<Record<string, RegExp>> = {
  residence: /^lives_in$/,
  employer_job: /^works_(at|as)$/,
  relationship: /^(partner|married_to|relationship_status)$/,
  age_birthday: /^(age|birthday|birth_year)$/,
  favorite_preference: /^(favorite_.*|prefers)$/,
  possession: /^drives$/,
};
const NOUN_KINDS: NounKind[] = ['occupation', 'animal', 'instrument', 'vehicle', 'food', 'sport', 'recreation'];
/**
 * Whether an update can give a fact a new value: a name of the value's type (a place for a home, a figure for an
 * age); a favourite's thing named again ("hip hop is my favourite music now"); for another concept, a different
 * thing of the value's kind (a job for a job: "I'm a dancer now").
 */
export function updateFits(relation: string, target: string, update: { words: string[]; values: string[] }): boolean {
  const type = target.slice(0, target.indexOf(':'));
  if (type !== 'concept') return update.values.includes(VALUE_TYPES[type] ?? type);
  if (relation.startsWith('favorite_'))
    return relation
      .slice(9)
      .split(/[-_ ]/)
      .every((w) => update.words.includes(singularOf(w)));
  const head = valueWords(target).at(-1)!;
  const kind = NOUN_KINDS.find((k) => nounIs(head, k));
  return !!kind && update.words.some((w) => w !== head && nounIs(w, kind));
}
/** The name type an update must carry to give a value of that type (an age is a figure). */
const VALUE_TYPES: Record<string, string> = { quantity: 'number', date: 'number' };
