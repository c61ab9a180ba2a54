// Text normalisation, tokenisation and stemming shared by every lexical feature.
import porter2 from 'wink-porter2-stemmer';
import { STOP_WORDS } from './stopwords.js';
import { MAY_NAME_TIME, TIME_RULE_WORD } from './temporal.js';

// Scripts written without spaces between words: we index overlapping character
// bigrams for them (the classic CJK bigram approach) because no dictionary is available offline.
// U+30FC (prolonged sound mark) and U+3005 (iteration mark) are script "Common" but part of words.
const UNSPACED =
  '\\u30fc\\u3005\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Thai}\\p{Script=Lao}\\p{Script=Khmer}\\p{Script=Myanmar}';
const SEGMENT_RE = new RegExp(`[${UNSPACED}]+|[\\p{L}\\p{N}\\p{M}]+`, 'gu');
const UNSPACED_RE = new RegExp(`^[${UNSPACED}]`, 'u');
// Latin/Greek/Cyrillic combining accents only; marks of Indic scripts etc. carry meaning and stay.
const ACCENTS_RE = /[\u0300-\u036f]/g;
// English clitics ("Caroline's", "I'm", "we'll") would otherwise leave stray tokens.
const CLITIC_RE = /['’‘`](s|t|m|re|ll|ve|d)(?![\p{L}\p{N}])/gu;
const ASCII_WORD_RE = /^[a-z]+$/;
const ASCII_RE = /^[\x00-\x7f]*$/;
// SEGMENT_RE and CLITIC_RE restricted to ASCII, where \p{L}\p{N}\p{M} are [a-z0-9] after lower-casing.
const ASCII_SEGMENT_RE = /[a-z0-9]+/g;
const ASCII_CLITIC_RE = /['`](s|t|m|re|ll|ve|d)(?![a-z0-9])/g;

/** NFKC, lower case, accent folding for Latin-like scripts. */
export function foldCase(text: string): string {
  // ASCII is its own NFKC/NFD/NFC form and has no accents: lower case is the whole fold.
  if (ASCII_RE.test(text)) return text.toLowerCase();
  return text.normalize('NFKC').toLowerCase().normalize('NFD').replace(ACCENTS_RE, '').normalize('NFC');
}

/**
 * Canonical form for duplicate detection: case, width, accents, punctuation and
 * whitespace differences disappear; letters and digits of every script remain.
 */
export function normalizeText(text: string): string {
  const folded = foldCase(text);
  const parts = folded.match(/[\p{L}\p{N}\p{M}]+/gu);
  return parts ? parts.join(' ') : '';
}

/** Surface tokens (no stop-word removal, no stemming). CJK runs become character bigrams. */
export function tokenize(text: string): string[] {
  // ASCII text (most of it): the same tokens by ASCII-only patterns, which are several times faster.
  if (ASCII_RE.test(text)) return text.toLowerCase().replace(ASCII_CLITIC_RE, '').match(ASCII_SEGMENT_RE) ?? [];
  const folded = foldCase(text).replace(CLITIC_RE, '');
  const out: string[] = [];
  for (const m of folded.matchAll(SEGMENT_RE)) {
    const seg = m[0];
    if (UNSPACED_RE.test(seg)) {
      const chars = Array.from(seg);
      if (chars.length === 1) out.push(seg);
      for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i]! + chars[i + 1]!);
    } else {
      out.push(seg);
    }
  }
  return out;
}

/** Porter2 for plain ASCII words; other scripts are kept as they are. */
export function stem(word: string): string {
  // A held word passed the checks below when it was stemmed: looked up first (most words are).
  const held = words.get(word);
  if (held !== undefined) return held.stem;
  // Long "words" are ids, hashes or junk (the stemmer's regexes are slow on them); not held either.
  return stemmable(word) ? wordOf(word).stem : word;
}

const stemmable = (word: string) => word.length >= 3 && word.length <= 40 && ASCII_WORD_RE.test(word);

export function isStopWord(token: string): boolean {
  return STOP_WORDS.has(token);
}

/** Index/query terms: tokens minus stop words, stemmed. */
export function analyze(text: string): string[] {
  const out: string[] = [];
  for (const t of tokenize(text)) {
    if (STOP_WORDS.has(t)) continue;
    out.push(stem(t));
  }
  return out;
}

/**
 * Rough token count for budgets (no tokenizer download): ~4 chars per token for
 * Latin text, ~1 token per CJK character, ~2 chars per token for other scripts.
 */
