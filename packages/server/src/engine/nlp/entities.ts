// Named-entity recognition by rules: gazetteers, capitalisation, context words and number patterns.
import {
  ALIASES,
  GIVEN_NAMES,
  MONTHS,
  NOT_NAMES,
  NUMBER_WORDS,
  ORG_CONTEXT,
  ORG_SUFFIXES,
  ORGANIZATIONS,
  PLACES,
  PRODUCTS,
  RELATIVE_DATES,
  UNITS,
  WEEKDAYS,
} from './lexicon.js';
import type { Token } from './tokens.js';
import { isKind } from './word-kinds.js';

export interface EntityMention {
  /** As written. */
  text: string;
  /** Canonical name ("NYC" -> "New York"). */
  name: string;
  type: string;
  /** Token range [first, last). */
  first: number;
  last: number;
}

/** Gazetteer of an ontology's own entity types: lower-case phrase -> type. */
export type CustomNames = Map<string, string>;

const MAX_PHRASE = 4;
const CONNECTORS = new Set(['of', 'de', 'del', 'la', 'van', 'von', 'and', '&']);
const PLACE_CONTEXT = new Set([
  'in',
  'to',
  'from',
  'near',
  'visit',
  'visited',
  'visiting',
  'around',
  'across',
  'toward',
  'towards',
]);
const DATE_PREFIX = new Set(['last', 'next', 'this', 'on', 'early', 'late', 'mid', 'every']);
const PRONOUNS = new Set([
  'he',
  'she',
  'they',
  'we',
  'you',
  'it',
  'me',
  'him',
  'her',
  'us',
  'them',
  'my',
  'his',
  'their',
  'our',
  'your',
  'its',
]);

/** Verbs (stemmed) that, right after a capitalised word at a sentence start, mark it as a person's name. */
const PERSON_VERBS = new Set([
  'work',
  'settl',
  'live',
  'move',
  'quit',
  'join',
  'retir',
  'marri',
  'left',
  'start',
  'becam',
  'turn',
  'date',
  'studi',
  'relocat',
  'divorc',
  'said',
  'say',
  'told',
  'tell',
]);
/** After "<Name> is": words said of people ("Dan is a nurse", "Kim is married", "Lee is 40"). */
const PERSON_STATES = /^(a|an|married|single|engaged|divorced|separated|retired|pregnant|\d+)$/;

const titleCase = (s: string) => s.replace(/\b\p{L}/gu, (c) => c.toUpperCase());

/** The canonical spelling of a name of a given type. */
export function canonicalName(text: string, type: string): string {
  const lower = text.toLowerCase().replace(/’/g, "'").replace(/\.$/, '');
  const alias = ALIASES[lower] ?? ALIASES[lower.replace(/\./g, '')];
  if (alias && (type === 'place' || type === 'organization')) return alias;
  if (type === 'quantity') return lower;
  // Month and day names keep their capital ("May 2023"); relative dates are lower case ("last week").
  if (type === 'date') return /\p{Lu}/u.test(text) ? titleCase(lower) : lower;
  // Acronyms and brand spellings ("IBM", "iPhone") are kept as written.
  if (/\p{Lu}{2,}|^\p{Ll}+\p{Lu}/u.test(text)) return text;
  return titleCase(lower);
}

const phraseAt = (tokens: Token[], i: number, n: number) =>
  tokens
    .slice(i, i + n)
    .map((t) => t.lower)
    .join(' ');
const isNumber = (t: Token) => /^\$?\d/.test(t.text) || NUMBER_WORDS.has(t.lower);

function gazetteerType(phrase: string, custom: CustomNames): string | null {
  const custom_ = custom.get(phrase);
  if (custom_) return custom_;
  if (PLACES.has(phrase)) return 'place';
  if (ORGANIZATIONS.has(phrase)) return 'organization';
  if (PRODUCTS.has(phrase)) return 'product';
  return null;
}

