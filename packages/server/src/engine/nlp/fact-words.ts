// Word lists of the fact rules (facts.ts): stemmed keys (tokens.ts's `key`) unless a comment says otherwise.
import { FACT_RELATIONS } from './fact-model.js';
import { HEDGES, NUMBER_WORDS, PHRASE_ENDS } from './lexicon.js';
import { lookupTable } from '../../core/lookup.js';

export const CLAUSE_BREAK = new Set([
  '.',
  ';',
  ':',
  '!',
  '?',
  ',',
  'but',
  'becaus',
  'so',
  'while',
  'although',
  'though',
  'and',
  'or',
  'which',
  'who',
  'when',
]);
export const LEADING = new Set([
  'well',
  'yeah',
  'yes',
  'oh',
  'now',
  'these',
  'day',
  'today',
  'also',
  'then',
  'honest',
  'honestly',
  'current',
  'actual',
  'just',
  'so',
  'final',
  'recent',
  'lately',
  'sinc',
  'anyway',
  'nowaday',
  'guess',
  'what',
  'well',
  'still',
  'right',
  'realli',
]);
export const ADVERBS = new Set([
  'onli',
  'just',
  'recent',
  'final',
  'now',
  'also',
  'still',
  'current',
  'realli',
  'actual',
  'alreadi',
  'offici',
  'eventu',
  'again',
  'happili',
  'definit',
  'honest',
  'genuin',
  'too',
  'even',
  'both',
  'total',
  'absolut',
  'pretti',
  'veri',
  'usual',
  'normal',
  'typic',
  'general',
  'sometim',
  'often',
  'alway',
  'mostli',
  'each',
  'sinc',
  'newli',
  'proud',
  'all',
  'at',
]);
export const HYPOTHETICAL = new Set([...HEDGES, 'need', 'ask', 'whether', 'whi', 'how', 'do you', 'you']);
export const NEGATORS = new Set(['not', 'never', 'no']);
/** Negations as written (a token's `lower`); a reader adds its own words beside them ("longer", "without"). */
export const WRITTEN_NEGATIONS = ['not', "n't", 'never', 'no', 'nt'] as const;
export const STOP = new Set([
  ...PHRASE_ENDS,
  'nowaday',
  'late',
  'recent',
  'these',
  'day',
  'thi',
  'this',
  'over',
  'instead',
  'either',
  'all',
]);
export const DETERMINERS = new Set([
  'a',
  'an',
  'the',
  'my',
  'our',
  'his',
  'her',
  'their',
  'your',
  'some',
  'this',
  'that',
  'ani',
  'new',
  'own',
]);
export const PRONOUNS = new Set([
  'it',
  'that',
  'this',
  'them',
  'him',
  'her',
  'you',
  'me',
  'us',
  'someth',
  'anyth',
  'everyth',
  'noth',
  'one',
  'what',
  'bit',
  'lot',
]);

