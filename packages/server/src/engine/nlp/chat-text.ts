// Chat wording put in the rules' spelling before a statement is read (issue 53): what people type to an assistant
// drops apostrophes ("im", "dont"), writes "i", and shortens kin and attribute words ("bf", "bday", "fave").
// Only words with one reading are rewritten: "its", "were", "well", "ill", "id", "shed" and "hell" are words too.
// A text typed all in lower case ("my sister anna moved to seville") gets its known names and places capitalised,
// since the entity rules take capitalisation as evidence of a name.
import { GIVEN_NAMES, PLACES } from './lexicon.js';
import { wordsOfKind } from './word-kinds.js';
import { lookupTable } from '../../core/lookup.js';

/** A contraction typed without its apostrophe -> the spelling the tokenizer splits. */
const CONTRACTIONS: Record<string, string> = lookupTable({
  im: "I'm",
  ive: "I've",
  dont: "don't",
  doesnt: "doesn't",
  didnt: "didn't",
  cant: "can't",
  wont: "won't",
  isnt: "isn't",
  arent: "aren't",
  wasnt: "wasn't",
  werent: "weren't",
  havent: "haven't",
  hasnt: "hasn't",
  hadnt: "hadn't",
  wouldnt: "wouldn't",
  couldnt: "couldn't",
  shouldnt: "shouldn't",
  aint: "ain't",
  theyre: "they're",
  youre: "you're",
  hes: "he's",
  shes: "she's",
  thats: "that's",
  whats: "what's",
  theres: "there's",
  theyve: "they've",
  weve: "we've",
  youve: "you've",
});

/** Chat shorthand for kin, dates and attribute words -> the word the rules know. */
const SHORTHAND: Record<string, string> = lookupTable({
  bf: 'boyfriend',
  gf: 'girlfriend',
  hubby: 'husband',
  wifey: 'wife',
  sis: 'sister',
  bro: 'brother',
  bday: 'birthday',
  'b-day': 'birthday',
  fav: 'favourite',
  fave: 'favourite',
  favs: 'favourites',
  faves: 'favourites',
  yrs: 'years',
  yr: 'year',
  'y/o': 'years old',
  rn: 'right now',
  atm: 'at the moment',
  nowadays: 'now',
  gonna: 'going to',
  wanna: 'want to',
  gotta: 'got to',
  cuz: 'because',
  coz: 'because',
  bc: 'because',
  'w/': 'with',
  'w/o': 'without',
  u: 'you',
  ur: 'your',
  '&': 'and',
});

const WORD = /(?<![\p{L}\p{N}'’-])(?:[\p{L}][\p{L}/-]*|&)(?![\p{L}\p{N}'’])/gu;

/**
 * Given names and places that are also everyday words (WordNet has them as a verb, adjective, adverb or lower-case
 * noun: "mark", "rose", "turkey", "phoenix"): left in lower case, where they are more often the word.
 */
const EVERYDAY = new Set(
  (
    'mark frank jack christian max bill nick grace amber rose ruby ivy lily carol jean park lee min li mason john ' +
    'randy billy terry bobby ' +
    'phoenix turkey china chile brazil la antarctic hollywood'
  ).split(' '),
);

let names: Map<string, string> | null = null;
/** Lower-case name or place (one word or several) -> its capitalised spelling. */
function knownNames(): Map<string, string> {
  if (names) return names;
  names = new Map();
  for (const name of [...GIVEN_NAMES, ...PLACES, ...wordsOfKind('place')]) {
    if (EVERYDAY.has(name) || name.length < 3 || name.startsWith('the ')) continue;
    names.set(
      name,
      name.replace(/(^|[\s-])(\p{L})/gu, (_, before: string, letter: string) => before + letter.toUpperCase()),
    );
  }
  return names;
}

