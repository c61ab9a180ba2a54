import { describe, expect, it } from 'vitest';
import {
  analyze,
  endsAsking,
  forgetWords,
  leaveBufferPool,
  wordsHeld,
  estimateTokens,
  namesTime,
  normalizeText,
  scanNumbered,
  scanText,
  speaksInFirstPerson,
  TermNumbering,
  stem,
  tokenize,
} from './text.js';
import { MAY_NAME_TIME, TIME_RULE_WORD } from './temporal.js';

describe('text analysis', () => {
  it('normalizes case, width, accents, punctuation and whitespace', () => {
    expect(normalizeText('  Héllo,   WORLD!! ')).toBe('hello world');
    expect(normalizeText('ＡＢＣ１２３')).toBe('abc123'); // full-width forms via NFKC
    expect(normalizeText('Hello world')).toBe(normalizeText('hello — world...'));
    expect(normalizeText('?!…')).toBe('');
  });

  it('stems inflected forms to one term and drops stop words and clitics', () => {
    expect(analyze('paintings')).toEqual(analyze('painting'));
    expect(analyze('researched')).toEqual(analyze('research'));
    expect(analyze("Caroline's")).toEqual(analyze('Caroline'));
    expect(analyze('what did you do')).toEqual([]);
  });

  it('splits CJK runs into character bigrams and keeps other scripts', () => {
    expect(tokenize('東京タワー')).toEqual(['東京', '京タ', 'タワ', 'ワー']);
    expect(tokenize('я люблю Москву')).toEqual(['я', 'люблю', 'москву']);
    expect(tokenize('नमस्ते दुनिया')).toEqual(['नमस्ते', 'दुनिया']); // Devanagari marks survive
    expect(tokenize('🎉🎉')).toEqual([]);
  });

  it('tokenizes ASCII text (its fast path) as the same text beside one non-ASCII character would be', () => {
    // The trailing "ж" sends the second text through the Unicode path; it adds one token of its own.
    for (const text of [
      "I'm Bob's friend; DON'T go, we'll see x's 1990s e-mail",
      "it's 's x'S `ve A'S abc'Sx",
      'tab\tnew\nline_under-score 3.14',
    ]) {
      expect([...tokenize(text), 'ж']).toEqual(tokenize(`${text} ж`));
    }
    expect(tokenize("Caroline's DON'T")).toEqual(['caroline', 'don']);
  });

  it('scans a text (scanText) as analyze, namesTime, speaksInFirstPerson, the temporal cue and endsAsking read it apart', () => {
    const apart = (text: string) => ({
      terms: analyze(text),
      namesTime: namesTime(text),
      firstPerson: speaksInFirstPerson(text),
      // ASCII text (en and em dashes allowed): a word of it TIME_RULE_WORD matches (the runs of letters and digits).
      mayNameTime: /^[\x00-\x7f\u2013\u2014]*$/.test(text)
        ? (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).some((word) => TIME_RULE_WORD.test(word))
        : MAY_NAME_TIME.test(text),
      endsAsking: endsAsking(text),
    });
    const texts = [
      "I'm Bob's friend; DON'T go, we'll see x's 1990s e-mail",
      "it's 's x'S `ve A'S abc'Sx 'd'",
      'tab\tnew\nline_under-score 3.14',
      'my_thing next_week', // `\b` counts `_` in: no first person, no time word
      'In 2023 on Monday, MY dog; the weekend before yesterday',
      'Kelvin \u212a and \u017fince we met', // characters that fold to ASCII letters
      'Caféé with ME last Tuesday', // not ASCII: read apart
      'janitor MAYBE', // the cue within words
      '',
      '   ',
      'x2023 2023x 2023 12345',
      'is it? [image: a cat] ',
      'Me\u2014last week\u2013or 2023\u2014', // dashes: read as ASCII punctuation
      'we\u2019ll go \u2014 today', // a typographic apostrophe: read apart
    ];
    // Random texts of the words and characters that matter.
    const pieces = [
      "'",
      '`',
      '_',
      ' ',
      '-',
      '.',
      '?',
      's',
      't',
      'd',
      're',
      'I',
      'we',
      'Us',
      'my',
      'ago',
      'Week',
      'weeks',
    ];
    pieces.push('2024', '999', 'jan', 'day', 'the', 'running', 'Caroline', 'é', '東京', 'k', 'AND', 'x_y', '\n');
    pieces.push('\u2013', '\u2014', '\u2014', '\u2019');
    // Longer than the table of ASCII words holds (scanNumbered).
    pieces.push(`Z${'abcdefghij'.repeat(5)}`, 'abcdefghij'.repeat(4), '[image: a]', ']', '\t');
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 3000; i++)
      texts.push(
        Array.from({ length: 1 + Math.floor(next() * 12) }, () => pieces[Math.floor(next() * pieces.length)]).join(''),
      );
    for (const text of texts) expect(scanText(text), JSON.stringify(text)).toEqual(apart(text));
    // scanNumbered: the same terms as numbers, and the same flags; its words held across texts and forgetWords.
    const numbering = new TermNumbering();
    for (const [i, text] of texts.entries()) {
      if (i % 700 === 0) forgetWords();
      numbering.length = 0;
      const flags = scanNumbered(text, numbering);
      const scan = apart(text);
      const bits = [scan.namesTime, scan.firstPerson, scan.mayNameTime, scan.endsAsking];
      expect(Array.from(numbering.numbers.subarray(0, numbering.length), (no) => numbering.terms[no])).toEqual(
        scan.terms,
      );
      expect(flags, JSON.stringify(text)).toBe(bits.reduce((sum, on, bit) => sum | (on ? 1 << bit : 0), 0));
    }
    expect(new Set(numbering.terms).size).toBe(numbering.terms.length);
    // Only terms a text has are numbered: "caf" of "café" was, a term without postings that changed a snapshot.
    const had = new Set(texts.flatMap((text) => apart(text).terms));
    expect(numbering.terms.filter((term) => !had.has(term))).toEqual([]);
    const cafe = new TermNumbering();
    scanNumbered('a good time at the café', cafe);
    expect(cafe.terms).toEqual(apart('a good time at the café').terms.filter((t, i, all) => all.indexOf(t) === i));
    expect(scanText("I'm here").firstPerson).toBe(true);
    expect(scanText('my_thing').firstPerson).toBe(false);
    expect(endsAsking('ok?')).toBe(true);
  });

  it('holds each word once, whether stemmed or scanned, until forgetWords empties the cache', () => {
    forgetWords();
    expect(stem('marathons')).toBe('marathon');
    expect(scanText('Marathons and a zqmword').terms).toEqual(['marathon', 'zqmword']);
    // "marathons" once; "and" (a stop word), "a" and "zqmword" from the scan.
    expect(wordsHeld()).toBe(4);
    // Ids and long junk are not held by stem.
    stem('x'.repeat(41));
    expect(wordsHeld()).toBe(4);
    forgetWords();
    expect(wordsHeld()).toBe(0);
    expect(stem('marathons')).toBe('marathon');
  });

  it('leaves the Buffer pool at an erasure: the new slab, and what the old one never handed out, zeroed (issue 47)', () => {
    // Compared as bytes made outside the pool (`indexOf` of a string would cut it from the pool).
    const needle = Buffer.allocUnsafeSlow(9);
    needle.write('zqmpooled');
    leaveBufferPool(); // a slab with room to spare
    const planted = Buffer.from('a body with zqmpooled in it');
    const old = planted.buffer;

    leaveBufferPool();
    const slab = Buffer.from(Buffer.allocUnsafe(1).buffer);
    expect(slab.buffer).not.toBe(old);
    expect(slab.every((byte) => byte === 0)).toBe(true);
    const handedOut = Math.ceil((planted.byteOffset + planted.length) / 8) * 8;
    expect(new Uint8Array(old, handedOut).every((byte) => byte === 0)).toBe(true);
    // The old slab lives on while a Buffer cut from it does (this test's).
    expect(Buffer.from(old).indexOf(needle)).toBe(planted.byteOffset + 12);
  });

  it('estimates tokens', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('abcd'.repeat(10))).toBe(10);
    expect(estimateTokens('東京')).toBe(2);
  });
});