/** Nouns naming a person's work; the last word of "a <...> nurse" decides that it is a job. */
export const OCCUPATIONS = new Set(
  `
nurse teacher lawyer attorney doctor physician surgeon dentist engineer developer programmer designer architect accountant banker
chef cook baker barista waiter waitress bartender cashier clerk manager director consultant analyst scientist researcher professor
lecturer tutor student intern firefighter police officer cop soldier pilot driver plumber electrician carpenter mechanic farmer
writer author journalist editor photographer painter artist musician singer actor actress dancer coach trainer therapist
counselor counsellor psychologist pharmacist vet veterinarian librarian secretary receptionist assistant salesman saleswoman
realtor entrepreneur founder ceo cto freelancer contractor translator paramedic caregiver nanny janitor guard technician
administrator economist mathematician programmer marketer recruiter investor broker dietitian nutritionist midwife surgeon
critic reporter producer cleaner gardener landscaper butcher tailor jeweler optician optometrist paralegal judge auditor bookkeeper
courier dispatcher ranger sailor fisherman miner welder roofer plasterer builder bricklayer sculptor illustrator animator filmmaker
screenwriter novelist poet blogger youtuber streamer influencer stylist hairdresser barber beautician physiotherapist physio
chiropractor radiologist anesthesiologist pediatrician psychiatrist worker lifeguard zookeeper biologist chemist physicist geologist
astronomer statistician actuary headteacher dean pastor priest rabbi imam officer detective sheriff solicitor barrister notary
supervisor foreman sommelier housekeeper maid babysitter referee umpire footballer mailman postman trucker surveyor planner
strategist copywriter curator archivist historian linguist interpreter diplomat politician senator mayor councillor councilor
principal headmaster headmistress doula cashier paramedic clergyman minister ambassador
`
    .trim()
    .split(/\s+/),
);
/** "a smoker" -> the activity key of "smoking" (activityKey), so the noun and the verb state one habit. */
export const HABIT_AGENTS: Record<string, string> = lookupTable({
  smoker: 'smoke',
  drinker: 'drink',
  vaper: 'vape',
  gambler: 'gambl',
});
/** States that are a person's work situation rather than a job. */
export const WORK_STATES = new Set(['retired', 'unemployed', 'jobless', 'self-employed']);
/** "got <...>": the relationship status it gives. */
export const STATUS_CHANGES: Record<string, string> = lookupTable({
  marri: 'married',
  divorc: 'divorced',
  engag: 'engaged',
  separ: 'separated',
});
/** Verbs that begin a job ("started a new job at", "took a position with", "landed a role as"). */
export const JOB_STARTS = new Set([
  'start',
  'began',
  'begin',
  'took',
  'take',
  'accept',
  'land',
  'found',
  'got',
  'get',
  'secur',
]);
/** Participles of losing one's job ("fired", "laid off", "let go", "sacked"). */
export const DISMISSED = new Set(['fire', 'laid', 'let', 'sack', 'dismiss']);
export const JOB_WORDS = new Set(['job', 'posit', 'role', 'gig', 'career']);
export const STATUS = new Set(['single', 'married', 'divorced', 'engaged', 'widowed', 'separated', 'dating']);
/** Adjectives that say what a person is, lastingly (a copula with one of them is a fact, "I'm happy" is not). */
export const TRAITS = new Set(
  `
vegetarian vegan pescatarian religious atheist christian muslim jewish buddhist catholic shy introverted extroverted sober
pregnant diabetic celiac lactose-intolerant gay straight bisexual transgender trans queer left-handed right-handed teetotal
`
    .trim()
    .split(/\s+/),
);
/** "my <attribute> is ..." nouns with one value per person. */
export const ATTRIBUTES: Record<string, string> = lookupTable({
  birthday: FACT_RELATIONS.birthday,
  anniversari: FACT_RELATIONS.anniversary,
  job: FACT_RELATIONS.worksAs,
  occup: FACT_RELATIONS.worksAs,
  profess: FACT_RELATIONS.worksAs,
  age: FACT_RELATIONS.age,
  home: FACT_RELATIONS.livesIn,
  // One's dwelling stands for one's home: "our house is in Bristol", "my new apartment in Denver".
  hous: FACT_RELATIONS.livesIn,
  apart: FACT_RELATIONS.livesIn,
  flat: FACT_RELATIONS.livesIn,
  condo: FACT_RELATIONS.livesIn,
});
export const PARTNERS = new Set(['girlfriend', 'boyfriend', 'partner', 'fianc', 'fiance', 'fiancé', 'fiancée']);
export const SPOUSES = new Set(['wife', 'husband', 'spous']);
export const CHILD_WORDS = new Set(['kid', 'child', 'children', 'son', 'daughter', 'babi']);
/** Things with one current instance per person, by the words that name them. */
export const SINGLE_THINGS: Array<[string, Set<string>]> = [
  [
    FACT_RELATIONS.phone,
    new Set(['iphon', 'android', 'samsung', 'pixel', 'galaxi', 'blackberri', 'nokia', 'motorola', 'phone']),
  ],
  [
    FACT_RELATIONS.drives,
    new Set([
      'honda',
      'toyota',
      'ford',
      'tesla',
      'bmw',
      'civic',
      'prius',
      'corolla',
      'mustang',
      'jeep',
      'audi',
      'subaru',
      'volkswagen',
      'vw',
      'kia',
      'hyundai',
      'nissan',
      'chevi',
      'chevrolet',
      'merced',
      'volvo',
      'mazda',
      'car',
      'truck',
      'van',
      'suv',
    ]),
  ],
];
export const LOSS_VERBS = new Set([
  'sold',
  'sell',
  'lost',
  'lose',
  'gave',
  'give',
  'donat',
  'trade',
  'traded',
  'scrap',
  'crash',
  'wreck',
  'total',
]);
export const DEATH_VERBS = new Set(['die', 'pass', 'ran', 'run']);
export const STOP_VERBS = new Set(['quit', 'stop', 'gave', 'give']);
export const LEAVE_VERBS = new Set(['left', 'leav', 'quit']);
export const LIGHT_VERBS = new Set([
  'go',
  'do',
  'done',
  'have',
  'get',
  'take',
  'make',
  'play',
  'to',
  'the',
  'a',
  'my',
  'some',
  'for',
  'out',
  'at',
  'start',
  'begin',
  'keep',
  'continu',
  'tri',
  'love',
  'like',
  'enjoy',
  'still',
]);
export const TIMES_OF_DAY: Record<string, string> = lookupTable({
  morn: 'morning',
  morning: 'morning',
  even: 'evening',
  evening: 'evening',
  night: 'night',
  afternoon: 'afternoon',
  lunchtim: 'lunchtime',
  weekend: 'weekend',
});
export const WEEKDAYS = new Set(['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday']);
export const PERIODS: Record<string, string> = lookupTable({
  day: 'day',
  week: 'week',
  month: 'month',
  year: 'year',
  night: 'day',
  morn: 'day',
});
export const COUNT_WORDS: Record<string, number> = lookupTable({
  onc: 1,
  once: 1,
  twice: 2,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  a: 1,
  an: 1,
  singl: 1,
  no: 0,
});
export const COMMUTE = new Set(['work', 'school', 'offic', 'colleg', 'campus']);
export const MODES: Record<string, string> = lookupTable({
  walk: 'walk',
  bike: 'bike',
  cycl: 'bike',
  ride: 'bike',
  drive: 'car',
  car: 'car',
  bus: 'bus',
  train: 'train',
  subway: 'train',
  metro: 'train',
  tube: 'train',
  run: 'run',
  jog: 'run',
  scooter: 'scooter',
  carpool: 'car',
});