export function estimateTokens(text: string): number {
  if (!text) return 0;
  let ascii = 0;
  let cjk = 0;
  let other = 0;
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (c < 0x80) ascii++;
    else if (
      (c >= 0x2e80 && c <= 0x9fff) ||
      (c >= 0xac00 && c <= 0xd7af) ||
      (c >= 0xf900 && c <= 0xfaff) ||
      c >= 0x20000
    )
      cjk++;
    else other++;
  }
  return Math.ceil(ascii / 4) + cjk + Math.ceil(other / 2);
}

/**
 * Sentences of a text: split after . ! ? (not after a single initial or a number's dot) and at line breaks. The
 * `(?=\s)` first: the look-behind, tried at every position, read back over a run of "!!!..." each time (quadratic).
 */
export function splitSentences(text: string): string[] {
  return text
    .split(/(?=\s)(?<=(?:[^\s.!?]{2,}|\d)[.!?]+["')\]]?)\s+(?=\S)|\n+/u)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Words that place a text in time (MemoryIndex's namesTime feature, for when-questions); English, like the temporal parser. */
const TIME_WORD =
  '(?:yesterday|tomorrow|tonight|today|ago|last|next|weeks?|weekend|months?|years?|(?:mon|tues|wednes|thurs|fri|satur|sun)day|january|february|march|april|may|june|july|august|september|october|november|december|\\d{4})';
const TIME_WORDS = new RegExp(`\\b${TIME_WORD}\\b`, 'i');
/** First-person words (English, like TIME_WORDS). */
const FIRST_PERSON_WORD = '(?:i|me|my|mine|myself|we|us|our|ours|ourselves)';
const FIRST_PERSON = new RegExp(`\\b${FIRST_PERSON_WORD}\\b`, 'i');

export function namesTime(text: string): boolean {
  return TIME_WORDS.test(text);
}

export function speaksInFirstPerson(text: string): boolean {
  return FIRST_PERSON.test(text);
}

/**
 * Text ending with a question mark, an image caption the server appended ignored: what
 * /[?？]\s*(?:\[image:[^\]]*\])?\s*$/ says, in one pass (the pattern, tried after each "?", read to the end each
 * time: quadratic in a text of "?[image:" repeated).
 */
export function endsAsking(text: string): boolean {
  const end = text.trimEnd().length;
  if (asksBefore(text, end)) return true;
  if (text[end - 1] !== ']') return false;
  // A caption is the last "]" and an "[image:" after the "]" before it; any such "[image:" may open it.
  for (let at = text.indexOf('[image:', text.lastIndexOf(']', end - 2) + 1); at >= 0 && at < end; )
    if (asksBefore(text, at)) return true;
    else at = text.indexOf('[image:', at + 1);
  return false;
}
/** Whether text[0, end) ends with a question mark and white space. */
function asksBefore(text: string, end: number): boolean {
  let i = end;
  while (i > 0 && /\s/.test(text[i - 1]!)) i--;
  return text[i - 1] === '?' || text[i - 1] === '？';
}

/** What the index reads of a memory's text (MemoryIndex.upsert, and the index cache's parseTemporal). */
export interface TextScan {
  /** analyze(text) */
  terms: string[];
  /** namesTime(text) */
  namesTime: boolean;
  /** speaksInFirstPerson(text) */
  firstPerson: boolean;
  /** Whether parseTemporal's cue is in it (TIME_RULE_WORD in a word of an ASCII text, else MAY_NAME_TIME): without, the text names no time. */
  mayNameTime: boolean;
  /** endsAsking(text) */
  endsAsking: boolean;
}

/**
 * What a word (lower case) gives: its stem, its term in an index (null: a stop word) and, for an ASCII token, the
 * flags scanText reads.
 */
interface Word {
  stem: string;
  term: string | null;
  flags: number;
}
const [NAMES_TIME, FIRST_PERSON_FLAG, TIME_CUE] = [1, 2, 4];
const TIME_WORD_RE = new RegExp(`^${TIME_WORD}$`);
const FIRST_PERSON_WORD_RE = new RegExp(`^${FIRST_PERSON_WORD}$`);
/**
 * The words stemmed or scanned so far by this thread, each worked out once: the one cache of words. Single words,
 * no text, memory or end user; bounded, so that arbitrary text cannot grow it without limit, and emptied by
 * forgetWords when a memory is forgotten (docs/api.md, What forgetting removes).
 */
const words = new Map<string, Word>();
const WORDS_HELD = 200_000;

function wordOf(token: string): Word {
  const stemmed = stemmable(token) ? porter2(token) : token;
  const word: Word = {
    stem: stemmed,
    term: STOP_WORDS.has(token) ? null : stemmed,
    flags:
      (TIME_WORD_RE.test(token) ? NAMES_TIME : 0) |
      (FIRST_PERSON_WORD_RE.test(token) ? FIRST_PERSON_FLAG : 0) |
      (TIME_RULE_WORD.test(token) ? TIME_CUE : 0),
  };
  if (words.size >= WORDS_HELD) forgetWords();
  words.set(token, word);
  return word;
}

/**
 * Empties the cache of words: a word that only forgotten memories had leaves this thread with it. So does the last
 * text a regular expression matched, which V8 keeps per thread (`RegExp.input`, `RegExp.lastMatch`) until the next
 * match: a match of nothing takes its place.
 */
export function forgetWords(): void {
  words.clear();
  asciiWords.clear();
  /(?:)/.exec('');
}

/**
 * Moves this thread on to a new Buffer pool: `Buffer.from` of a string and `Buffer.allocUnsafe` under half of
 * `Buffer.poolSize` (64 KiB on Node 24) cut their bytes from a slab shared by the thread, and any Buffer cut from the
 * current slab exposes all of it (`.buffer`): a database driver's messages, a request's body, a memory's text. After
 * an erasure the old slab goes once the Buffers cut from it do. The new slab is zeroed whole, and so is what was never
 * handed out of the old one: a slab is not cleared when made, so it shows what its memory held before (freed copies).
 * Once per erasure (at most three allocations).
 */
export function leaveBufferPool(): void {
  const filler = (Buffer.poolSize >>> 1) - 1;
  if (filler < 8) return;
  const last = Buffer.allocUnsafe(1);
  new Uint8Array(last.buffer, last.byteOffset).fill(0);
  let taken = Buffer.allocUnsafe(filler);
  while (taken.buffer === last.buffer) taken = Buffer.allocUnsafe(filler);
  new Uint8Array(taken.buffer).fill(0);
}

/** How many words the cache holds. */
export const wordsHeld = (): number => words.size;

/**
 * analyze, namesTime, speaksInFirstPerson, the temporal cue and endsAsking of a text together. An ASCII text (most;
 * the en and em dashes count as ASCII punctuation: scanApart reads them as such) is read in one pass: its words are the runs of letters and digits (lower case; tokenize's clitics are
 * such runs, and stop words), and each distinct word's term and flags are worked out once (a map lookup a word,
 * where the four apart cost a stop-word, a stem and three regular-expression passes). `\b` of the two
 * flags' expressions also counts `_` as a word character: a text with one has them tested as they are.
 * Any other text: each as it is.
 */
export function scanText(text: string): TextScan {
  const lower = text.toLowerCase();
  const terms: string[] = [];
  let flags = 0;
  let underscore = false;
  for (let i = 0, n = text.length; i < n; ) {
    const c = text.charCodeAt(i);
    if (c >= 0x80 && WORD_CODES[c] !== 0) return scanApart(text);
    if (!isAsciiAlnum(c)) {
      if (c === 0x5f) underscore = true;
      i++;
      continue;
    }
    const start = i;
    while (++i < n && isAsciiAlnum(text.charCodeAt(i)));
    const token = lower.slice(start, i);
    const word = words.get(token) ?? wordOf(token);
    flags |= word.flags;
    if (word.term !== null) terms.push(word.term);
  }
  return {
    terms,
    namesTime: underscore ? namesTime(text) : (flags & NAMES_TIME) !== 0,
    firstPerson: underscore ? speaksInFirstPerson(text) : (flags & FIRST_PERSON_FLAG) !== 0,
    mayNameTime: (flags & TIME_CUE) !== 0,
    endsAsking: endsAsking(text),
  };
}

function isAsciiAlnum(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a);
}

/**
 * What scanText and scanNumbered read each UTF-16 code as: an ASCII letter or digit as its lower case, other ASCII
 * (and the en and em dashes) as 0, `_` as UNDERSCORE, anything else as APART (the text is read by scanApart). The
 * dashes are most of the non-ASCII texts (1,822 of 2,772 in the latency bench's 300,000): no letter, digit or mark,
 * the same under NFKC and lower case, and no word character to `\b`, so scanApart finds in them what it finds in a
 * `-`, and they took ~40 times an ASCII text's time there.
 */
const lowerCode = (c: number) => (c >= 0x41 && c <= 0x5a ? c + 0x20 : c);
const [UNDERSCORE, APART] = [1, 0xff];
const WORD_CODES = (() => {
  const codes = new Uint8Array(0x10000).fill(APART);
  for (let c = 0; c < 0x80; c++) codes[c] = isAsciiAlnum(c) ? lowerCode(c) : c === 0x5f ? UNDERSCORE : 0;
  codes[0x2013] = codes[0x2014] = 0;
  return codes;
})();
/** Whether a WORD_CODES value is a letter's or digit's. */
const inWord = (code: number) => code >= 0x30 && code !== APART;

function scanApart(text: string): TextScan {
  return {
    terms: analyze(text),
    namesTime: namesTime(text),
    firstPerson: speaksInFirstPerson(text),
    mayNameTime: MAY_NAME_TIME.test(text),
    endsAsking: endsAsking(text),
  };
}

/** ASCII words of at most this many characters are held in the table of ASCII words (longer ones: ids, junk). */
const TABLE_WORD_CHARS = 48;

/**
 * The cache of words' ASCII words found by their characters in a text, without a string made for each (scanNumbered):
 * an open-addressing table of word numbers by FNV-1a hash of the lower-case characters, each word's characters in
 * one arena. Emptied with the cache of words (forgetWords); `generation` counts the times, so that what a build
 * keeps by word number (TermNumbering) is dropped with them.
 */
class AsciiWords {
  generation = 0;
  /** The words by number. */
  readonly words: Word[] = [];
  private slots = new Int32Array(1 << 12);
  private starts = new Int32Array(1 << 11);
  private chars = new Uint8Array(1 << 14);
  private used = 0;

  clear(): void {
    if (this.words.length === 0) return;
    this.generation++;
    this.words.length = 0;
    this.slots.fill(0);
    this.used = 0;
  }

  /** The number of the word text[start, end) (ASCII letters and digits; hash: of its lower case), or -1. */
  find(text: string, start: number, end: number, hash: number): number {
    const { slots, starts, chars } = this;
    const mask = slots.length - 1;
    const length = end - start;
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const no = slots[at]! - 1;
      if (no < 0) return -1;
      const from = starts[no]!;
      if (starts[no + 1]! - from !== length) continue;
      let k = 0;
      while (k < length && chars[from + k] === WORD_CODES[text.charCodeAt(start + k)]) k++;
      if (k === length) return no;
    }
  }

  /** Adds `token` (lower case, not held) as `word`; returns its number. */
  add(token: string, hash: number, word: Word): number {
    const no = this.words.push(word) - 1;
    if (no + 2 > this.starts.length) this.starts = grown(this.starts, 2 * this.starts.length);
    if (this.used + token.length > this.chars.length) this.chars = grown(this.chars, 2 * (this.used + token.length));
    for (let k = 0; k < token.length; k++) this.chars[this.used++] = token.charCodeAt(k);
    this.starts[no + 1] = this.used;
    if (2 * this.words.length > this.slots.length) this.rehash();
    else this.place(no, hash);
    return no;
  }

  private place(no: number, hash: number): void {
    const mask = this.slots.length - 1;
    let at = hash & mask;
    while (this.slots[at] !== 0) at = (at + 1) & mask;
    this.slots[at] = no + 1;
  }

  private rehash(): void {
    this.slots = new Int32Array(2 * this.slots.length);
    for (let no = 0; no < this.words.length; no++) {
      let hash = FNV_OFFSET;
      for (let k = this.starts[no]!; k < this.starts[no + 1]!; k++) hash = Math.imul(hash ^ this.chars[k]!, FNV_PRIME);
      this.place(no, hash);
    }
  }
}
const asciiWords = new AsciiWords();
const [FNV_OFFSET, FNV_PRIME] = [0x811c9dc5 | 0, 0x01000193];

function grown<T extends Int32Array | Uint8Array>(array: T, length: number): T {
  const bigger = new (array.constructor as new (n: number) => T)(length);
  bigger.set(array);
  return bigger;
}

/**
 * A build's terms numbered as first met (0, 1, ...), and the terms of the texts scanned since `length` was last
 * set, as those numbers (scanNumbered).
 */
export class TermNumbering {
  /** The terms by number. */
  readonly terms: string[] = [];
  /** The scanned texts' terms (numbers), `length` of them. */
  numbers = new Int32Array(1 << 14);
  length = 0;
  private readonly byTerm = new Map<string, number>();
  /** By word number (AsciiWords): its term's number + 1, 0 when not known yet, -1 for a stop word. */
  private byWord = new Int32Array(0);
  private generation = -1;

  /** The number of `term`, numbered now if new. */
  numberOf(term: string): number {
    let no = this.byTerm.get(term);
    if (no === undefined) this.byTerm.set(term, (no = this.terms.push(term) - 1));
    return no;
  }

  push(no: number): void {
    if (this.length === this.numbers.length) this.numbers = grown(this.numbers, 2 * this.length);
    this.numbers[this.length++] = no;
  }

  /** Pushes the term of the word numbered `wordNo` (AsciiWords), if it has one. */
  pushWord(wordNo: number): void {
    if (this.generation !== asciiWords.generation || wordNo >= this.byWord.length) {
      const known = this.generation === asciiWords.generation ? this.byWord : new Int32Array(0);
      this.byWord = grown(known, Math.max(2 * wordNo + 2, 1024));
      this.generation = asciiWords.generation;
    }
    let no = this.byWord[wordNo]!;
    if (no === 0) {
      const { term } = asciiWords.words[wordNo]!;
      this.byWord[wordNo] = no = term === null ? -1 : this.numberOf(term) + 1;
    }
    if (no > 0) this.push(no - 1);
  }
}

/**
 * scanText's terms of `text`, pushed as `numbering`'s numbers, and its flags (TEXT_FLAGS' bits: namesTime 1,
 * firstPerson 2, mayNameTime 4, endsAsking 8). An ASCII text's words are found in the table of ASCII words by their
 * characters (no lower-case copy of the text, no string a word: 3.3 million words of 2,340 distinct terms in a
 * 300,000-memory build), each word's term numbered once a build; any other text is scanned by scanText.
 */
export function scanNumbered(text: string, numbering: TermNumbering): number {
  const from = numbering.length;
  let flags = 0;
  let underscore = false;
  for (let i = 0, n = text.length; i < n; ) {
    let code = WORD_CODES[text.charCodeAt(i)]!;
    if (code === APART) {
      numbering.length = from;
      return scannedApart(text, numbering);
    }
    if (!inWord(code)) {
      if (code === UNDERSCORE) underscore = true;
      i++;
      continue;
    }
    const start = i;
    let hash = FNV_OFFSET;
    do {
      hash = Math.imul(hash ^ code, FNV_PRIME);
      code = ++i < n ? WORD_CODES[text.charCodeAt(i)]! : 0;
    } while (inWord(code));
    // A word running on into a non-ASCII letter ("café") is one word of scanApart's: nothing of it may be numbered.
    if (code === APART) {
      numbering.length = from;
      return scannedApart(text, numbering);
    }
    const held = i - start <= TABLE_WORD_CHARS;
    let no = held ? asciiWords.find(text, start, i, hash) : -1;
    if (no < 0) {
      const token = text.slice(start, i).toLowerCase();
      const word = words.get(token) ?? wordOf(token);
      if (!held) {
        flags |= word.flags;
        if (word.term !== null) numbering.push(numbering.numberOf(word.term));
        continue;
      }
      no = asciiWords.add(token, hash, word);
    }
    flags |= asciiWords.words[no]!.flags;
    numbering.pushWord(no);
  }
  if (underscore) {
    flags &= TIME_CUE;
    if (namesTime(text)) flags |= NAMES_TIME;
    if (speaksInFirstPerson(text)) flags |= FIRST_PERSON_FLAG;
  }
  return endsAskingAscii(text) ? flags | ENDS_ASKING_FLAG : flags;
}
const ENDS_ASKING_FLAG = 8;

/** endsAsking of an ASCII text: its last character but white space is `?`, or `]` and endsAsking says so. */
function endsAskingAscii(text: string): boolean {
  let i = text.length - 1;
  for (let c = text.charCodeAt(i); c === 0x20 || (c >= 0x09 && c <= 0x0d); c = text.charCodeAt(--i));
  const last = text.charCodeAt(i);
  return last === 0x3f || (last === 0x5d && endsAsking(text));
}

function scannedApart(text: string, numbering: TermNumbering): number {
  const scan = scanApart(text);
  for (const term of scan.terms) numbering.push(numbering.numberOf(term));
  return (
    (scan.namesTime ? NAMES_TIME : 0) |
    (scan.firstPerson ? FIRST_PERSON_FLAG : 0) |
    (scan.mayNameTime ? TIME_CUE : 0) |
    (scan.endsAsking ? ENDS_ASKING_FLAG : 0)
  );
}