/** Dates: "May 5th, 2023", "last Friday", "2021", "yesterday", "3/14". Returns the token count or 0. */
function dateAt(tokens: Token[], i: number): number {
  for (let n = 3; n >= 1; n--) if (RELATIVE_DATES.has(phraseAt(tokens, i, n))) return n;
  const t = tokens[i]!;
  let n = 0;
  if (
    DATE_PREFIX.has(t.lower) &&
    tokens[i + 1] &&
    (WEEKDAYS.has(tokens[i + 1]!.lower) || (MONTHS.has(tokens[i + 1]!.lower) && tokens[i + 1]!.capitalized))
  ) {
    if (t.lower === 'on') return 0;
    n = 1;
  }
  const head = tokens[i + n];
  if (!head) return 0;
  if (WEEKDAYS.has(head.lower) && (head.capitalized || n > 0))
    return n + 1 + (tokens[i + n + 1]?.lower === 'night' || tokens[i + n + 1]?.lower === 'morning' ? 1 : 0);
  if (MONTHS.has(head.lower) && head.capitalized) {
    let m = n + 1;
    const next = tokens[i + m];
    if (next && /^\d{1,2}(st|nd|rd|th)?$/.test(next.text)) m++;
    if (tokens[i + m]?.text === ',' && /^\d{4}$/.test(tokens[i + m + 1]?.text ?? '')) m += 2;
    else if (/^\d{4}$/.test(tokens[i + m]?.text ?? '')) m++;
    // "May" alone is usually the verb: without a day or year it needs a preposition before it.
    const before = tokens[i - 1]?.lower;
    if (
      head.lower === 'may' &&
      m === n + 1 &&
      n === 0 &&
      !(before && ['in', 'since', 'until', 'early', 'late', 'mid', 'of', 'last', 'next', 'this'].includes(before))
    )
      return 0;
    return m;
  }
  if (
    /^\d{1,2}(st|nd|rd|th)?$/.test(head.text) &&
    tokens[i + n + 1]?.lower === 'of' &&
    MONTHS.has(tokens[i + n + 2]?.lower ?? '')
  )
    return n + 3;
  if (
    /^\d{1,2}(st|nd|rd|th)?$/.test(head.text) &&
    MONTHS.has(tokens[i + n + 1]?.lower ?? '') &&
    tokens[i + n + 1]!.capitalized
  )
    return n + 2;
  if (n === 0 && /^(19|20)\d\d$/.test(head.text)) return 1;
  if (n === 0 && /^(19|20)\d0s$/.test(head.text)) return 1;
  if (n === 0 && /^\d{4}-\d{2}-\d{2}$|^\d{1,2}\/\d{1,2}(\/\d{2,4})?$/.test(head.text)) return 1;
  return 0;
}

/** Quantities: "$300", "5 km", "three kids", "32 years old", "20%". Returns the token count or 0. */
function quantityAt(tokens: Token[], i: number): number {
  const t = tokens[i]!;
  if (/^\$\d/.test(t.text) || /^\d+(\.\d+)?%$/.test(t.text))
    return 1 + (['k', 'million', 'thousand'].includes(tokens[i + 1]?.lower ?? '') ? 1 : 0);
  if (!isNumber(t) || /^(19|20)\d\d$/.test(t.text)) return 0;
  let n = 1;
  if (tokens[i + 1] && NUMBER_WORDS.has(tokens[i + 1]!.lower) && !/\d/.test(t.text)) n++;
  if (/^\d+k$/.test(t.text)) return n;
  for (let u = 2; u >= 1; u--) if (UNITS.has(phraseAt(tokens, i + n, u))) return n + u;
  if (tokens[i + n]?.lower === 'percent' || tokens[i + n]?.text === '%') return n + 1;
  return 0;
}

/** A run of capitalised words (with "of", "de"... inside), or 0. */
function capitalisedRun(tokens: Token[], i: number): number {
  let n = 0;
  while (i + n < tokens.length) {
    const t = tokens[i + n]!;
    if (t.capitalized && !t.punct && !NOT_NAMES.has(t.lower) && !(t.lower === 'i')) n++;
    else if (
      n > 0 &&
      CONNECTORS.has(t.lower) &&
      // "Lisa and Greg" are two people, "Marks and Spencer" one name.
      !(n === 1 && (t.lower === 'and' || t.lower === '&') && GIVEN_NAMES.has(tokens[i]!.lower)) &&
      tokens[i + n + 1]?.capitalized &&
      !NOT_NAMES.has(tokens[i + n + 1]!.lower)
    )
      n++;
    else break;
  }
  return n;
}

function typeOfName(tokens: Token[], i: number, n: number, custom: CustomNames): string | null {
  const words = tokens.slice(i, i + n).map((t) => t.lower);
  const phrase = words.join(' ');
  const known = gazetteerType(phrase, custom);
  if (known) return known;
  if (ORG_SUFFIXES.has(words[words.length - 1]!) && n > 1) return 'organization';
  if (words.some((w) => w === 'university' || w === 'college' || w === 'school')) return 'organization';
  const before2 = tokens
    .slice(Math.max(0, i - 2), i)
    .map((t) => t.lower)
    .join(' ');
  const before3 = tokens
    .slice(Math.max(0, i - 3), i)
    .map((t) => t.lower)
    .join(' ');
  if (ORG_CONTEXT.has(before2) || ORG_CONTEXT.has(before3) || ORG_CONTEXT.has(tokens[i - 1]?.lower ?? ''))
    return 'organization';
  if (GIVEN_NAMES.has(words[0]!)) return 'person';
  // A city, country, state or island WordNet names (and names no person): "Tacoma", "Saskatchewan".
  if (isKind(phrase, 'place')) return 'place';
  if (PLACE_CONTEXT.has(tokens[i - 1]?.lower ?? '') || tokens[i - 1]?.lower === 'the') return 'place';
  if (/^\p{Lu}{2,5}$/u.test(tokens[i]!.text) && n === 1) return 'organization';
  return 'person';
}

