// Changes of a habit or a preference said without the attribute's verb (issue 53, session 14): a habit moved to
// another time or cut to another frequency ("I've moved my meditation to the mornings", "I only swim on Sundays
// now"), a habit lapsed ("I haven't been to the gym in weeks"), a preference between rivals stated by a noun or by
// "over" ("I'm a tea person", "cats over dogs now"), and a liking given up ("I'm so over jazz", "I've gone off sushi").
import { STOP_WORDS } from '../stopwords.js';
import type { EntityMention } from './entities.js';
import { type Ending, hedged, headsOf, singularOf, statementsOf } from './fact-endings.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import { preferred } from './fact-changes.js';
import { frequencyIn } from './fact-phrases.js';
import { whose } from './fact-world.js';
import { TIMES_OF_DAY, WEEKDAYS } from './fact-words.js';
import { keyOf, type Token } from './tokens.js';
import { dict } from './world.js';

/** A habit's new time or frequency: it replaces the subject's value of that dimension for the activity it names. */
export interface HabitChange {
  subject: EntityRef;
  dimension: string;
  value: string;
  /** The sentence's word keys, to find the habit whose activity it names. */
  keys: string[];
  /** A verb of change ("switched", "moved"): with one habit of the dimension, that one changed though unnamed. */
  switched: boolean;
}

/** Keys of words that say a habit's time or frequency changed. */
const SWITCH = new Set(['switch', 'move', 'chang', 'swap', 'shift', 'cut']);
const CHANGE = new Set([...SWITCH, 'instead', 'onli', 'now', 'anymor']);

/** Every time or frequency a sentence states ("twice a week", "on Sundays", "in the evenings", "the mornings"). */
function timesIn(sentence: Token[]): Array<{ dimension: string; value: string }> {
  const out: Array<{ dimension: string; value: string }> = [];
  for (let k = 0; k < sentence.length; ) {
    const f = frequencyIn(sentence.slice(k));
    if (!f) break;
    out.push({ dimension: f.dimension, value: f.value });
    k += f.start + 1;
  }
  // "moved it to the mornings", "switched to evening workouts": a time of day after a verb of change.
  sentence.forEach((t, k) => {
    const time = TIMES_OF_DAY[t.key];
    if (time && time !== 'weekend' && ['the', 'to'].includes(sentence[k - 1]?.lower ?? '') && !out.length)
      out.push({ dimension: 'time_of_day', value: time });
  });
  // A day of the week, or weekends, the only ones now: once a week.
  const weekly = sentence.some(
    (t) => WEEKDAYS.has(t.lower.replace(/s$/, '')) || t.lower === 'weekends' || t.lower === 'weekend',
  );
  if (weekly && !out.some((o) => o.dimension === 'frequency')) out.push({ dimension: 'frequency', value: '1/week' });
  return out;
}

export function habitChangesOf(tokens: Token[], mentions: EntityMention[], self: EntityRef): HabitChange[] {
  const out: HabitChange[] = [];
  for (const { sentence, at } of statementsOf(tokens)) {
    const cue = sentence.findIndex((t) => CHANGE.has(t.key));
    if (cue < 0 || hedged(sentence)) continue;
    const switched = sentence.some((t) => SWITCH.has(t.key));
    const only = sentence.some((t) => t.lower === 'only' || t.lower === 'instead');
    if (!switched && !only) continue;
    const subject = whose(sentence, at, cue, mentions, self);
    if (!subject) continue;
    const keys = sentence.filter((t) => !t.punct && t.key.length > 2 && !STOP_WORDS.has(t.lower)).map((t) => t.key);
    for (const { dimension, value } of timesIn(sentence)) out.push({ subject, dimension, value, keys, switched });
  }
  return out;
}

/** Verbs (keys) of doing that a lapse names: "haven't been to", "haven't played", "haven't posted on". */
const LAPSED = new Set(
  'be go play do touch post practic practis wear worn use ride ridden drive driven smoke smoked drunk drink eat eaten cook run swum swim visit attend written write paint pick open lift skate surf hike climb danc sing train meditat walk walked'
    .split(' ')
    .map((w) => keyOf(w)),
);
/** A lapse: "I haven't been to the gym in weeks", "haven't posted on my blog in months", an ending of what it names. */
const SPANS = new Set(['week', 'weeks', 'month', 'months', 'ages', 'years', 'year', 'forever', 'while']);
export function lapsesOf(tokens: Token[], mentions: EntityMention[], self: EntityRef): Ending[] {
  const out: Ending[] = [];
  for (const { sentence, at } of statementsOf(tokens)) {
    const not = sentence.findIndex(
      (t, k) => t.lower === "n't" && ['have', 'has'].includes(sentence[k - 1]?.key ?? '') && k > 0,
    );
    const bare = not < 0 ? sentence.findIndex((t, k) => t.lower === 'havent' || (t.lower === 'not' && k === 0)) : -1;
    const cue = not >= 0 ? not : bare;
    // "haven't been to the gym", "haven't touched my violin"; not "a bond I haven't felt since".
    if (cue < 0 || !LAPSED.has(sentence[cue + 1]?.key ?? '')) continue;
    const span = sentence.findIndex(
      (t, k) => k > cue && t.lower === 'in' && SPANS.has(sentence[k + 1]?.lower ?? sentence[k + 2]?.lower ?? ''),
    );
    const spanOf = span >= 0 ? span : sentence.findIndex((t, k) => k > cue && t.lower === 'since');
    if (spanOf < 0) continue;
    const subject = whose(sentence, at, cue, mentions, self);
    if (!subject) continue;
    const object = sentence.slice(cue + 1, spanOf);
    out.push({
      subject,
      words: headsOf(object),
      objectKeys: object.filter((t) => !t.punct && !STOP_WORDS.has(t.lower)).map((t) => t.key),
    });
  }
  return out;
}

