// The words a denial and the statement it ends are compared by (knowledge.ts#denies): one word for one thing, and
// the kinds a denial may name by a member.
import { lookupTable } from '../../core/lookup.js';
import { type NounKind, nounIs, VEHICLES } from '../../engine/nlp/index.js';

export const TIME_WORDS = new Set([
  'day',
  'week',
  'month',
  'year',
  'ago',
  'today',
  'yesterday',
  'tonight',
  'last',
  'now',
]);
/** One word for one thing ("bike" and "bicycle"), in the singular. */
export const thingWord = (w: string) => {
  const one = w.length > 3 && w.endsWith('s') && !/(ss|us|is)$/.test(w) ? w.slice(0, -1) : w;
  return SAME_THING[one] ?? one;
};
const SAME_THING: Record<string, string> = lookupTable({
  bike: 'bicycle',
  motorbike: 'motorcycle',
  telly: 'tv',
  television: 'tv',
  automobile: 'car',
  cellphone: 'phone',
  smartphone: 'phone',
  kitty: 'cat',
  doggy: 'dog',
  licence: 'license',
});
/** A kind a denial names by its word ("I don't have any pets") and the lexicon's kind of its members (WordNet's). */
const KIND_WORDS: Record<string, NounKind> = lookupTable({
  pet: 'animal',
  animal: 'animal',
  vehicle: 'vehicle',
  instrument: 'instrument',
});
export const isOfKind = (member: string, kind: string) => !!KIND_WORDS[kind] && nounIs(member, KIND_WORDS[kind]);
/** Members of a kind a denial may name: a puppy is a dog and a pet. */
export const KIND_OF: Record<string, string[]> = lookupTable({
  ...Object.fromEntries(
    'dog cat puppy kitten turtle tortoise hamster rabbit bunny parrot bird fish goldfish snake lizard guinea horse'
      .split(' ')
      .map((w) => [w, ['pet', 'animal']]),
  ),
  puppy: ['dog', 'pet', 'animal'],
  kitten: ['cat', 'pet', 'animal'],
  bicycle: ['vehicle'],
  car: ['vehicle'],
  motorcycle: ['vehicle'],
  // A brand or model is its kind of vehicle: "I sold my car" ends "I drive a Corolla".
  ...Object.fromEntries(Object.entries(VEHICLES).map(([name, kind]) => [name, [kind, 'vehicle']])),
});