/**
 * Finds the named entities of a text: gazetteer names (places, organisations, products and the
 * ontology's own types), dates, quantities, then runs of capitalised words typed by context.
 */
export function findEntities(tokens: Token[], custom: CustomNames): EntityMention[] {
  const out: EntityMention[] = [];
  const push = (i: number, n: number, type: string) => {
    const text = tokens
      .slice(i, i + n)
      .map((t, k) => (k > 0 && tokens[i + k - 1]!.end < t.start ? ' ' : '') + t.text)
      .join('');
    out.push({ text, name: canonicalName(text, type), type, first: i, last: i + n });
  };
  for (let i = 0; i < tokens.length; ) {
    const t = tokens[i]!;
    if (t.punct || PRONOUNS.has(t.lower)) {
      i++;
      continue;
    }
    // Longest gazetteer phrase first; a lower-case match counts only for written-lower brands ("iPhone") or acronyms.
    let matched = 0;
    for (let n = Math.min(MAX_PHRASE, tokens.length - i); n >= 1 && !matched; n--) {
      const type = gazetteerType(phraseAt(tokens, i, n), custom);
      if (
        type &&
        (tokens[i]!.capitalized || custom.has(phraseAt(tokens, i, n))) &&
        !(n === 1 && NOT_NAMES.has(t.lower))
      ) {
        // A known first word of a longer capitalised name ("Paris Hilton Hotel") yields to the longer name.
        const run = capitalisedRun(tokens, i);
        if (run > n && type !== 'product') break;
        push(i, n, type);
        matched = n;
      }
    }
    if (matched) {
      i += matched;
      continue;
    }
    const date = dateAt(tokens, i);
    if (date) {
      push(i, date, 'date');
      i += date;
      continue;
    }
    const quantity = quantityAt(tokens, i);
    if (quantity) {
      push(i, quantity, 'quantity');
      i += quantity;
      continue;
    }
    const run = capitalisedRun(tokens, i);
    // "In March I ...", "Since moving ...": a closed-class word capitalised at a sentence start is not (part of) a name.
    if (t.sentenceStart && SENTENCE_OPENERS.has(t.lower)) {
      i++;
      continue;
    }
    if (run > 0) {
      const first = tokens[i]!.lower;
      // At a sentence start capitalisation is no evidence: keep only known names or multi-word names.
      // A single word followed by a verb said of people ("Ana works for ...", "Tom moved to ...") is a name too.
      // "Jenna now works as ...", "Ravi has settled in ...": an adverb or an auxiliary may stand before the verb.
      const between = ['now', 'just', 'recent', 'final', 'still', 'have', 'had'].includes(tokens[i + 1]?.key ?? '');
      const next = between && tokens[i + 2] && !tokens[i + 2]!.capitalized ? tokens[i + 2] : tokens[i + 1];
      const personVerb =
        run === 1 &&
        !!next &&
        !next.capitalized &&
        (PERSON_VERBS.has(next.key) ||
          (['is', 'was'].includes(next.lower) &&
            PERSON_STATES.test(
              tokens[i + 2]?.lower === 'now' ? (tokens[i + 3]?.lower ?? '') : (tokens[i + 2]?.lower ?? ''),
            )));
      const plausible = !t.sentenceStart || GIVEN_NAMES.has(first) || run > 1 || next?.text === "'s" || personVerb;
      const type = plausible ? typeOfName(tokens, i, run, custom) : null;
      if (type) push(i, run, type);
      i += run;
      continue;
    }
    i++;
  }
  return out;
}

/** Prepositions, articles and conjunctions that open a sentence before a name or a date. */
const SENTENCE_OPENERS = new Set(
  'in on at since after before during by for from with the a an and but so when while until upon last next this every'.split(
    ' ',
  ),
);

/**
 * Merges short forms of people's names into the longer name they begin ("Mel" -> "Melanie",
 * "Caroline" -> "Caroline Smith") when exactly one longer name fits. Returns name -> canonical name.
 */
export function personAliases(names: Iterable<string>): Map<string, string> {
  const unique = [...new Set(names)].sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
  const out = new Map<string, string>();
  for (const short of unique) {
    const lower = short.toLowerCase();
    if (lower.length < 3) continue;
    const longer = unique.filter(
      (n) =>
        n.length > short.length &&
        (n.toLowerCase().startsWith(`${lower} `) ||
          (!short.includes(' ') && n.toLowerCase().split(' ')[0]!.startsWith(lower))),
    );
    const targets = new Set(longer.map((n) => out.get(n) ?? n));
    if (targets.size === 1) out.set(short, [...targets][0]!);
  }
  return out;
}