const CHOOSE_VERBS = new Set(['pick', 'take', 'choos', 'chose']);
/** Rivals one usually prefers one of; a preference of either is the pair's value ("coffee | tea"). */
const RIVALS = [
  ['coffee', 'tea'],
  ['dog', 'cat'],
  ['beach', 'mountain'],
  ['city', 'countryside'],
  ['shower', 'bath'],
  ['summer', 'winter'],
  ['sweet', 'savory'],
  ['android', 'iphone'],
  ['mac', 'pc'],
  ['book', 'movie'],
  ['ebook', 'paperback'],
];
const RIVAL = new Map(RIVALS.flatMap(([a, b]) => [[a!, b!] as const, [b!, a!] as const]));
/** Words after "X over Y" that make it a preference said in passing ("cats over dogs any day"). */
const FOR_GOOD = new Set(['day', 'time', 'way', 'down', 'now']);

/** "I'm a tea person", "more of a beach person", "coffee is my drink now", "cats over dogs now", "switched to tea". */
export function rivalPreferences(tokens: Token[], mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  for (const { sentence, at } of statementsOf(tokens)) {
    // "I'd pick biking over hiking any day", "I'd take the countryside over the city": a choice, though "would".
    const choose = sentence.findIndex(
      (t, k) => CHOOSE_VERBS.has(t.key) && sentence.slice(k + 1, k + 5).some((w) => w.lower === 'over'),
    );
    if (choose >= 0) {
      const subject = whose(sentence, at, choose, mentions, self);
      const from = choose + 1 + (['the', 'a', 'an'].includes(sentence[choose + 1]?.lower ?? '') ? 1 : 0);
      if (subject) preferred(sentence.slice(from), subject, false, emit, ['over']);
      continue;
    }
    if (hedged(sentence)) continue;
    for (let i = 0; i < sentence.length; i++) {
      const x = singularOf(sentence[i]!.lower);
      const y = RIVAL.get(x);
      if (!y) continue;
      const next = sentence[i + 1]?.lower;
      const person = next === 'person' || next === 'people' || next === 'lover';
      const over =
        next === 'over' &&
        (singularOf(sentence[i + 2]?.lower ?? '') === y || sentence.slice(i + 3).some((t) => FOR_GOOD.has(t.lower)));
      const mine =
        ['be', "'s"].includes(sentence[i + 1]?.key ?? '') &&
        sentence[i + 2]?.lower === 'my' &&
        sentence.slice(i + 3).some((t) => t.lower === 'now');
      const switched = ['to'].includes(sentence[i - 1]?.lower ?? '') && SWITCH.has(sentence[i - 2]?.key ?? '');
      if (!person && !over && !mine && !switched) continue;
      const subject = whose(sentence, at, i, mentions, self);
      if (!subject) continue;
      const negated = sentence.slice(Math.max(0, i - 4), i).some((t) => t.lower === 'not' || t.lower === "n't");
      emit(subject, FACT_RELATIONS.prefers, { name: x, type: 'concept' }, negated, [x, y].sort().join(' | '));
      break;
    }
  }
}

const NOT_LIKINGS = new Set(['moon', 'it', 'this', 'that', 'there', 'here', 'budget', 'time']);
/** Generic heads a liking given up may end with ("Nintendo stuff"). */
const GENERIC = new Set(['stuff', 'thing', 'things']);
/** "I'm so over jazz", "I've gone off sushi", "kinda over Nintendo stuff": the liking denied. */
export function likingsGivenUp(tokens: Token[], mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  for (const { sentence, at } of statementsOf(tokens)) {
    for (let i = 1; i < sentence.length - 1; i++) {
      const t = sentence[i]!;
      const over = t.lower === 'over' && sentence.slice(Math.max(0, i - 3), i).some((s) => s.key === 'be');
      const off = t.lower === 'off' && sentence[i - 1]?.lower === 'gone';
      if (!over && !off) continue;
      const object: string[] = [];
      for (let k = i + 1; k < sentence.length; k++) {
        const w = sentence[k]!;
        if (w.punct || (STOP_WORDS.has(w.lower) && object.length) || w.lower === 'now') break;
        if (w.lower === 'the' || w.lower === 'my') continue;
        if (STOP_WORDS.has(w.lower) || /^\d/.test(w.lower)) {
          object.length = 0;
          break;
        }
        if (!GENERIC.has(w.lower)) object.push(w.lower);
      }
      // "over the moon", "over it": joy or a thing gone, no liking.
      if (!object.length || object.length > 3 || NOT_LIKINGS.has(object[0]!)) continue;
      const subject = whose(sentence, at, i, mentions, self);
      if (!subject) continue;
      emit(subject, FACT_RELATIONS.likes, { name: object.join(' '), type: 'concept' }, true);
      break;
    }
  }
}

