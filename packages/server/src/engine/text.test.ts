import { describe, expect, it } from 'vitest';
import { analyze, estimateTokens, normalizeText, tokenize } from './text.js';

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

  it('estimates tokens', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('abcd'.repeat(10))).toBe(10);
    expect(estimateTokens('東京')).toBe(2);
  });
});
