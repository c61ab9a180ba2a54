// Answer types: a question that names a kind of thing ("which instruments", "what countries",
// "what pets") is answered by a memory naming an instance ("my violin", "Spain", "our puppy"),
// which shares no word with it. Each kind word maps to common instances of it (written by hand,
// searched at `answerType` of the kind word's weight) and, for the kinds the fact model's lexicon
// has, to every single-word instance WordNet lists (nlp/word-kinds.txt: "bassoon", "Tampa",
// "kickboxing"; searched at `answerTypeLexicon`). General English knowledge, not tuned to any
// conversation.
import type { Bm25Field } from './bm25.js';
import { PLACES } from './nlp/lexicon.js';
import { type NounKind, wordsOfKind } from './nlp/word-kinds.js';
import type { RankingWeights } from './ranking-weights.js';
import { analyze, isStopWord, stem } from './text.js';
import { lookupTable } from '../core/lookup.js';

const COUNTRIES = `usa america canada mexico brazil argentina chile peru colombia uk england scotland wales ireland france germany
spain portugal italy netherlands belgium switzerland austria poland sweden norway denmark finland iceland greece turkey russia
ukraine egypt morocco kenya nigeria india china japan korea vietnam thailand indonesia philippines australia zealand israel`;
const US_STATES = `california texas florida oregon colorado jersey ohio michigan georgia arizona nevada utah vermont maine alaska hawaii
washington massachusetts virginia carolina tennessee kentucky minnesota wisconsin illinois indiana iowa missouri montana idaho`;
const CITIES = [...PLACES]
  .filter((p) => !COUNTRIES.includes(p) && !US_STATES.includes(p) && !p.includes(' '))
  .join(' ');

const KINDS: Record<string, string> = lookupTable({
  instrument:
    'guitar violin piano cello drums drum flute clarinet saxophone sax trumpet ukulele harp bass keyboard banjo harmonica trombone',
  sport:
    'soccer football basketball baseball tennis golf hockey volleyball swimming running cycling skiing snowboarding surfing boxing wrestling climbing kayaking skating rugby cricket badminton marathon',
  'martial art': 'karate taekwondo judo jiu-jitsu kickboxing aikido kung boxing',
  pet: 'dog dogs cat cats puppy kitten hamster rabbit bunny parrot bird fish turtle turtles snake horse lizard',
  animal: 'dog cat puppy kitten hamster rabbit parrot bird fish turtle snake horse lizard deer bear fox owl',
  country: COUNTRIES,
  nation: COUNTRIES,
  city: CITIES,
  state: US_STATES,
  food: 'pizza pasta sushi tacos burger salad soup curry ramen steak chicken sandwich pancakes bread cake pie',
  dish: 'pizza pasta sushi tacos burger salad soup curry ramen steak chicken sandwich pancakes',
  dessert: 'cake pie ice cream cookies brownies pudding cupcakes cheesecake',
  hobby:
    'painting drawing reading writing hiking camping fishing gardening cooking baking knitting photography pottery dancing singing swimming running yoga',
  activity:
    'painting drawing reading writing hiking camping fishing gardening cooking baking knitting photography pottery dancing singing swimming running yoga',
  art: 'painting drawing sculpture pottery photography sketch mural',
  genre: 'rock jazz pop classical hip-hop rap country blues metal folk',
  game: 'chess monopoly poker minecraft fortnite zelda cards',
  language: 'english spanish french german italian chinese japanese korean mandarin hindi arabic russian portuguese',
  vehicle: 'car truck bike motorcycle scooter van',
  event: 'parade concert festival conference workshop race party wedding ceremony fundraiser',
  relative: 'mom dad mother father sister brother son daughter kids grandma grandpa aunt uncle cousin',
  season: 'spring summer autumn fall winter',
  flower: 'rose roses tulip sunflower sunflowers daisy lily orchid',
  color: 'red blue green yellow purple pink orange black white',
});

/** Question kind words (singular; the plural is added) -> the lexicon's kinds whose members answer them. */
const LEXICON_KINDS: Record<string, readonly NounKind[]> = lookupTable({
  instrument: ['instrument'],
  sport: ['sport'],
  exercise: ['sport'],
  workout: ['sport'],
  hobby: ['sport', 'recreation'],
  activity: ['sport', 'recreation'],
  pastime: ['sport', 'recreation'],
  pet: ['animal'],
  animal: ['animal'],
  // Not country, nation or state: the lexicon's places are towns and cities as much as countries, and the hand
  // lists name the countries and states.
  city: ['place'],
  town: ['place'],
  place: ['place'],
  destination: ['place'],
  food: ['food', 'meat', 'dairy'],
  dish: ['food', 'meat', 'dairy'],
  meal: ['food', 'meat', 'dairy'],
  snack: ['food'],
  vehicle: ['vehicle'],
  car: ['vehicle'],
  relative: ['relative'],
  'family member': ['relative'],
  job: ['occupation'],
  career: ['occupation'],
  profession: ['occupation'],
  occupation: ['occupation'],
});

