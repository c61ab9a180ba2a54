// Favourites stated without the kind of thing ("Coconut milk ice cream is my favourite", "these days my favourite is
// mango sorbet") or by a replacement ("Inception has replaced Titanic as my favourite movie") (issue 53, session 14).
// A favourite without its kind takes the kind of its value's head in the lexicon of kinds (a food, an animal, a sport).
import { STOP_WORDS } from '../stopwords.js';
import { hedged, statementsOf } from './fact-endings.js';
import type { Emit, EntityRef } from './fact-model.js';
import { favoriteKind } from './lexicon.js';
import type { Token } from './tokens.js';
import { type NounKind, nounIs } from './word-kinds.js';

/** A sentence quoting someone else's favourite ("she says my favourite ...") is not the writer's. */
const OTHERS = new Set(['says', 'said', 'thinks', 'told']);
const FAVOURITE = new Set(['favorite', 'favourite', 'fave', 'fav']);
/** Words that open a sentence without being part of what is favoured ("Honestly, ...", "These days ..."). */
const OPENERS = new Set([
  'honestly',
  'these',
  'days',
  'now',
  'lately',
  'so',
  'ok',
  'okay',
  'well',
  'yeah',
  'but',
  'and',
]);
const KINDS: Array<[NounKind, string]> = [
  ['food', 'food'],
  ['animal', 'animal'],
  ['sport', 'sport'],
  ['instrument', 'instrument'],
  ['alcohol', 'drink'],
];
/** Drinks, which the lexicon files under food or alcohol: a favourite drink is of these. */
const DRINKS = new Set(
  'coffee tea latte cappuccino espresso americano mocha macchiato matcha chai juice smoothie soda cola lemonade water wine beer cider gin vodka whisky rum tequila prosecco champagne cocktail kombucha'
    .split(' ')
    .concat(['flat white', 'hot chocolate', 'iced coffee', 'cold brew']),
);
/** Words that end a value's phrase after "my favourite is ..." ("mango sorbet, I've ..."). */
const ENDS = new Set(['now', 'these', 'lately', 'anymore', 'though']);

/** The kind of a favourite's value by its head: a food, an animal...; an activity when it starts with a gerund. */
function kindOfValue(words: string[]): string | null {
  if (/ing$/.test(words[0]!) && words[0]!.length > 5) return 'activity';
  const one = words.map((w) => w.replace(/s$/, ''));
  if (one.some((w) => DRINKS.has(w)) || DRINKS.has(one.slice(-2).join(' '))) return 'drink';
  const head = words[words.length - 1]!;
  return KINDS.find(([kind]) => nounIs(head, kind))?.[1] ?? null;
}

/** The words of a noun phrase, skipping articles and openers; null when a function word or a figure is in it. */
function phraseValue(tokens: Token[]): string[] | null {
  const words = tokens
    .filter((t) => !t.punct && !OPENERS.has(t.lower) && !['the', 'a', 'an', 'this', 'that'].includes(t.lower))
    .map((t) => t.lower);
  if (!words.length || words.length > 5 || words.some((w) => STOP_WORDS.has(w) || /^\d/.test(w))) return null;
  return words;
}

export function favouritesUnnamed(tokens: Token[], self: EntityRef, emit: Emit): void {
  for (const { sentence } of statementsOf(tokens)) {
    if (hedged(sentence)) continue;
    const fav = sentence.findIndex((t) => FAVOURITE.has(t.lower));
    if (fav < 1 || !['my', 'new'].includes(sentence[fav - 1]!.lower)) continue;
    const my = sentence[fav - 1]!.lower === 'my' ? fav - 1 : fav - 2;
    if (sentence[my]?.lower !== 'my') continue;
    // "my favourite" is the writer's, whoever else the sentence names ("Inception has replaced Titanic as my ...").
    const subject = sentence.slice(0, my).some((t) => OTHERS.has(t.lower)) ? null : self;
    if (!subject) continue;
    const clauseStart = Math.max(0, sentence.findLastIndex((t, k) => k < my && t.punct) + 1);
    const after = sentence[fav + 1];
    // "X is my favourite[, ...]" and "X has replaced Y as my favourite K".
    const replaced = sentence.findIndex((t, k) => k < my && ['replac', 'overtaken', 'overtak'].includes(t.key));
    if (replaced > 0 && sentence[my - 1]?.lower === 'as') {
      const value = phraseValue(sentence.slice(clauseStart, replaced).filter((t) => !['have', 'be'].includes(t.key)));
      const kindWords = sentence
        .slice(fav + 1)
        .filter((t) => !t.punct)
        .map((t) => t.lower);
      const kind = kindWords.length && kindWords.length <= 3 ? favoriteKind(kindWords) : value && kindOfValue(value);
      if (value && kind) emit(subject, `favorite_${kind}`, { name: value.join(' '), type: 'concept' }, false);
      continue;
    }
    const kindless = !after || after.punct || ENDS.has(after.lower) || after.key === 'be';
    if (!kindless) continue;
    let value: string[] | null = null;
    if (after?.key === 'be') {
      // "my favourite is mango sorbet"
      const rest: Token[] = [];
      for (const t of sentence.slice(fav + 2)) {
        if (t.punct || ENDS.has(t.lower)) break;
        rest.push(t);
      }
      value = phraseValue(rest);
    } else if (sentence[my - 1]?.key === 'be') {
      // "coconut milk ice cream is my favourite"
      value = phraseValue(sentence.slice(clauseStart, my - 1));
    }
    const kind = value && kindOfValue(value);
    if (value && kind) emit(subject, `favorite_${kind}`, { name: value.join(' '), type: 'concept' }, false);
  }
}

/** "I've switched to flat whites", "moved on to oat lattes": the drink or food switched to is the favourite of its kind now. */
export function favouritesSwitched(tokens: Token[], self: EntityRef, emit: Emit): void {
  for (const { sentence } of statementsOf(tokens)) {
    if (hedged(sentence) || sentence.some((t) => OTHERS.has(t.lower) || t.lower === 'he' || t.lower === 'she'))
      continue;
    const to = sentence.findIndex(
      (t, k) =>
        t.lower === 'to' &&
        ['switched', 'moved', 'converted'].includes(
          sentence[k - 1]?.lower === 'on' ? sentence[k - 2]!.lower : (sentence[k - 1]?.lower ?? ''),
        ),
    );
    if (to < 0) continue;
    const rest: Token[] = [];
    for (const t of sentence.slice(to + 1)) {
      if (t.punct || ENDS.has(t.lower) || (STOP_WORDS.has(t.lower) && rest.length)) break;
      rest.push(t);
    }
    const value = phraseValue(rest);
    const kind = value && kindOfValue(value);
    if (value && (kind === 'drink' || kind === 'food'))
      emit(self, `favorite_${kind}`, { name: value.map((w) => w.replace(/s$/, '')).join(' '), type: 'concept' }, false);
  }
}