/** Capitalised words other than a sentence's first and "I" ("I'm"): the writer capitalises names. */
const MID_CAPITAL = /(?<![.!?]\s*|^\s*|["“(]\s*)\b(?!I\b|I['’])\p{Lu}/u;

/** A text typed all in lower case with its known names and places capitalised (the longest phrase first). */
function capitalised(text: string): string {
  if (MID_CAPITAL.test(text)) return text;
  const known = knownNames();
  return text.replace(/(?<![\p{L}'’])\p{L}+(?:[ -]\p{L}+)*/gu, (run) => {
    const words = run.split(/(?=[ -])/);
    let out = '';
    for (let i = 0; i < words.length; ) {
      let taken = 0;
      for (let n = Math.min(3, words.length - i); n >= 1 && !taken; n--) {
        const phrase = words.slice(i, i + n).join('');
        const key = phrase.replace(/^[ -]/, '');
        const spelled = key === key.toLowerCase() ? known.get(key) : undefined;
        if (spelled) {
          out += phrase.slice(0, phrase.length - key.length) + spelled;
          taken = n;
        }
      }
      if (!taken) out += words[i]!;
      i += taken || 1;
    }
    return out;
  });
}

/** Irregular past forms a chat message starts with when it drops its "I" ("got a job at Monzo", "sold the car"). */
const PAST = new Set(
  (
    'got gotten quit left sold bought gave lost broke became took made had found went began came met won spent paid ' +
    'split sent threw drove ran swam ate drank fell grew wrote told thought heard kept felt put set brought caught ' +
    'taught sought'
  ).split(' '),
);
/** Sentence-initial participles that are adjectives of a mood or state ("Tired today", "Excited for Friday"). */
const STATES = new Set(
  (
    'tired excited bored stressed worried scared annoyed confused exhausted pleased thrilled stoked relieved ' +
    'shocked surprised amazed overwhelmed disappointed frustrated interested obsessed blessed hooked ' +
    'supposed used based related need'
  ).split(' '),
);
/** Words a chat message may open with, and adverbs before the verb whose subject it drops. */
const OPENERS = new Set(
  'ok okay so well omg oh lol haha yay ugh wow btw anyway and but update news guess what hey hi yeah yes'.split(' '),
);
const ADVERBS = new Set('just finally recently officially actually already also literally totally since'.split(' '));

/**
 * "Just moved to Leeds!", "finally got the keys": a sentence with no subject that starts (after openers) with a verb
 * in the past tense is the writer's own ("I just moved to Leeds!"); "been living here a year" -> "I've been ...".
 */
function subjectRestored(text: string): string {
  // The white space after a stop taken whole ((?=(\s+))\2: no backtracking into it) and the sentence possibly empty, a
  // no-op: retried from each line break of a long run, the pattern read the run again each time (quadratic).
  const sentences = /(^(?=[^.!?;\n])|[.!?;](?=(\s+))\2|\n(?=(\s*))\3)([^.!?;\n]*)/g;
  return text.replace(sentences, (whole, start: string, _a, _b, sentence: string) => {
    const words = sentence.split(/(\s+)/);
    let i = 0;
    const blank = (w: string) => /^\s*$|^[,:!-]+$/.test(w);
    while (i < words.length && (OPENERS.has(bare(words[i]!)) || blank(words[i]!))) i++;
    const at = i;
    while (i < words.length && (ADVERBS.has(bare(words[i]!)) || blank(words[i]!))) i++;
    const word = bare(words[i] ?? '');
    if (!word || STATES.has(word)) return whole;
    const past = PAST.has(word) || (/^[a-z]{3,}ed$/.test(word) && !/eed$/.test(word));
    const been = word === 'been';
    // "Haven't meditated since January", "didn't renew the lease": a denial with no subject is the writer's too.
    // Not a greeting ("Haven't talked with you in a while"), which states nothing of the writer's own.
    const denied = DENIED.has(word.replace('’', "'")) && !/\byou\b/i.test(sentence);
    if (!past && !been && !denied) return whole;
    // A capitalised participle mid-sentence is a name ("Ted"); "been" needs "have" in the rules' shape.
    if (/^\p{Lu}/u.test(words[i]!) && i > 0) return whole;
    words.splice(at, 0, been ? "I've " : 'I ');
    const restored = words.join('');
    return (
      start +
      (at === 0
        ? restored.replace(
            /^I(['’]ve)? (\p{Lu})/u,
            (_, have: string | undefined, c: string) => `I${have ?? ''} ${c.toLowerCase()}`,
          )
        : restored)
    );
  });
}
const DENIED = new Set(["haven't", 'havent', "hadn't", 'hadnt', "didn't", 'didnt']);
// From the start of the marks' run only (from each mark of "!!!...x" the pattern read to the end: quadratic).
const bare = (word: string) => word.toLowerCase().replace(/(?<![,!?.:])[,!?.:]+$/, '');

/** Kin words that name the writer's own when they open a sentence bare ("Mum retired", "dad just turned 60"). */
const BARE_KIN =
  /(^|[.!?]\s+)(mum|mom|dad|mummy|daddy|grandma|grandpa|granny|grandad|nan|nana)\b(?=['’]s\b|\s+\p{L})/giu;

/** Both parents or grandparents named as a pair ("mum and dad", "my grandma and grandpa"). */
const KIN_PAIRS =
  /\b(?:(my|our) )?(?:(?:mum|mom|mother) and (?:dad|father)|(?:dad|father) and (?:mum|mom|mother)|(grand)(?:ma|mother|pa|father|ad) and grand(?:ma|mother|pa|father|ad))\b/giu;

/**
 * "Cork-based" -> "based in Cork": what .replace(/\b(\p{Lu}[\p{L}]+)-based\b/gu, 'based in $1') did, each run of letters
 * read once (from each capital of a long run, the pattern read the run again: quadratic). The name starts at the
 * run's first capital after a word boundary (\b: ASCII word characters) with a letter after it.
 */
function basedIn(text: string): string {
  let out = '';
  let done = 0;
  for (const m of text.matchAll(/(?<!\p{L})\p{L}+(?=-based\b)/gu)) {
    const run = m[0];
    const word = (c: string | undefined) => c !== undefined && /\w/.test(c);
    let before = text[m.index - 1];
    let i = 0;
    for (const c of run) {
      if (/\p{Lu}/u.test(c) && word(before) !== word(c) && i + c.length < run.length) {
        out += `${text.slice(done, m.index + i)}based in ${run.slice(i)}`;
        done = m.index + run.length + '-based'.length;
        break;
      }
      before = c;
      i += c.length;
    }
  }
  return out + text.slice(done);
}

/** "Cork-based" -> "based in Cork"; "mum and dad" -> "my parents"; a bare kin word opening a sentence -> "my mum". */
const spelledOut = (text: string) =>
  basedIn(text)
    // Words for a favourite: "my go-to drink", "my top pick", "my number one", "at the top of my list".
    .replace(
      /\b(my|his|her|our|their)( new)? (?:go-to|go to|top pick|top choice|number one|no\. ?1)\b/giu,
      '$1$2 favourite',
    )
    .replace(/\bat the top of (my|his|her|our|their) list\b/giu, '$1 favourite')
    .replace(
      /\b(my|his|her|our|their|'s) (?:new )?top (?=food|drink|dish|movie|film|book|band|song|show|game|sport|team|dessert|snack|place)/giu,
      '$1 favourite ',
    )
    .replace(KIN_PAIRS, (whole, owner: string | undefined, grand: string | undefined) => {
      const pair = `${grand ? 'grand' : ''}parents`;
      return `${owner ?? (whole[0] === whole[0]!.toUpperCase() ? 'My' : 'my')} ${pair}`;
    })
    .replace(
      BARE_KIN,
      (_, start: string, kin: string) =>
        `${start}${start ? 'my' : kin[0] === kin[0]!.toUpperCase() ? 'My' : 'my'} ${kin.toLowerCase()}`,
    );

/** The text with chat spellings rewritten; unchanged when it has none. */
export function chatText(text: string): string {
  return subjectRestored(spelledOut(capitalised(text))).replace(WORD, (word) => {
    if (word === 'i') return 'I';
    const lower = word.toLowerCase();
    const contraction = CONTRACTIONS[lower];
    if (contraction)
      return word[0] === word[0]!.toUpperCase() && lower !== 'im' && lower !== 'ive' ? cap(contraction) : contraction;
    const short = SHORTHAND[lower];
    // A capitalised shorthand may be a name or an acronym ("U2", "BC"): only the lower-case spelling is rewritten.
    return short && word === lower ? short : word;
  });
}

const cap = (s: string) => s[0]!.toUpperCase() + s.slice(1);