/** Nouns that hold an activity in their modifiers: "my gym membership", "the pottery classes", "my Netflix subscription". */
const CONTAINERS = new Set(['membership', 'subscription', 'pass', 'class', 'classes', 'lessons', 'routine', 'habit']);
const ENDS_CONTAINER = new Set(['cancel', 'quit', 'stop', 'end', 'drop', 'gave', 'cut']);
/** What a substance is in: "cut out caffeine" ends coffee; "smoke-free", "without a cigarette" end smoking. */
const IN_WHAT: Record<string, string[]> = dict<string[]>(
  Object.entries({
    caffein: ['coffee', 'tea', 'espresso', 'latte', 'cola', 'coffe'],
    cigarett: ['smoke', 'smoking'],
    nicotin: ['smoke', 'smoking', 'vape'],
    alcohol: ['drink', 'beer', 'wine'],
    booze: ['drink', 'beer', 'wine'],
    sugar: ['soda', 'candy', 'sweets'],
  }),
);

/**
 * Endings said another way: a container's activity ("cancelled my gym membership"), an activity replaced ("swim
 * instead of running", "switched from kickboxing to taekwondo", "swapped her yoga for kickboxing"), a substance
 * given up by what holds it ("cut out caffeine" ends coffee; "six months smoke-free", "without a cigarette").
 */
export function replacedEndings(tokens: Token[], mentions: EntityMention[], self: EntityRef): Ending[] {
  const out: Ending[] = [];
  for (const { sentence, at } of statementsOf(tokens)) {
    if (hedged(sentence)) continue;
    // A day's change ("a swim instead of a run today") replaces nothing for good.
    const oneDay = sentence.some(
      (t, k) => ONE_DAY.has(t.lower) || (t.lower === 'this' && sentence[k + 1]?.key === 'morn'),
    );
    const add = (cue: number, object: Token[]) => {
      const words = object.filter(
        (t) => !t.punct && !STOP_WORDS.has(t.lower) && !['my', 'our', 'the'].includes(t.lower),
      );
      if (!words.length) return;
      const subject = whose(sentence, at, cue, mentions, self);
      if (!subject) return;
      const keys = words.flatMap((t) => [t.key, ...(IN_WHAT[t.key] ?? [])]);
      out.push({ subject, words: [...words.map((t) => singularOf(t.lower)), ...keys], objectKeys: keys });
    };
    sentence.forEach((t, k) => {
      if (ENDS_CONTAINER.has(t.key)) {
        const c = sentence.findIndex((w, j) => j > k && j <= k + 5 && CONTAINERS.has(w.lower));
        if (c > k + 1) add(k, sentence.slice(k + 1, c));
        // "cut out caffeine", "gave up sugar"
        const substance = sentence.slice(k + 1, k + 4).find((w) => w.key in IN_WHAT);
        if (substance) add(k, [substance]);
      }
      // "six months smoke-free", "three months without a cigarette"
      const free = /^(\w+)-free$/.exec(t.lower);
      if (free && !negatedNear(sentence, k)) add(k, [{ ...t, key: keyOf(free[1]!), lower: free[1]! }]);
      if (t.lower === 'without' && (sentence[k + 2]?.key ?? '') in IN_WHAT) add(k, [sentence[k + 2]!]);
      if (oneDay) return;
      // "instead of running"
      if (t.lower === 'instead' && sentence[k + 1]?.lower === 'of' && sentence[k + 2]) add(k, [sentence[k + 2]!]);
      // "switched from kickboxing to taekwondo"
      if (SWITCH.has(t.key) && sentence[k + 1]?.lower === 'from') {
        const to = sentence.findIndex((w, j) => j > k + 1 && w.lower === 'to');
        if (to > k + 2) add(k, sentence.slice(k + 2, to));
      }
      // "I've moved on from flat whites", "moved on from contemporary"
      if (t.lower === 'moved' && sentence[k + 1]?.lower === 'on' && sentence[k + 2]?.lower === 'from') {
        const object: Token[] = [];
        for (const w of sentence.slice(k + 3)) {
          if (w.punct || (STOP_WORDS.has(w.lower) && object.length)) break;
          object.push(w);
        }
        add(k, object);
      }
      // "swapped her morning yoga for kickboxing"
      if (t.key === 'swap') {
        const f = sentence.findIndex((w, j) => j > k && w.lower === 'for');
        if (f > k + 1) add(k, sentence.slice(k + 1, f));
      }
    });
  }
  return out;
}
const ONE_DAY = new Set(['today', 'yesterday', 'tonight', 'tomorrow']);
const negatedNear = (sentence: Token[], k: number) =>
  sentence.slice(Math.max(0, k - 3), k).some((t) => t.lower === 'not' || t.lower === "n't");
