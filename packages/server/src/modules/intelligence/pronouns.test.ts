import { describe, expect, it } from 'vitest';
import { conflicting, factsOf } from '../../testing/fact-reading.js';

describe('a pronoun subject across memories', () => {
  it('reads "she"/"he"/"they" of a memory as the person the memory before spoke of', () => {
    expect(conflicting('Maya lives in Denver.', "She's moved to Boulder.")).toBe(true);
    expect(conflicting('Omar works at EY.', 'He joined PwC last week.')).toBe(true);
    expect(conflicting('My grandparents live in Kent.', 'They moved to Devon last year.')).toBe(true);
    expect(conflicting('My dad is 66.', "He's 67 now.")).toBe(true);
    // A kin word ending in s is not always many ("my boss").
    expect(conflicting('My boss lives in Leeds.', 'She moved to York.')).toBe(true);
    expect(conflicting('My boss lives in Leeds.', 'They moved to York.')).toBe(false);
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

describe('a job or a partner said another way', () => {
  it('reads a workplace after a job title, a job taken "as", an employer moved on to, and freelancing', () => {
    expect(factsOf("I'm a cashier at a supermarket.")).toContain('works_at=supermarket');
    expect(factsOf('I retrained as an electrician.')).toContain('works_as=electrician');
    expect(factsOf('I started as a joke.')).not.toContain('works_as=joke');
    expect(factsOf("I've moved on to Coca-Cola.")).toContain('works_at=coca-cola');
    expect(factsOf('I moved on to Paris.')).not.toContain('works_at=paris');
    expect(conflicting('I work at a law firm.', "I'm freelancing now.")).toBe(true);
  });

  it('reads the partner named beside the role as the spouse or partner, not a former one', () => {
    expect(factsOf('Hugo is my husband.')).toContain('married_to=hugo');
    expect(factsOf('My husband Hugo loves cooking.')).toContain('married_to=hugo');
    expect(factsOf('My late husband Bob loved fishing.')).not.toContain('married_to=bob');
    expect(factsOf('Hugo is not my husband.')).not.toContain('married_to=hugo');
    expect(conflicting("I'm dating Kai.", 'Kai and I called it off.')).toBe(true);
  });
});
