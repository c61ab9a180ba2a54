// Personal facts as attribute-value statements about a subject (issue 53): who says what about whom,
// with polarity. Clause by clause, a subject ("I", "we", a named person, "my wife", "Mel's") and the
// predicate after it are matched against a few statement forms: a copula ("I'm 30", "I'm a nurse",
// "I'm not vegetarian"), a possessive attribute ("my birthday is in May"), a preference ("I prefer
// tea to coffee"), a possession and its loss ("I sold my piano"), a habit with a frequency or a time
// ("I swim twice a week") and its end ("I quit swimming"), a job or a home left ("I left Google").
// Deterministic and offline; complements the cue relations of extract.ts.
import type { EntityMention } from './entities.js';
import { britishToAmerican, GIVEN_NAMES, MONTHS, NUMBER_WORDS } from './lexicon.js';
import type { Token } from './tokens.js';

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
  has: 'has',
  drives: 'drives',
  phone: 'phone',
  prefers: 'prefers',
  does: 'does',
  habit: 'habit',
  likes: 'likes',
  favoritePrefix: 'favorite_',
} as const;

/** A subject or a value (extract.ts's EntityRef; not imported, so the two files do not import each other). */
interface EntityRef {
  name: string;
  type: string;
}

type Emit = (subject: EntityRef, relation: string, object: EntityRef, negated: boolean, aspect?: string) => void;

