import { describe, expect, it } from 'vitest';
import { describeRange, extractiveAnswer, resolveWhen } from './answer.js';
import { extractiveSummary } from './summarize.js';
import { splitSentences } from './text.js';

const SAID = Date.parse('2023-05-08T13:56:00Z');

describe('splitSentences', () => {
  it('splits after sentence ends and at line breaks, not after initials or inside numbers', () => {
    expect(splitSentences('Met J. Smith at 3.30 today. It went well!\nNext: lunch?  Yes.')).toEqual([
      'Met J. Smith at 3.30 today.',
      'It went well!',
      'Next: lunch?',
      'Yes.',
    ]);
  });
});

describe('dates for "when"', () => {
  it('resolves a time phrase against when it was said, else names that day', () => {
    expect(resolveWhen('I went yesterday', SAID)).toBe('7 May 2023');
    expect(resolveWhen('I painted it last year', SAID)).toBe('2022');
    expect(resolveWhen('We moved last month', SAID)).toBe('April 2023');
    expect(resolveWhen('I love painting', SAID)).toBe('8 May 2023');
    expect(describeRange(Date.parse('2023-05-01T00:00:00Z'), Date.parse('2023-05-08T00:00:00Z'))).toBe(
      'the week of 1 May 2023',
    );
  });
});

describe('extractiveAnswer', () => {
  const evidence = [
    { id: 1, text: 'Where did you go last week? Tell me!', createdAt: SAID },
    { id: 2, text: 'We went camping at the lake, and the kids loved the marshmallows.', createdAt: SAID },
  ];
  it('answers with the supporting clause, never with a question, and cites the sentence', () => {
    expect(extractiveAnswer('Where did they go camping?', evidence)).toEqual({
      answer: 'went camping at the lake',
      citations: [{ memory_id: 2, text: 'We went camping at the lake, and the kids loved the marshmallows.' }],
    });
    expect(extractiveAnswer('When did they go camping?', evidence).answer).toBe('8 May 2023');
  });
  it('has no answer when no sentence shares a question word', () => {
    expect(extractiveAnswer('What is the capital of Peru?', evidence)).toEqual({ answer: null, citations: [] });
  });
});

describe('extractiveSummary', () => {
  it('keeps central sentences in time order, skips near-duplicates and contentless ones, and quotes speakers', () => {
    const t = (day: number) => Date.parse(`2023-05-0${day}T00:00:00Z`);
    const summary = extractiveSummary(
      [
        { id: 2, text: 'Hiking in the Alps was amazing. Thanks!', createdAt: t(2), speaker: 'Ann' },
        { id: 1, text: 'Ann plans hiking in the Alps with her sister.', createdAt: t(1) },
        { id: 3, text: 'Hiking in the Alps was amazing!', createdAt: t(3) },
        { id: 4, text: 'Her sister bought new hiking boots for the Alps.', createdAt: t(4) },
      ],
      { maxSentences: 3 },
    );
    expect(summary.map((s) => s.memoryId)).toEqual([1, 2, 4]);
    expect(summary[1]!.text).toBe('Ann: Hiking in the Alps was amazing.');
  });
});
