import { describe, expect, it } from 'vitest';
import { expectLinear } from '../testing/linear-time.js';
import { extractiveAnswer } from './answer.js';
import { chatText } from './nlp/chat-text.js';
import { DEFAULT_ONTOLOGY, Extractor } from './nlp/index.js';
import { endsAsking, splitSentences } from './text.js';

/**
 * Texts that took seconds to read (a 32,000-character memory: the server's text limit) before their fixes, each now
 * read in time linear in its length (docs/architecture.md, hostile input).
 */
describe('hostile text is read in linear time', () => {
  const extractor = new Extractor(DEFAULT_ONTOLOGY);

  it('the fact reader: a sentence of brackets or commas tries each token as a verb without copying the rest', async () => {
    // Was 22 s and 6 s at 32k: fact-nouns sliced the sentence from every token for verbClassAt.
    // The whole reader takes ~100 ms at 32k on a busy machine: its floor is higher.
    const read = (s: string) => extractor.extract(s, 'Bob');
    await expectLinear((n) => `"${'('.repeat(n)}"`, read, { floorMs: 100 });
    await expectLinear((n) => 'a, '.repeat(n / 3), read, { floorMs: 100 });
  });

  it('chat spellings: a run of line breaks, a run of capitals after word boundaries', async () => {
    await expectLinear((n) => `!${'\n'.repeat(n)}`, chatText);
    await expectLinear((n) => `${'dÀª'.repeat(n / 3)}d-base`, chatText);
    await expectLinear((n) => `ok ${'!'.repeat(n)}x`, chatText);
  });

  it('sentences, a question at the end, an answer clause', async () => {
    await expectLinear((n) => `${'!'.repeat(n)}\n`, splitSentences);
    await expectLinear((n) => '?[image:'.repeat(n / 8), endsAsking);
    await expectLinear((n) => `?${'\t'.repeat(n)}?[image:`, endsAsking);
    const ask = (s: string) => extractiveAnswer('where did Anna go', [{ id: 1, text: s, createdAt: 0 }]);
    await expectLinear((n) => `Anna went to Paris${'\t'.repeat(n)},x`, ask);
    await expectLinear((n) => `Anna went to Paris "${'('.repeat(n)}"`, ask);
  });

  it('reads as before', () => {
    expect(endsAsking('Is it? [image: a cat] ')).toBe(true);
    expect(endsAsking('x? [image: [image: y]')).toBe(true);
    expect(endsAsking('a? [image: b] c]')).toBe(false);
    expect(endsAsking('[image: a?]')).toBe(false);
    expect(chatText('d-basedÀbE-based')).toBe('d-basedbased in ÀbE');
    expect(chatText('I live in a Cork-based flat')).toBe('I live in a based in Cork flat');
    expect(chatText('ok.\n\n  just moved to Leeds!')).toBe('ok.\n\n  I just moved to Leeds!');
    expect(splitSentences('Hi!!! Bye. A. B went')).toEqual(['Hi!!!', 'Bye.', 'A. B went']);
  });
});