const CLAUSE_BREAK = new Set([
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
const LEADING = new Set([
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
const ADVERBS = new Set([
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
const HYPOTHETICAL = new Set([
  'want',
  'wanna',
  'plan',
  'hope',
  'gonna',
  'might',
  'would',
  'could',
  'should',
  'if',
  'mayb',
  'use',
  'wish',
  'will',
  'may',
  'tri',
  'think',
  'consid',
  'dream',
  'need',
  'ask',
  'whether',
  'whi',
  'how',
  'do you',
  'you',
]);
const NEGATORS = new Set(['not', 'never', 'no']);
const STOP = new Set([
  ',',
  '.',
  ';',
  ':',
  '!',
  '?',
  '(',
  ')',
  '"',
  'and',
  'but',
  'becaus',
  'so',
  'sinc',
  'when',
  'while',
  'with',
  'for',
  'at',
  'in',
  'on',
  'who',
  'that',
  'which',
  'where',
  'to',
  'last',
  'next',
  'yesterday',
  'today',
  'tomorrow',
  'anymor',
  'ani',
  'too',
  'as',
  'after',
  'befor',
  'dure',
  'than',
  'or',
  'now',
  'again',
  'from',
  'about',
  'of',
  'until',
  'anyway',
  'though',
  'although',
  'there',
  'here',
  'these',
  'day',
  'lot',
  'thi',
  'this',
  'over',
  'instead',
  'either',
  'like',
  'by',
  'all',
  'name',
  'call',
]);
const DETERMINERS = new Set([
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
const PRONOUNS = new Set([
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
const OCCUPATIONS = new Set(
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
const HABIT_AGENTS: Record<string, string> = { smoker: 'smoke', drinker: 'drink', vaper: 'vape', gambler: 'gambl' };
/** States that are a person's work situation rather than a job. */
const WORK_STATES = new Set(['retired', 'unemployed', 'jobless', 'self-employed']);
/** "got <...>": the relationship status it gives. */
const STATUS_CHANGES: Record<string, string> = {
  marri: 'married',
  divorc: 'divorced',
  engag: 'engaged',
  separ: 'separated',
};
/** Verbs that begin a job ("started a new job at", "took a position with", "landed a role as"). */
const JOB_STARTS = new Set([
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
const DISMISSED = new Set(['fire', 'laid', 'let', 'sack', 'dismiss']);
const JOB_WORDS = new Set(['job', 'posit', 'role', 'gig', 'career']);
const STATUS = new Set(['single', 'married', 'divorced', 'engaged', 'widowed', 'separated', 'dating']);
/** Adjectives that say what a person is, lastingly (a copula with one of them is a fact, "I'm happy" is not). */
const TRAITS = new Set(
  `
vegetarian vegan pescatarian religious atheist christian muslim jewish buddhist catholic shy introverted extroverted sober
pregnant diabetic celiac lactose-intolerant gay straight bisexual transgender trans queer left-handed right-handed teetotal
`
    .trim()
    .split(/\s+/),
);
/** "my <attribute> is ..." nouns with one value per person. */
const ATTRIBUTES: Record<string, string> = {
  birthday: FACT_RELATIONS.birthday,
  anniversari: FACT_RELATIONS.anniversary,
  job: FACT_RELATIONS.worksAs,
  occup: FACT_RELATIONS.worksAs,
  profess: FACT_RELATIONS.worksAs,
  age: FACT_RELATIONS.age,
  home: FACT_RELATIONS.livesIn,
};
const PARTNERS = new Set(['girlfriend', 'boyfriend', 'partner', 'fianc', 'fiance', 'fiancé', 'fiancée']);
const SPOUSES = new Set(['wife', 'husband', 'spous']);
const CHILD_WORDS = new Set(['kid', 'child', 'children', 'son', 'daughter', 'babi']);
/** Things with one current instance per person, by the words that name them. */
const SINGLE_THINGS: Array<[string, Set<string>]> = [
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
const LOSS_VERBS = new Set([
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
const DEATH_VERBS = new Set(['die', 'pass', 'ran', 'run']);
const STOP_VERBS = new Set(['quit', 'stop', 'gave', 'give']);
const LEAVE_VERBS = new Set(['left', 'leav', 'quit']);
const LIGHT_VERBS = new Set([
  'go',
  'do',
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
const TIMES_OF_DAY: Record<string, string> = {
  morn: 'morning',
  morning: 'morning',
  even: 'evening',
  evening: 'evening',
  night: 'night',
  afternoon: 'afternoon',
  lunchtim: 'lunchtime',
  weekend: 'weekend',
};
const WEEKDAYS = new Set(['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday']);
const PERIODS: Record<string, string> = {
  day: 'day',
  week: 'week',
  month: 'month',
  year: 'year',
  night: 'day',
  morn: 'day',
};
const COUNT_WORDS: Record<string, number> = {
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
};
const COMMUTE = new Set(['work', 'school', 'offic', 'colleg', 'campus']);
const MODES: Record<string, string> = {
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
};

const numberOf = (t: Token | undefined): number | null => {
  if (!t) return null;
  if (/^\d+$/.test(t.text)) return Number(t.text);
  if (t.lower in COUNT_WORDS && NUMBER_WORDS.has(t.lower)) return COUNT_WORDS[t.lower]!;
  return null;
};

interface Clause {
  tokens: Token[];
  /** Index in the sentence's tokens of the clause's first token. */
  offset: number;
  joinedBy: string | null;
}

function clausesOf(tokens: Token[]): Clause[] {
  const out: Clause[] = [];
  let start = 0;
  let joinedBy: string | null = null;
  for (let i = 0; i <= tokens.length; i++) {
    const t = tokens[i];
    if (t && !CLAUSE_BREAK.has(t.punct ? t.text : t.key)) continue;
    // "and"/"or" inside a noun phrase ("landscapes and still life", "tea and juice") does not break a clause
    // unless a subject or a verb-like word follows; kept simple: break and let an empty subject carry over.
    if (i > start) out.push({ tokens: tokens.slice(start, i), offset: start, joinedBy });
    joinedBy = t ? (t.punct ? t.text : t.key) : null;
    start = i + 1;
  }
  return out;
}

interface Subject {
  ref: EntityRef;
  /** "my wife" / "Mel's dog": the noun after the owner (stemmed), the owner in `ref`. */
  role: string | null;
  /** A name following the role ("my dog Max"). */
  roleName: string | null;
  next: number;
}

/** The end user ("I", "we", "my ..."), a named person, or an owner's role noun at the start of a clause. */
function subjectOf(
  clause: Token[],
  mentionAt: Map<number, EntityMention>,
  offset: number,
  self: EntityRef,
): Subject | null {
  for (let i = 0; i < Math.min(clause.length, 5); i++) {
    const t = clause[i]!;
    const mention = mentionAt.get(offset + i);
    if (t.lower === 'i' || t.lower === 'we') return { ref: self, role: null, roleName: null, next: i + 1 };
    if (t.lower === 'my' || t.lower === 'our') return withRole(clause, i + 1, self, mentionAt, offset);
    if (mention?.type === 'person') {
      const end = mention.last - offset;
      const ref: EntityRef = { name: mention.name, type: 'person' };
      if (clause[end]?.text === "'s") return withRole(clause, end + 1, ref, mentionAt, offset);
      // "Emma and I broke up": the end user with the person as the object.
      return { ref, role: null, roleName: null, next: end };
    }
    if (mention) return null;
    if (!LEADING.has(t.key) && !LEADING.has(t.lower)) return null;
  }
  return null;
}

function withRole(
  clause: Token[],
  i: number,
  owner: EntityRef,
  mentionAt: Map<number, EntityMention>,
  offset: number,
): Subject {
  let j = i;
  while (
    clause[j] &&
    ['new', 'old', 'late', 'current', 'little', 'older', 'younger', 'ex', 'belov', 'first', 'second', 'third'].includes(
      clause[j]!.key,
    )
  )
    j++;
  // A modifier before an attribute noun ("wedding anniversary", "cell phone number") names the same attribute.
  if (clause[j] && clause[j + 1] && ATTRIBUTES[clause[j + 1]!.key] && !ATTRIBUTES[clause[j]!.key]) j++;
  const role = clause[j] && !clause[j]!.punct ? clause[j]!.key : null;
  let next = role ? j + 1 : j;
  let roleName: string | null = null;
  if (clause[next]?.text === ',') next++;
  const named = mentionAt.get(offset + next);
  if (role && named?.type === 'person') {
    roleName = named.name;
    next = named.last - offset;
  }
  return { ref: owner, role, roleName, next };
}

/** Words of a noun phrase from `i` (determiners skipped) up to a stop word, at most `max`. */
function phrase(clause: Token[], i: number, max = 3): { words: Token[]; end: number } {
  let j = i;
  while (clause[j] && DETERMINERS.has(clause[j]!.key)) j++;
  const words: Token[] = [];
  while (clause[j] && words.length < max && !STOP.has(clause[j]!.key) && !clause[j]!.punct) words.push(clause[j++]!);
  return { words, end: j };
}

const concept = (words: Token[]): EntityRef => ({ name: words.map((w) => w.lower).join(' '), type: 'concept' });
const conceptRef = (name: string, type = 'concept'): EntityRef => ({ name, type });

/** The activity of a verb phrase as a short stable key: light verbs, determiners and particles dropped ("go running" -> "run"). */
function activityKey(words: Token[]): string {
  const keys = words.filter(
    (w) =>
      !w.punct &&
      !LIGHT_VERBS.has(w.key) &&
      !/^\d/.test(w.text) &&
      !NUMBER_WORDS.has(w.lower) &&
      !['cup', 'glass', 'time', 'of', 'with', 'mile', 'km', 'hour', 'minut'].includes(w.key) &&
      !ADVERBS.has(w.key),
  );
  return keys
    .map((w) => w.key)
    .slice(0, 3)
    .join(' ');
}

interface Frequency {
  dimension: 'frequency' | 'time_of_day' | 'weekday';
  value: string;
  start: number;
}

/** "every morning", "twice a week", "three times a week", "on Saturdays", "in the evenings", "daily", "two cups a day". */
function frequencyIn(clause: Token[]): Frequency | null {
  for (let i = 0; i < clause.length; i++) {
    const t = clause[i]!;
    const next = clause[i + 1];
    if (t.key === 'everi' && next) {
      if (next.key in TIMES_OF_DAY && next.key !== 'day')
        return { dimension: 'time_of_day', value: TIMES_OF_DAY[next.key]!, start: i };
      if (WEEKDAYS.has(next.lower)) return { dimension: 'weekday', value: next.lower, start: i };
      const n = numberOf(next);
      const period = PERIODS[(n !== null ? clause[i + 2] : next)?.key ?? ''];
      if (period)
        return { dimension: 'frequency', value: n !== null ? `every ${n} ${period}s` : `1/${period}`, start: i };
    }
    if (t.key === 'daili' || t.key === 'weekli' || t.key === 'monthli') {
      return {
        dimension: 'frequency',
        value: `1/${t.key === 'daili' ? 'day' : t.key === 'weekli' ? 'week' : 'month'}`,
        start: i,
      };
    }
    if (
      (t.lower === 'on' || t.lower === 'most') &&
      next &&
      WEEKDAYS.has(next.lower.replace(/s$/, '')) &&
      /s$/.test(next.lower)
    ) {
      return { dimension: 'weekday', value: next.lower.replace(/s$/, ''), start: i };
    }
    if (
      t.lower === 'in' &&
      clause[i + 1]?.lower === 'the' &&
      clause[i + 2] &&
      /s$/.test(clause[i + 2]!.lower) &&
      clause[i + 2]!.key in TIMES_OF_DAY
    ) {
      return { dimension: 'time_of_day', value: TIMES_OF_DAY[clause[i + 2]!.key]!, start: i };
    }
    if ((t.lower === 'at' && next?.lower === 'night') || t.lower === 'nightly')
      return { dimension: 'time_of_day', value: 'night', start: i };
    // "<count> a/per <period>": "twice a week", "three times a week", "two cups a day".
    if (
      (t.lower === 'a' || t.lower === 'per') &&
      next &&
      PERIODS[next.key] &&
      next.key !== 'night' &&
      next.key !== 'morn'
    ) {
      let count: number | null = null;
      for (let j = i - 1; j >= 0 && j >= i - 5; j--) {
        const n = numberOf(clause[j]);
        if (n !== null && clause[j]!.lower !== 'a' && clause[j]!.lower !== 'an') {
          count = n;
          break;
        }
        if (clause[j]!.key === 'onc' || clause[j]!.lower === 'once') {
          count = 1;
          break;
        }
        if (clause[j]!.lower === 'twice') {
          count = 2;
          break;
        }
      }
      if (count !== null) return { dimension: 'frequency', value: `${count}/${PERIODS[next.key]}`, start: i };
    }
  }
  return null;
}

/** Where a frequency phrase begins, so the activity before it does not swallow its count ("three times a week"). */
function frequencyStart(clause: Token[], f: Frequency): number {
  let s = f.start;
  while (
    s > 0 &&
    (numberOf(clause[s - 1]) !== null ||
      ['time', 'onc', 'once', 'twice', 'cup', 'glass', 'of'].includes(clause[s - 1]!.key) ||
      clause[s - 1]!.lower === 'twice')
  )
    s--;
  return s;
}

/**
 * Reads the personal facts of one text. `emit` receives each (subject, relation, value, negated, aspect);
 * the caller keeps those its ontology declares.
 */
export function personalFacts(tokens: Token[], mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  const mentionAt = new Map<number, EntityMention>();
  for (const m of mentions) mentionAt.set(m.first, m);
  let carried = null as Subject | null;
  let lastEntity: EntityRef | null = null;
  for (const { tokens: clause, offset, joinedBy } of clausesOf(tokens)) {
    let subject = subjectOf(clause, mentionAt, offset, self);
    // "Maria retired from cooking and is a painter now": a clause without a subject of its own keeps the last one.
    if (!subject && carried && joinedBy === 'and' && clause[0] && !mentionAt.has(offset))
      subject = { ...carried, next: 0 };
    const before = lastEntity;
    for (let i = 0; i < clause.length; i++) {
      const m = mentionAt.get(offset + i);
      if (m && m.type !== 'date' && m.type !== 'quantity') lastEntity = { name: m.name, type: m.type };
    }
    if (!subject && homeIs(clause, mentionAt, offset, self, before, emit)) continue;
    if (!subject) {
      favouriteBackward(clause, mentionAt, offset, self, before, emit);
      continue;
    }
    carried = subject.role ? null : subject;
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
  // Auxiliaries, adverbs and negation between the subject and its predicate.
  let i = subject.next;
  let negated = false;
  let copula = false;
  for (; i < clause.length; i++) {
    const t = clause[i]!;
    // "I'd rather fly than drive": a preference, not a wish.
    if (t.key === 'would' && clause[i + 1]?.key === 'rather') {
      preferred(clause.slice(i + 2), subject.ref, negated, emit);
      return;
    }
    // "I use an Android phone" is a fact; "I used to ..." is not one of today.
    if (HYPOTHETICAL.has(t.key) && (t.key !== 'use' || clause[i + 1]?.key === 'to')) return;
    if (t.key === 'be') copula = true;
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
      if (t.key === 'have' && !isParticiple(clause[i + 1])) break;
    } else break;
  }
  const rest = clause.slice(i);
  const after = clause.slice(i).map((t) => t.key);
  const anymore = after.includes('anymor') || (after.includes('ani') && after.includes('more'));
  const neg = negated || (anymore && negated);
  const owner = subject.ref;
  const at = (k: number) => offset + i + k;

  if (subject.role) {
    possessive(clause, i, subject, copula, neg, mentionAt, offset, self, emit);
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
    return;
  }
  // "Emma and I broke up".
  if (
    subject.ref.type === 'person' &&
    subject.ref !== self &&
    clause[subject.next]?.lower === 'and' &&
    clause[subject.next + 1]?.lower === 'i'
  ) {
    const verb = clause.slice(subject.next + 2).map((t) => t.key);
    if (
      verb.includes('broke') ||
      verb.includes('split') ||
      verb.includes('separ') ||
      verb.includes('divorc') ||
      (verb.includes('end') && verb.some((w) => ['thing', 'it', 'relationship'].includes(w))) ||
      (verb.includes('call') && verb.includes('quit'))
    ) {
      emit(self, FACT_RELATIONS.partner, conceptRef(subject.ref.name, 'person'), true);
      emit(self, FACT_RELATIONS.married, conceptRef(subject.ref.name, 'person'), true);
    }
    return;
  }

  if (copula) {
    copulaFacts(rest, at, owner, neg, mentionAt, before, emit);
    return;
  }
  const verb = rest[0];
  if (!verb) return;
  const v = verb.key;
  // Habits: an activity with a frequency or a time of day; one value per activity and dimension.
  const f = frequencyIn(rest);
  if (f) {
    const start = frequencyStart(rest, f);
    const words = rest.slice(0, start);
    const toIdx = words.findIndex((w, k) => w.key === 'to' && COMMUTE.has(words[k + 1]?.key ?? ''));
    if (toIdx >= 0) {
      const mode = words
        .slice(0, toIdx)
        .map((w) => MODES[w.key])
        .find(Boolean);
      if (mode) emit(owner, FACT_RELATIONS.habit, conceptRef(mode), neg, `commute to ${words[toIdx + 1]!.key}`);
      return;
    }
    const activity = activityKey(words);
    if (!activity) return;
    emit(owner, FACT_RELATIONS.does, conceptRef(activity), neg);
    if (neg) return;
    emit(owner, FACT_RELATIONS.habit, conceptRef(f.value), false, `${activity} | ${f.dimension}`);
    // "every Sunday" is also once a week, "every morning" once a day: a new frequency changes either.
    const implied = impliedFrequency(rest, f);
    if (implied) emit(owner, FACT_RELATIONS.habit, conceptRef(implied), false, `${activity} | frequency`);
    return;
  }
  // "I started eating meat again", "I've begun running": the activity is done (again).
  if ((v === 'start' || v === 'began' || v === 'begin') && rest[1] && /ing$/.test(rest[1].lower)) {
    if (rest[1].key === 'date' || rest[1].key === 'see') {
      dating(rest.slice(1), (k) => at(k + 1), owner, neg, mentionAt, emit);
      return;
    }
    const until = rest.findIndex((t, k) => k > 1 && STOP.has(t.key) && !['the', 'to'].includes(t.key));
    const activity = activityKey(rest.slice(1, until < 0 ? undefined : until));
    if (activity) emit(owner, FACT_RELATIONS.does, conceptRef(activity), neg);
    return;
  }
  // "I became a principal", "(gave up law and) became a teacher", "I've become a morning person".
  if (v === 'becam' || v === 'becom' || v === 'became' || v === 'become') {
    copulaFacts(rest.slice(1), (k) => at(k + 1), owner, neg, mentionAt, before, emit);
    return;
  }
  // "I handed in my notice at IKEA", "I resigned from the library": no longer works there.
  if (v === 'resign' || (v === 'hand' && rest.slice(1, 4).some((t) => t.key === 'notic'))) {
    const k = rest.findIndex((t, j) => j > 0 && j <= 5 && ['at', 'from', 'with'].includes(t.key));
    if (k > 0) {
      const m = mentionAt.get(at(k + 1)) ?? mentionAt.get(at(k + 2));
      if (m && m.type !== 'place' && m.type !== 'date')
        emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), !neg);
      else {
        const p = phrase(rest, k + 1, 3);
        if (p.words.length && !PRONOUNS.has(p.words[0]!.key))
          emit(owner, FACT_RELATIONS.worksAt, concept(p.words), !neg);
      }
    }
    return;
  }
  // "We rent a flat in Leeds", "I'm renting an apartment in Lyon": where one lives.
  if (v === 'rent' && rest.slice(1, 4).some((t) => HOMES.has(t.key))) {
    const place = [...Array(6).keys()].map((k) => mentionAt.get(at(k + 2))).find((m) => m?.type === 'place');
    if (place) emit(owner, FACT_RELATIONS.livesIn, conceptRef(place.name, 'place'), neg);
    return;
  }
  // "(We bought a house in Nice and) moved there": the place of the clause before.
  if ((v === 'move' || v === 'relocat') && rest[1]?.key === 'there' && before?.type === 'place') {
    emit(owner, FACT_RELATIONS.livesIn, conceptRef(before.name, 'place'), neg);
    return;
  }
  // "I like summer better than winter", "I love tea more than coffee": a preference.
  if (['like', 'love', 'enjoy'].includes(v)) {
    const a = phrase(rest, 1);
    const more = rest[a.end];
    if (a.words.length && more && ['better', 'more'].includes(more.key) && rest[a.end + 1]?.key === 'than') {
      preferred([...rest.slice(1, a.end), rest[a.end + 1]!, ...rest.slice(a.end + 2)], owner, neg, emit);
      return;
    }
  }
  // "We had a baby", "I had a son last year": the subject has children.
  if (
    (v === 'had' || v === 'have') &&
    (rest[1]?.lower === 'a' || rest[1]?.key === 'our' || rest[1]?.key === 'my') &&
    rest[2] &&
    ['babi', 'son', 'daughter', 'boy', 'girl'].includes(rest[2].key) &&
    (v === 'had' || isParticiple(rest[0]))
  ) {
    emit(owner, FACT_RELATIONS.children, conceptRef('children'), neg);
    return;
  }
  // "I got laid off from Barclays", "I got fired by Tesco".
  if ((v === 'got' || v === 'get') && rest[1] && DISMISSED.has(rest[1].key)) {
    copulaFacts(rest.slice(1), (k) => at(k + 1), owner, neg, mentionAt, before, emit);
    return;
  }
  // "I call Denver home".
  if (v === 'call' && rest.slice(2, 6).some((t) => t.key === 'home')) {
    const m = mentionAt.get(at(1));
    if (m?.type === 'place') emit(owner, FACT_RELATIONS.livesIn, conceptRef(m.name, 'place'), neg);
    return;
  }
  // "(We moved out of Bristol and) now live in Bath": a clause whose subject carried over, which the cues do not see.
  if (v === 'live' && rest[1]?.key === 'in') {
    const place = [...Array(6).keys()].map((k) => mentionAt.get(at(k + 2))).find((m) => m?.type === 'place');
    if (place) emit(owner, FACT_RELATIONS.livesIn, conceptRef(place.name, 'place'), neg);
    return;
  }
  // "We moved out of Bristol", "I moved away from Leeds": no longer lives there.
  if ((v === 'move' || v === 'relocat') && (rest[1]?.key === 'out' || rest[1]?.key === 'away')) {
    const place = [...Array(4).keys()].map((k) => mentionAt.get(at(k + 2))).find((m) => m?.type === 'place');
    if (place) emit(owner, FACT_RELATIONS.livesIn, conceptRef(place.name, 'place'), true);
    return;
  }
  // "I take the bus to work now", "I walk to school": how one commutes, without a frequency.
  const toCommute = rest.findIndex((w, k) => k <= 4 && w.key === 'to' && COMMUTE.has(rest[k + 1]?.key ?? ''));
  if (toCommute > 0) {
    const mode = rest
      .slice(0, toCommute)
      .map((w) => MODES[w.key])
      .find(Boolean);
    if (mode) {
      emit(owner, FACT_RELATIONS.habit, conceptRef(mode), neg, `commute to ${rest[toCommute + 1]!.key}`);
      return;
    }
  }
  // "Sam retired last year": a work situation, like "I'm retired".
  if (v === 'retir') {
    emit(owner, FACT_RELATIONS.worksAs, conceptRef('retired'), neg);
    return;
  }
  // "I got married (to Tom)", "Elena and I got divorced", "we got engaged": a change of relationship status.
  if ((v === 'got' || v === 'get') && rest[1] && STATUS_CHANGES[rest[1].key]) {
    const status = STATUS_CHANGES[rest[1].key]!;
    emit(owner, FACT_RELATIONS.status, conceptRef(status), neg);
    const named = rest[2]?.key === 'to' || rest[2]?.key === 'with' ? mentionAt.get(at(3)) : undefined;
    const person = named?.type === 'person' ? named.name : before?.type === 'person' ? before.name : null;
    if (person && (status === 'divorced' || status === 'separated'))
      emit(owner, FACT_RELATIONS.married, conceptRef(person, 'person'), true);
    else if (named?.type === 'person' && status === 'married')
      emit(owner, FACT_RELATIONS.married, conceptRef(named.name, 'person'), neg);
    else if (named?.type === 'person' && status === 'engaged')
      emit(owner, FACT_RELATIONS.partner, conceptRef(named.name, 'person'), neg);
    return;
  }
  // "We called off the engagement", "I broke off our engagement".
  if (['call', 'broke', 'break', 'cancel'].includes(v) && rest.slice(1, 5).some((t) => t.key === 'engag')) {
    emit(owner, FACT_RELATIONS.status, conceptRef('engaged'), true);
    return;
  }
  // "(We packed up and) moved to Leeds", "I've just moved into a house in Edinburgh": where the subject lives.
  if ((v === 'move' || v === 'relocat') && ['to', 'into', 'back', 'in'].includes(rest[1]?.key ?? '')) {
    const place = [...Array(6).keys()].map((k) => mentionAt.get(at(k + 2))).find((m) => m?.type === 'place');
    if (place) {
      emit(owner, FACT_RELATIONS.livesIn, conceptRef(place.name, 'place'), neg);
      return;
    }
  }
  // "I started a new job at Bosch", "I took a position with the council", "she landed a role as a designer".
  if (JOB_STARTS.has(v)) {
    const job = rest.findIndex((t, k) => k > 0 && k <= 4 && JOB_WORDS.has(t.key));
    const link = job > 0 ? rest[job + 1]?.key : undefined;
    if (link === 'at' || link === 'with' || link === 'for') {
      const m = mentionAt.get(at(job + 2)) ?? mentionAt.get(at(job + 3));
      if (m?.type === 'organization') emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), neg);
      else {
        const p = phrase(rest, job + 2, 3);
        if (p.words.length && !PRONOUNS.has(p.words[0]!.key))
          emit(owner, FACT_RELATIONS.worksAt, concept(p.words), neg);
      }
      return;
    }
    if (link === 'as') {
      const p = phrase(rest, job + 2, 3);
      if (p.words.length) emit(owner, FACT_RELATIONS.worksAs, concept(p.words), neg);
      return;
    }
  }
  // "(Ana quit the Red Cross and) joined UNICEF": an organisation joined is where one works (a club or a gym is not named one).
  if (v === 'join') {
    const m = mentionAt.get(at(1)) ?? mentionAt.get(at(2));
    if (m?.type === 'organization') emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), neg);
    return;
  }
  // Ages and birth years.
  if (v === 'turn' || v === 'turned') {
    const n = numberOf(rest[1]);
    if (n !== null && n > 0 && n < 130) emit(owner, FACT_RELATIONS.age, conceptRef(String(n), 'quantity'), neg);
    return;
  }
  if (v === 'born' && rest[1]?.lower === 'in' && /^(19|20)\d\d$/.test(rest[2]?.text ?? '')) {
    emit(owner, FACT_RELATIONS.birthYear, conceptRef(rest[2]!.text, 'date'), neg);
    return;
  }
  // Preferences of one thing over another: the pair is the attribute, the preferred one its value.
  if (v === 'prefer') {
    preferred(rest.slice(1), owner, neg, emit, ['over', 'to', 'than', 'instead']);
    return;
  }
  // Relationships.
  if ((v === 'date' || v === 'see') && mentionAt.get(at(1))?.type === 'person') {
    emit(owner, FACT_RELATIONS.partner, conceptRef(mentionAt.get(at(1))!.name, 'person'), neg);
    if (!neg) emit(owner, FACT_RELATIONS.status, conceptRef('dating'), false);
    return;
  }
  if ((v === 'broke' || v === 'break' || v === 'split') && rest[1]?.key === 'up') {
    // "I broke up with Leo"; "Leo and I split up" (the person is the clause before).
    const person =
      rest[2]?.key === 'with'
        ? mentionAt.get(at(3))
        : before?.type === 'person'
          ? { name: before.name, type: 'person' }
          : undefined;
    if (person?.type === 'person') {
      emit(owner, FACT_RELATIONS.partner, conceptRef(person.name, 'person'), true);
      emit(owner, FACT_RELATIONS.married, conceptRef(person.name, 'person'), true);
    }
    return;
  }
  if (v === 'divorc' && mentionAt.get(at(1))?.type === 'person') {
    emit(owner, FACT_RELATIONS.married, conceptRef(mentionAt.get(at(1))!.name, 'person'), true);
    emit(owner, FACT_RELATIONS.status, conceptRef('divorced'), false);
    return;
  }
  // Children: "I have two kids", "I have a son", "I have no kids", "I don't have any children".
  if (v === 'have' || v === 'got') {
    let j = 1;
    let none = false;
    if (rest[j]?.key === 'no') {
      none = true;
      j++;
    }
    const article = rest[j]?.lower === 'a' || rest[j]?.lower === 'an';
    const count = rest[j]?.key === 'ani' ? null : article ? 1 : numberOf(rest[j]);
    const k = rest[j]?.key === 'ani' || count !== null ? j + 1 : j;
    if (
      rest[k] &&
      CHILD_WORDS.has(rest[k]!.key) &&
      !rest.slice(k + 1, k + 3).some((t) => t.key === 'name' || mentionAt.has(at(t === rest[k + 1] ? k + 1 : k + 2)))
    ) {
      const denied = neg || none;
      emit(owner, FACT_RELATIONS.children, conceptRef('children'), denied);
      if (
        !denied &&
        count !== null &&
        !article &&
        (rest[k]!.key === 'kid' || rest[k]!.key === 'child' || rest[k]!.key === 'children')
      ) {
        emit(owner, FACT_RELATIONS.childCount, conceptRef(String(count), 'quantity'), false);
      }
      return;
    }
  }
  // Possessions: what is had (named: "a cat named Luna") and what is lost ("I sold my piano").
  if (
    v === 'have' ||
    v === 'own' ||
    v === 'got' ||
    v === 'get' ||
    v === 'adopt' ||
    v === 'bought' ||
    v === 'buy' ||
    v === 'drive' ||
    v === 'use'
  ) {
    const p = phrase(rest, 1, 3);
    if (!p.words.length || PRONOUNS.has(p.words[0]!.key)) return;
    const thing = headOf(p.words);
    // A plain "I have a dog" is the cue relation's (extract.ts); here only its loss and a name it goes by.
    if (v === 'have' || v === 'own' || v === 'adopt' || v === 'got' || v === 'get') {
      if (neg) emit(owner, FACT_RELATIONS.has, conceptRef(thing), true);
      const named = rest[p.end]?.key === 'name' ? mentionAt.get(at(p.end + 1)) : undefined;
      if (named) emit(owner, FACT_RELATIONS.has, conceptRef(named.name.toLowerCase()), neg);
    }
    const single = singleThing(p.words, v === 'drive');
    if (single && !neg) emit(owner, single.relation, conceptRef(single.value), false);
    return;
  }
  if (
    v === 'switch' ||
    v === 'swap' ||
    v === 'chang' ||
    v === 'upgrad' ||
    v === 'move' ||
    v === 'trade' ||
    v === 'exchang'
  ) {
    const to = rest.findIndex((t) => t.key === 'to' || t.key === 'for');
    if (to > 0) {
      const p = phrase(rest, to + 1, 3);
      const single = singleThing(p.words, false);
      if (single) {
        emit(owner, single.relation, conceptRef(single.value), false);
        return;
      }
    }
  }
  // "I replaced the Ford with a Toyota": the old one is gone, the new one is had.
  if (v === 'replac') {
    const withAt = rest.findIndex((t, k) => k > 1 && t.key === 'with');
    const p = phrase(rest, 1, 3);
    if (p.words.length && !PRONOUNS.has(p.words[0]!.key)) {
      emit(owner, FACT_RELATIONS.has, conceptRef(headOf(p.words)), true);
      if (withAt > 0) {
        const single = singleThing(phrase(rest, withAt + 1, 3).words, true);
        if (single) emit(owner, single.relation, conceptRef(single.value), false);
      }
    }
    return;
  }
  if (LOSS_VERBS.has(v) || (v === 'got' && rest[1]?.key === 'rid')) {
    const from = v === 'got' ? 3 : v === 'gave' || v === 'give' ? (rest[1]?.key === 'away' ? 2 : 1) : 1;
    const p = phrase(rest, from, 3);
    if (p.words.length && !PRONOUNS.has(p.words[0]!.key) && numberOf(p.words[0]) === null) {
      if (rest[from - 1]?.key === 'job' || p.words[0]?.key === 'job') return lostJob(rest, at, owner, mentionAt, emit);
      emit(owner, FACT_RELATIONS.has, conceptRef(headOf(p.words)), true);
    }
    if (v === 'lost' || v === 'lose') lostJob(rest, at, owner, mentionAt, emit);
    return;
  }
  // Leaving a job or a home: "I left Google", "I left the law firm", "I left Paris".
  if (LEAVE_VERBS.has(v) || (v === 'gave' && rest[1]?.key === 'up')) {
    // "I left nursing (to become a midwife)", "gave up law": the work of that field has ended.
    const field = FIELDS[rest[v === 'gave' ? 2 : 1]?.key ?? ''];
    if (field) {
      emit(owner, FACT_RELATIONS.worksAs, conceptRef(field), true);
      const become = rest.findIndex((t) => t.key === 'becom' || t.key === 'become');
      if (become > 0)
        copulaFacts(rest.slice(become + 1), (k) => at(k + become + 1), owner, neg, mentionAt, before, emit);
      return;
    }
    if (v === 'gave') return stopped(rest, owner, emit);
    let j = 1;
    if (rest[j]?.key === 'my' && rest[j + 1]?.key === 'job') j += 2;
    if (rest[j]?.key === 'at' || rest[j]?.key === 'with') j++;
    const m = mentionAt.get(at(j)) ?? mentionAt.get(at(j + 1));
    if (m?.type === 'place') emit(owner, FACT_RELATIONS.livesIn, conceptRef(m.name, 'place'), true);
    else if (m?.type === 'organization') emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), true);
    else if (rest[j] && rest[j]!.key !== 'job') {
      const p = phrase(rest, j, 3);
      if (p.words.length && !PRONOUNS.has(p.words[0]!.key) && !ADVERBS.has(p.words[0]!.key)) {
        if (STOP_VERBS.has(v) && /ing$/.test(p.words[0]!.lower)) {
          emit(owner, FACT_RELATIONS.does, conceptRef(activityKey(rest.slice(j, p.end))), true);
        } else {
          emit(owner, FACT_RELATIONS.worksAt, concept(p.words), true);
        }
      }
    }
    return;
  }
  if (v === 'lost' || v === 'lose') return lostJob(rest, at, owner, mentionAt, emit);
  // "I stopped going to the gym", "I gave up smoking".
  if (STOP_VERBS.has(v)) return stopped(rest, owner, emit);
  // A bare habit stated as a present-tense verb with its object ("I smoke", "I don't drink", "I eat meat").
  if (['smoke', 'drink', 'eat', 'meditat', 'vape', 'gambl'].includes(v)) {
    const p = phrase(rest, 1, 2);
    const activity = activityKey([verb, ...p.words]);
    emit(owner, FACT_RELATIONS.does, conceptRef(activity), neg);
    // "I drink wine now" is drinking, which "I don't drink" denied (eating is not a habit one gives up).
    if (!neg && v !== 'eat' && activity !== v) emit(owner, FACT_RELATIONS.does, conceptRef(v), false);
  }
}

const isParticiple = (t: Token | undefined) =>
  !!t &&
  (/(ed|en|wn)$/.test(t.lower) ||
    ['been', 'got', 'had', 'done', 'made', 'sold', 'left', 'lost', 'bought', 'quit', 'switched'].includes(t.lower));

function lostJob(
  rest: Token[],
  at: (k: number) => number,
  owner: EntityRef,
  mentionAt: Map<number, EntityMention>,
  emit: Emit,
): void {
  const job = rest.findIndex((t) => t.key === 'job');
  if (job < 0) return;
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

/** The last noun of a short phrase ("my old piano" -> "piano"); a plural keeps its stem form. */
const headOf = (words: Token[]) => words[words.length - 1]!.lower.replace(/(?<=[^s])s$/, '');

function singleThing(words: Token[], driving: boolean): { relation: string; value: string } | null {
  if (!words.length) return null;
  for (const [relation, names] of SINGLE_THINGS) {
    if (!words.some((w) => names.has(w.key) || names.has(w.lower))) continue;
    if (relation === FACT_RELATIONS.drives && !driving && !words.some((w) => w.capitalized)) return null;
    // A bare category word ("a phone") names no particular one.
    const specific = words.filter((w) => !['phone', 'car', 'truck', 'van', 'suv', 'new', 'old'].includes(w.key));
    if (!specific.length) return null;
    return { relation, value: specific.map((w) => w.lower).join(' ') };
  }
  return driving ? { relation: FACT_RELATIONS.drives, value: words.map((w) => w.lower).join(' ') } : null;
}

/** "I'm 30", "I'm a nurse", "I'm not vegetarian", "I'm married to Tom", "I'm at Deloitte", "I'm retired". */
function copulaFacts(
  rest: Token[],
  at: (k: number) => number,
  owner: EntityRef,
  neg: boolean,
  mentionAt: Map<number, EntityMention>,
  before: EntityRef | null,
  emit: Emit,
): void {
  const first = rest[0];
  if (!first) return;
  const spelled = spelledNumber(rest);
  const n = spelled ? spelled.value : /^\d+$/.test(first.text) ? Number(first.text) : null;
  if (n !== null && n > 0 && n < 130) {
    // "I'm 27 as of this week", "I'm twenty-six": an age unless a unit follows ("I'm 5 minutes away").
    const next = rest[spelled ? spelled.end : 1];
    if (!next || next.punct || next.key === 'year' || next.key === 'yo' || !NOT_AGE.has(next.key)) {
      emit(owner, FACT_RELATIONS.age, conceptRef(String(n), 'quantity'), neg);
    }
    return;
  }
  if (first.key === 'born' && rest[1]?.lower === 'in' && /^(19|20)\d\d$/.test(rest[2]?.text ?? '')) {
    emit(owner, FACT_RELATIONS.birthYear, conceptRef(rest[2]!.text, 'date'), neg);
    return;
  }
  // "I was born on 2 May", "born on the 12th of May": the birthday (a year alone is the birth year).
  if (first.key === 'born' && rest[1]?.lower === 'on') {
    const day = dayOfYear(rest.slice(2, 7));
    if (day) emit(owner, FACT_RELATIONS.birthday, conceptRef(day), neg);
    return;
  }
  if (first.key === 'at' || first.key === 'with') {
    const m = mentionAt.get(at(1));
    // An unknown capitalised name after "at" is taken for a person by the entity rules ("I'm at Accenture").
    if (
      m?.type === 'organization' ||
      (first.key === 'at' && m?.type === 'person' && m.last - m.first === 1 && !GIVEN_NAMES.has(m.name.toLowerCase()))
    )
      emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), neg);
    return;
  }
  // "Mike is employed at Tesco"; "I was fired from Tesco", "I was laid off by Tesco".
  if (first.key === 'employ' || DISMISSED.has(first.key)) {
    const k = rest.findIndex((t, j) => j > 0 && j <= 3 && ['at', 'by', 'with', 'from'].includes(t.key));
    const m = k > 0 ? (mentionAt.get(at(k + 1)) ?? mentionAt.get(at(k + 2))) : undefined;
    if (m?.type === 'organization')
      emit(owner, FACT_RELATIONS.worksAt, conceptRef(m.name, 'organization'), first.key === 'employ' ? neg : true);
    return;
  }
  const word = first.lower;
  if (WORK_STATES.has(word)) {
    emit(owner, FACT_RELATIONS.worksAs, conceptRef(word), neg);
    return;
  }
  // "I'm seeing a guy called Omar", "I'm dating someone named Theo".
  if ((first.key === 'see' || first.key === 'date') && /ing$/.test(first.lower)) {
    if (dating(rest, at, owner, neg, mentionAt, emit)) return;
  }
  if (STATUS.has(word) || first.key === 'date') {
    const status = first.key === 'date' ? 'dating' : word;
    emit(owner, FACT_RELATIONS.status, conceptRef(status), neg);
    const link = rest[1]?.key;
    const person = mentionAt.get(at(link === 'to' || link === 'from' || link === 'with' ? 2 : 1));
    if (person?.type === 'person') {
      if (status === 'divorced' || status === 'separated')
        emit(owner, FACT_RELATIONS.married, conceptRef(person.name, 'person'), true);
      else if (status === 'engaged' || status === 'dating')
        emit(owner, FACT_RELATIONS.partner, conceptRef(person.name, 'person'), neg);
    } else if (!neg && (status === 'divorced' || status === 'separated') && before?.type === 'person') {
      // "Mark and I are divorced now": the person of the clause before.
      emit(owner, FACT_RELATIONS.married, conceptRef(before.name, 'person'), true);
    }
    return;
  }
  if (TRAITS.has(word)) {
    emit(owner, FACT_RELATIONS.is, conceptRef(word), neg);
    return;
  }
  // "a nurse", "an accountant at a big firm", "a full-time painter", "a morning person", "a smoker".
  if (first.lower === 'a' || first.lower === 'an') {
    const p = phrase(rest, 0, 3);
    if (!p.words.length) return;
    const last = p.words[p.words.length - 1]!;
    const occupation = OCCUPATIONS.has(last.lower) || OCCUPATIONS.has(last.lower.replace(/s$/, ''));
    if (occupation) {
      const words = p.words.filter(
        (w) =>
          ![
            'full-time',
            'part-time',
            'profession',
            'freelanc',
            'senior',
            'junior',
            'head',
            'great',
            'good',
            'big',
            'proud',
          ].includes(w.key),
      );
      emit(owner, FACT_RELATIONS.worksAs, concept(words.length ? words : p.words), neg);
    } else if (p.words.length === 1 && HABIT_AGENTS[p.words[0]!.key]) {
      // "I'm a smoker" is the habit "I quit smoking" ends.
      emit(owner, FACT_RELATIONS.does, conceptRef(HABIT_AGENTS[p.words[0]!.key]!), neg);
      emit(owner, FACT_RELATIONS.is, concept(p.words), neg);
    } else if (
      p.words.length <= 2 &&
      ![
        'bit',
        'lot',
        'littl',
        'fan',
        'big',
        'huge',
        'great',
        'good',
        'part',
        'member',
        'kind',
        'sort',
        'mix',
        'few',
      ].includes(p.words[0]!.key)
    ) {
      emit(owner, FACT_RELATIONS.is, concept(p.words), neg);
    }
  }
}

/** "my birthday is in May", "our anniversary is on October 5", "my girlfriend is Emma", "Mel's dog Max died", "my favorite X is Y". */
function possessive(
  clause: Token[],
  i: number,
  subject: Subject,
  copula: boolean,
  neg: boolean,
  mentionAt: Map<number, EntityMention>,
  offset: number,
  self: EntityRef,
  emit: Emit,
): void {
  const owner = subject.ref;
  const role = subject.role!;
  const rest = clause.slice(i);
  if (!copula) {
    // "Our first baby was born" is a copula; "my bike got stolen": the owner no longer has it.
    const verb = rest[0]?.key;
    if (
      (verb === 'got' || verb === 'get') &&
      ['stolen', 'wreck', 'total', 'scrap', 'sold', 'lost'].includes(rest[1]?.key ?? '')
    ) {
      emit(owner, FACT_RELATIONS.has, conceptRef(role), true);
      return;
    }
    if (
      verb &&
      DEATH_VERBS.has(verb) &&
      (verb !== 'run' || rest[1]?.key === 'away') &&
      (verb !== 'pass' || rest[1]?.key === 'away')
    ) {
      emit(owner, FACT_RELATIONS.has, conceptRef(role), true);
      if (subject.roleName) emit(owner, FACT_RELATIONS.has, conceptRef(subject.roleName.toLowerCase()), true);
    }
    return;
  }
  // "Our first baby was born last week": the owner has children.
  if ((role === 'babi' || role === 'son' || role === 'daughter') && rest[0]?.key === 'born') {
    emit(owner, FACT_RELATIONS.children, conceptRef('children'), neg);
    return;
  }
  // "my bike was stolen", "my car got totalled": the owner no longer has it.
  if (['stolen', 'sold', 'lost', 'wreck', 'total', 'scrap'].includes(rest[0]?.key ?? '') && !ATTRIBUTES[role]) {
    emit(owner, FACT_RELATIONS.has, conceptRef(role), true);
    return;
  }
  if (role === 'favorit') return; // extract.ts reads "my favorite X is Y"
  // "my phone is a Samsung Galaxy", "my car is a Volvo": the one phone or car the owner has.
  if (role === 'phone' || role === 'car') {
    const p = phrase(rest, rest[0]?.key === 'now' ? 1 : 0, 3);
    const named = p.words.some((w) => w.capitalized)
      ? {
          relation: role === 'phone' ? FACT_RELATIONS.phone : FACT_RELATIONS.drives,
          value: p.words.map((w) => w.lower).join(' '),
        }
      : null;
    const single = singleThing(p.words, role === 'car') ?? named;
    if (single) emit(owner, single.relation, conceptRef(single.value), neg);
    return;
  }
  let j = 0;
  while (rest[j] && (rest[j]!.key === 'on' || rest[j]!.key === 'in' || ADVERBS.has(rest[j]!.key))) j++;
  const person = mentionAt.get(offset + i + j);
  if (PARTNERS.has(role) && person?.type === 'person') {
    emit(owner, FACT_RELATIONS.partner, conceptRef(person.name, 'person'), neg);
    return;
  }
  if (SPOUSES.has(role)) return; // extract.ts reads "my wife is Anna"
  const relation = ATTRIBUTES[role];
  if (!relation) return;
  if (relation === FACT_RELATIONS.livesIn) {
    if (person?.type === 'place') emit(owner === self ? self : owner, relation, conceptRef(person.name, 'place'), neg);
    else {
      const place = [...Array(4).keys()].map((k) => mentionAt.get(offset + i + j + k)).find((m) => m?.type === 'place');
      if (place) emit(owner, relation, conceptRef(place.name, 'place'), neg);
    }
    return;
  }
  const words: string[] = [];
  for (
    let k = j;
    rest[k] &&
    words.length < 4 &&
    !rest[k]!.punct &&
    !['now', 'too', 'and', 'but', 'this', 'anymor', 'again'].includes(rest[k]!.key);
    k++
  ) {
    words.push(rest[k]!.lower.replace(/(st|nd|rd|th)$/, (s) => (/\d/.test(rest[k]!.lower) ? '' : s)));
  }
  if (words.length) emit(owner, relation, conceptRef(words.join(' ')), neg);
}

/** "Hiking is my favorite hobby", "it's my favorite city", "Inception is no longer my favorite movie". */
function favouriteBackward(
  clause: Token[],
  mentionAt: Map<number, EntityMention>,
  offset: number,
  self: EntityRef,
  before: EntityRef | null,
  emit: Emit,
): void {
  const be = clause.findIndex((t) => t.key === 'be');
  if (be <= 0) return;
  let j = be + 1;
  let negated = false;
  while (clause[j] && (NEGATORS.has(clause[j]!.key) || clause[j]!.key === 'longer' || ADVERBS.has(clause[j]!.key))) {
    if (NEGATORS.has(clause[j]!.key)) negated = true;
    j++;
  }
  let owner: EntityRef | null = null;
  if (clause[j]?.lower === 'my' || clause[j]?.lower === 'our') owner = self;
  else {
    const m = mentionAt.get(offset + j);
    if (m?.type === 'person' && clause[m.last - offset]?.text === "'s") {
      owner = { name: m.name, type: 'person' };
      j = m.last - offset;
    }
  }
  if (!owner || clause[j + 1]?.key !== 'favorit') return;
  const thing: string[] = [];
  for (let k = j + 2; clause[k] && !clause[k]!.punct && thing.length < 3 && !STOP.has(clause[k]!.key); k++)
    thing.push(britishToAmerican(clause[k]!.lower.replace(/[^a-z0-9]/g, '')));
  if (!thing.length) return;
  const subjectWords = clause
    .slice(0, be)
    .filter((t) => !DETERMINERS.has(t.key) && !LEADING.has(t.key) && !ADVERBS.has(t.key));
  if (!subjectWords.length) return;
  let value: EntityRef;
  if (subjectWords.length === 1 && PRONOUNS.has(subjectWords[0]!.key)) {
    if (!before) return;
    value = before;
  } else {
    const m = mentionAt.get(offset + clause.indexOf(subjectWords[0]!));
    value = m && m.last - offset >= be ? { name: m.name, type: m.type } : concept(subjectWords.slice(-3));
  }
  emit(owner, `${FACT_RELATIONS.favoritePrefix}${thing.join('_')}`, value, negated);
}

/** "Home is Galway now", "Galway is home now", "Galway is my home": where the end user lives. */
function homeIs(
  clause: Token[],
  mentionAt: Map<number, EntityMention>,
  offset: number,
  self: EntityRef,
  before: EntityRef | null,
  emit: Emit,
): boolean {
  // "that's" is "that is" ("'s" is otherwise a possessive).
  const be = clause.findIndex(
    (t, k) => t.key === 'be' || (t.text === "'s" && ['that', 'it', 'there'].includes(clause[k - 1]?.key ?? '')),
  );
  if (be < 0) return false;
  // "(We bought a house in Queens,) that's home now".
  const pointing = clause.slice(0, be).filter((t) => !LEADING.has(t.key));
  if (
    before?.type === 'place' &&
    pointing.length === 1 &&
    ['that', 'thi', 'it', 'there'].includes(pointing[0]!.key) &&
    clause[be + 1]?.key === 'home'
  ) {
    emit(self, FACT_RELATIONS.livesIn, conceptRef(before.name, 'place'), false);
    return true;
  }
  const named = (from: number, to: number) => {
    for (let k = from; k < to; k++) {
      const m = mentionAt.get(offset + k);
      if (m && m.type !== 'date' && m.type !== 'quantity' && m.type !== 'organization') return m;
    }
    return undefined;
  };
  const words = clause.map((t) => t.key);
  const negated = words.slice(be, be + 3).some((w) => NEGATORS.has(w));
  let m: EntityMention | undefined;
  const head = words
    .slice(0, be)
    .filter((w) => !LEADING.has(w))
    .join(' ');
  if (head === 'home' || head === 'home for me' || head === 'home for us') m = named(be + 1, clause.length);
  else if (
    words
      .slice(be + 1)
      .filter((w) => !NEGATORS.has(w) && w !== 'my' && w !== 'our' && !ADVERBS.has(w) && w !== 'longer')
      .join(' ')
      .startsWith('home')
  )
    m = named(0, be);
  if (!m) return false;
  emit(self, FACT_RELATIONS.livesIn, conceptRef(m.name, 'place'), negated);
  return true;
}

const HOMES = new Set(['apart', 'flat', 'hous', 'room', 'place', 'home', 'condo', 'studio', 'cottag', 'bungalow']);
/** Words after a number that make it something else than an age. */
const NOT_AGE = new Set([
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
const TENS = Object.fromEntries(
  'twenty thirty forty fifty sixty seventy eighty ninety'
    .split(' ')
    .flatMap((w, k) => [[w, 20 + 10 * k] as const, [w.replace(/y$/, 'i'), 20 + 10 * k] as const]),
) as Record<string, number>;
const TEENS = Object.fromEntries(
  'ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen'
    .split(' ')
    .map((w, k) => [w, 10 + k]),
) as Record<string, number>;
const unitOf = (word: string | undefined) => {
  const n = word && /^[a-z]+$/.test(word) && NUMBER_WORDS.has(word) ? COUNT_WORDS[word] : undefined;
  return n !== undefined && n >= 1 && n <= 9 ? n : undefined;
};

/** "twenty-six", "thirty one", "nineteen": a number spelled out at the start of `words`. */
function spelledNumber(words: Token[]): { value: number; end: number } | null {
  const first = words[0]?.lower;
  if (!first) return null;
  const [tens, unit] = first.split('-');
  if (TENS[tens!] !== undefined) {
    if (unitOf(unit)) return { value: TENS[tens!]! + unitOf(unit)!, end: 1 };
    const k = words[1]?.text === '-' ? 2 : 1;
    const u = unitOf(words[k]?.lower);
    return u ? { value: TENS[tens!]! + u, end: k + 1 } : { value: TENS[tens!]!, end: 1 };
  }
  if (TEENS[first] !== undefined) return { value: TEENS[first]!, end: 1 };
  return null;
}

/** "2 May", "the 12th of May", "May 2nd": "may 2"; a month alone: "may". */
function dayOfYear(words: Token[]): string | null {
  const month = words.find((w) => MONTHS.has(w.lower));
  if (!month) return null;
  const day = words.find((w) => /^\d{1,2}(st|nd|rd|th)?$/.test(w.lower));
  return day ? `${month.lower} ${Number.parseInt(day.lower, 10)}` : month.lower;
}

/** "once a week" implied by "every Sunday" and "every weekend", "once a day" by "every morning". */
function impliedFrequency(rest: Token[], f: Frequency): string | null {
  if (rest[f.start]?.key !== 'everi') return null;
  if (f.dimension === 'weekday') return '1/week';
  if (f.dimension === 'time_of_day') return f.value === 'weekend' ? '1/week' : '1/day';
  return null;
}

/** "(I'd rather) take the train than fly", "(prefer) tea to coffee": the pair is the attribute, the first its value. */
function preferred(rest: Token[], owner: EntityRef, neg: boolean, emit: Emit, links = ['than']): void {
  const a = phrase(rest, 0);
  const link = rest[a.end];
  if (!a.words.length || !link || !links.includes(link.key)) return;
  const b = phrase(rest, a.end + (link.key === 'instead' ? 2 : 1));
  if (!b.words.length) return;
  const [x, y] = [concept(a.words).name, concept(b.words).name];
  emit(owner, FACT_RELATIONS.prefers, conceptRef(x), neg, [x, y].sort().join(' | '));
}

/** "seeing a guy called Omar", "dating Theo": the person is the subject's partner. */
function dating(
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
function stopped(rest: Token[], owner: EntityRef, emit: Emit): void {
  const from = rest[1]?.key === 'up' ? 2 : 1;
  const gerund = rest[from];
  if (gerund && /ing$/.test(gerund.lower)) {
    const until = rest.findIndex((t, k) => k > from && STOP.has(t.key) && !['to', 'the', 'at'].includes(t.key));
    emit(owner, FACT_RELATIONS.does, conceptRef(activityKey(rest.slice(from, until < 0 ? undefined : until))), true);
  }
}

/** Fields of work left by name ("I left nursing", "gave up law"), stemmed, and who works in them. */
const FIELDS: Record<string, string> = {
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
};