/** The stems a kind word and its plural analyse to ("martial arts" -> "martial art"). */
const keysOf = (kind: string) => [...new Set([analyze(kind).join(' '), analyze(`${kind}s`).join(' ')])];

/** Stem of a kind word (singular and plural both stem to it; two words joined by a space) -> stems of its instances. */
export const ANSWER_TYPES: ReadonlyMap<string, readonly string[]> = new Map(
  Object.entries(KINDS).flatMap(([kind, words]) => {
    const instances = [...new Set(analyze(words))];
    return keysOf(kind).map((k) => [k, instances] as [string, string[]]);
  }),
);

const lexiconKinds = new Map(
  Object.entries(LEXICON_KINDS).flatMap(([kind, kinds]) => keysOf(kind).map((k) => [k, kinds] as const)),
);
const PLAIN_WORD = /^[a-z]+$/;
const membersOfKind = new Map<NounKind, readonly string[]>();
const lexiconInstances = new Map<string, readonly string[]>();

/**
 * The stems of the lexicon's single-word members of the kinds a kind word names, less the hand-written
 * instances (searched at their own weight); built on first use of a kind word.
 */
function lexiconInstancesOf(key: string): readonly string[] {
  const kinds = lexiconKinds.get(key);
  if (!kinds) return [];
  const known = lexiconInstances.get(key);
  if (known) return known;
  const hand = new Set(ANSWER_TYPES.get(key));
  const out = new Set<string>();
  for (const kind of kinds) {
    let stems = membersOfKind.get(kind);
    if (!stems) {
      stems = [
        ...new Set(
          // Single plain words only: the index holds words, not phrases ("ice cream", "jiu-jitsu").
          [...wordsOfKind(kind)].filter((word) => PLAIN_WORD.test(word) && !isStopWord(word)).map(stem),
        ),
      ];
      membersOfKind.set(kind, stems);
    }
    for (const s of stems) if (!hand.has(s)) out.add(s);
  }
  const instances = [...out];
  lexiconInstances.set(key, instances);
  return instances;
}

/** Whether a key (a stem, or two joined by a space) names a kind of either source. */
const isKindWord = (key: string): boolean => ANSWER_TYPES.has(key) || lexiconKinds.has(key);

/** The lexicon's instances of a kind a query searches at most. */
const LEXICON_INSTANCES = 24;

/**
 * A query's answer types: each kind word ("instruments", "martial arts": two words naming a kind are read as one, not
 * as "art") adds to `textTerms` the instances of its kind the index's text holds, the hand-written ones at
 * `answerType` of its weight and the lexicon's others at `answerTypeLexicon`. `terms` are the query's analysed
 * terms in order, `qTerms` their counts; `mutations` tells when the index changed.
 */
export function addAnswerTypes(
  text: Bm25Field,
  mutations: number,
  w: RankingWeights,
  terms: readonly string[],
  qTerms: ReadonlyMap<string, number>,
  textTerms: Map<string, number>,
): void {
  const add = (instances: readonly string[], weight: number) => {
    for (const instance of instances)
      if (!qTerms.has(instance)) textTerms.set(instance, (textTerms.get(instance) ?? 0) + weight);
  };
  const seen = new Set<string>();
  for (let i = 0; i < terms.length; i++) {
    const pair = i + 1 < terms.length ? `${terms[i]} ${terms[i + 1]}` : '';
    const key = pair && isKindWord(pair) ? pair : terms[i]!;
    if (key === pair) i++;
    if (seen.has(key) || !isKindWord(key)) continue;
    seen.add(key);
    if (w.answerType > 0) add(heldInstances(text, mutations, key, ANSWER_TYPES.get(key) ?? []), w.answerType);
    if (w.answerTypeLexicon > 0) {
      const lexicon = lexiconInstancesOf(key);
      add(heldInstances(text, mutations, `lexicon:${key}`, lexicon, LEXICON_INSTANCES), w.answerTypeLexicon);
    }
  }
}

/** Per index, the instances of a kind it holds, until it changes: the lexicon lists thousands of a kind ("pets"). */
const heldByIndex = new WeakMap<Bm25Field, { mutations: number; byKind: Map<string, readonly string[]> }>();

/**
 * The instances of a kind the index holds; at most `most`, the rarest (the most specific, and the shortest postings:
 * a large index holds hundreds of the lexicon's animals, each a term to score).
 */
function heldInstances(
  text: Bm25Field,
  mutations: number,
  kind: string,
  instances: readonly string[],
  most = Number.POSITIVE_INFINITY,
): readonly string[] {
  let held = heldByIndex.get(text);
  if (!held || held.mutations !== mutations) {
    held = { mutations, byKind: new Map() };
    heldByIndex.set(text, held);
  }
  let out = held.byKind.get(kind);
  if (!out) {
    out = instances.filter((instance) => text.df(instance) > 0);
    if (out.length > most) out = [...out].sort((a, b) => text.df(a) - text.df(b)).slice(0, most);
    held.byKind.set(kind, out);
  }
  return out;
}
