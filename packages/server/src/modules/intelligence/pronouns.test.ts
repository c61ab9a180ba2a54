import { describe, expect, it } from 'vitest';
import { conflicting, factsOf } from '../../testing/fact-reading.js';

describe('a pronoun subject across memories', () => {
  it('reads "she"/"he"/"they" of a memory as the person the memory before spoke of', () => {
    expect(conflicting('Maya lives in Denver.', "She's moved to Boulder.")).toBe(true);
    expect(conflicting('Omar works at EY.', 'He joined PwC last week.')).toBe(true);
    expect(conflicting('My grandparents live in Kent.', 'They moved to Devon last year.')).toBe(true);
    expect(conflicting('My dad is 66.', "He's 67 now.")).toBe(true);
    // Not the end user's fact, and not a person the pronoun cannot stand for.
    expect(conflicting('I live in Kent.', 'She moved to Devon.')).toBe(false);
    expect(conflicting('My brother lives in Oslo.', 'She moved to Bergen.')).toBe(false);
    expect(conflicting('My brother lives in Oslo.', 'They moved to Bergen.')).toBe(false);
    expect(factsOf('She moved to Devon.')).toEqual([]);
  });

  it('reads "\'s" before the participle of an act as "has"', () => {
    expect(factsOf("My sister lives in Leeds and she's moved to York.")).toContain('lives_in=york');
    expect(factsOf("I live in Leeds and she's married.")).not.toContain('lives_in=married');
    expect(conflicting('Tom is married to Ellie.', "He's married to Ellie.")).toBe(false);
  });
});