export const HOMES = new Set([
  'apart',
  'flat',
  'hous',
  'room',
  'place',
  'home',
  'condo',
  'studio',
  'cottag',
  'bungalow',
]);
/** Words after a number that make it something else than an age. */
export const NOT_AGE = new Set([
  'minut',
  'hour',
  'second',
  'day',
  'week',
  'month',
  'mile',
  'km',
  'feet',
  'foot',
  'inch',
  'meter',
  'metr',
  'kg',
  'pound',
  'lb',
  'percent',
  '%',
  'time',
  'kid',
  'child',
  'children',
  'of',
  'out',
  'point',
  'hundr',
  'thousand',
  'million',
  'dollar',
  'euro',
  'step',
  'page',
  'book',
  'min',
  'mins',
  'hrs',
  'am',
  'pm',
  "o'clock",
  'th',
  'st',
  'nd',
  'rd',
]);
/** Spelled-out tens and teens (stemmed forms too: "twenti"); units are COUNT_WORDS' one to nine. */
export const TENS: Record<string, number> = lookupTable(
  Object.fromEntries(
    'twenty thirty forty fifty sixty seventy eighty ninety'
      .split(' ')
      .flatMap((w, k) => [[w, 20 + 10 * k] as const, [w.replace(/y$/, 'i'), 20 + 10 * k] as const]),
  ),
);
export const TEENS: Record<string, number> = lookupTable(
  Object.fromEntries(
    'ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen'
      .split(' ')
      .map((w, k) => [w, 10 + k]),
  ),
);
export const unitOf = (word: string | undefined) => {
  const n = word && /^[a-z]+$/.test(word) && NUMBER_WORDS.has(word) ? COUNT_WORDS[word] : undefined;
  return n !== undefined && n >= 1 && n <= 9 ? n : undefined;
};

