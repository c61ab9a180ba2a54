// Answer types: a question that names a kind of thing ("which instruments", "what countries",
// "what pets") is answered by a memory naming an instance ("my violin", "Spain", "our puppy"),
// which shares no word with it. Each kind word maps to common instances of it; MemoryIndex searches
// those it holds at `answerType` of the kind word's weight. General English knowledge, not tuned to
// any conversation.
import { PLACES } from './nlp/lexicon.js';
import { analyze } from './text.js';

const COUNTRIES = `usa america canada mexico brazil argentina chile peru colombia uk england scotland wales ireland france germany
spain portugal italy netherlands belgium switzerland austria poland sweden norway denmark finland iceland greece turkey russia
ukraine egypt morocco kenya nigeria india china japan korea vietnam thailand indonesia philippines australia zealand israel`;
const US_STATES = `california texas florida oregon colorado jersey ohio michigan georgia arizona nevada utah vermont maine alaska hawaii
washington massachusetts virginia carolina tennessee kentucky minnesota wisconsin illinois indiana iowa missouri montana idaho`;
const CITIES = [...PLACES]
  .filter((p) => !COUNTRIES.includes(p) && !US_STATES.includes(p) && !p.includes(' '))
  .join(' ');

const KINDS: Record<string, string> = {
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
};

/** Stem of a kind word (singular and plural both stem to it) -> stems of its instances. */
export const ANSWER_TYPES: ReadonlyMap<string, readonly string[]> = new Map(
  Object.entries(KINDS).flatMap(([kind, words]) => {
    const key = analyze(kind).join(' ');
    const plural = analyze(`${kind}s`).join(' ');
    const instances = [...new Set(analyze(words))];
    return [...new Set([key, plural])].map((k) => [k, instances] as [string, string[]]);
  }),
);