/** Fields of work left by name ("I left nursing", "gave up law"), stemmed, and who works in them. */
export const FIELDS: Record<string, string> = lookupTable({
  nurs: 'nurse',
  teach: 'teacher',
  law: 'lawyer',
  account: 'accountant',
  medicin: 'doctor',
  bank: 'banker',
  journal: 'journalist',
  engin: 'engineer',
  consult: 'consultant',
  academia: 'academic',
  social: 'social worker',
  polic: 'police officer',
  nursing: 'nurse',
  teaching: 'teacher',
});

/** "I'd take / pick / choose / go for X over Y": a preference. */
export const CHOOSE = new Set(['take', 'pick', 'choos', 'go']);
/** Words between the preferred thing and the other one ("tea over coffee", "tea to coffee", "tea instead of coffee"). */
export const PREFERENCE_LINKS = ['over', 'to', 'than', 'instead'];
/** Nouns for a person one may be seeing without naming them ("seeing a woman from work"). */
export const PERSON_NOUNS = new Set(['woman', 'man', 'guy', 'girl', 'boy', 'someon', 'somebodi', 'ladi', 'gal']);
/** "the sack", "the boot", "the axe": losing one's job, as "fired". */
export const SACKED = new Set(['sack', 'boot', 'axe', 'push']);
/** Ordinals of a new one of a kind ("a third turtle"): how many one has then. */
export const ORDINALS: Record<string, number> = lookupTable({
  second: 2,
  third: 3,
  fourth: 4,
  fifth: 5,
  sixth: 6,
  seventh: 7,
  eighth: 8,
  ninth: 9,
  tenth: 10,
});
/** Verbs of the activities one simply does ("I do pilates", "I play tennis", "I practise judo", "I go to choir"). */
export const ACTIVITY_VERBS = new Set(['do', 'play', 'practic', 'practis', 'go', 'attend']);
/** Words of a stay somewhere rather than a home ("I'm in Rome for a week", "in Paris on business"). */
export const STAY_WORDS = new Set([
  'visit',
  'trip',
  'holiday',
  'vacat',
  'confer',
  'busi',
  'work',
  'night',
  'week',
  'weekend',
  'tonight',
  'today',
  'moment',
  'hospit',
  'wed',
  'funer',
  'tour',
]);

/** Foods by the kind a diet names: "I eat chicken" is eating meat, "I eat cheese" eating dairy. */
export const FOOD_KINDS: Record<string, string> = lookupTable(
  Object.fromEntries([
    ...'meat chicken beef pork bacon steak ham lamb sausage burger turkey veal mince salami pepperoni'
      .split(' ')
      .map((w) => [w, 'meat']),
    ...'dairy cheese milk butter yogurt yoghurt cream'.split(' ').map((w) => [w, 'dairy']),
  ]),
);

/** Relatives and others an end user names by role ("my sister", "my boss"): people whose own facts can change. */
export const KIN = new Set(
  'sister brother mom mum mother dad father husband wife partner girlfriend boyfriend son daughter cousin friend aunt uncle grandma grandmoth grandpa grandfath niec nephew roommat boss neighbour neighbor'.split(
    ' ',
  ),
);
/** Places of work a job is named by ("I work at a call centre", "I don't work at the bakery anymore"). */
export const WORKPLACES = new Set(
  'centr center hospit school bank cafe café shop store restaur factori offic librari hotel bar pub firm compani agenc warehous clinic univers colleg supermarket salon bakeri plant lab council station garag kitchen academi nurseri daycar kindergarten diner pharmaci museum galleri startup corpor ministri newspap magazin airlin laboratori chariti nonprofit breweri wineri dealership theatr theater zoo cinema'.split(
    ' ',
  ),
);

/** Words before a kind of person that say how much, not what ("a real hiker", "a huge runner"). */
export const INTENSIFIERS = new Set([
  'real',
  'true',
  'total',
  'proper',
  'complet',
  'huge',
  'big',
  'massiv',
  'genuin',
  'fulli',
]);
/** First words of "a ..." after a copula that name no kind of person ("a bit tired", "a lot", "a fan of", "a member"). */
export const NOT_A_KIND = new Set('bit lot littl fan big huge great good part member kind sort mix few'.split(' '));
