import { describe, expect, it } from 'vitest';
import { conflicting } from '../../testing/fact-reading.js';

describe('a home or an employer implied by what surrounds it', () => {
  it('reads a home from its landlord, its rent, its neighbours or a commute, and a job from its boss or shift', () => {
    expect(conflicting('I live in Dallas.', 'ugh the new landlord here in leeds is a nightmare')).toBe(true);
    expect(
      conflicting('i live in pittsburgh', 'we closed on the house in columbus so the pittsburgh flat is empty'),
    ).toBe(true);
    expect(conflicting('I live in Austin.', 'my new commute from Fort Worth is brutal')).toBe(true);
    expect(conflicting('I live in Boston.', 'My roommate in Chicago keeps eating my leftovers.')).toBe(true);
    expect(conflicting('I work at Tesco.', "My boss at Sainsbury's keeps changing my shifts.")).toBe(true);
    expect(conflicting('I work at a bakery.', 'My shift at the hospital ran late again.')).toBe(true);
    expect(conflicting('I work for Microsoft.', 'first week of onboarding at google done')).toBe(true);
  });

  it('keeps a visit, a plan, a past, a place of work and someone else’s home or job compatible', () => {
    expect(conflicting('I live in Dallas.', "I'm visiting my sister in Austin for two weeks.")).toBe(false);
    expect(conflicting('I live in Toronto.', 'We might get a flat in Vancouver someday.')).toBe(false);
    expect(conflicting('I live in Leeds.', "My brother's landlord in York is a nightmare.")).toBe(false);
    expect(conflicting('I live in Dublin.', 'I grew up in a tiny house in Cork.')).toBe(false);
    expect(conflicting('I live in Cardiff.', 'I work in Swansea but commute from home.')).toBe(false);
    expect(conflicting('I live in Nairobi.', 'My best friend just moved to Mombasa.')).toBe(false);
    expect(conflicting('I work at Tesco.', 'I have an interview at Aldi next week.')).toBe(false);
    expect(conflicting('I work at a bakery.', "My sister's boss at the hospital is so strict.")).toBe(false);
  });

  it('reads a relationship status from the word one names one’s partner by', () => {
    expect(conflicting("I'm single.", 'me and my girlfriend went to Paris for the weekend')).toBe(true);
    expect(conflicting('my boyfriend is Sam', 'my husband Sam made dinner tonight')).toBe(true);
    expect(conflicting("I'm single and loving it.", 'My fiancée wants a summer wedding.')).toBe(true);
    expect(conflicting("I'm married.", 'my husband made pancakes for everyone')).toBe(false);
    expect(conflicting("I'm single.", "my friend's girlfriend is lovely")).toBe(false);
    expect(conflicting("I'm single.", 'my ex-boyfriend texted me last night')).toBe(false);
    expect(conflicting("I'm single.", "if I had a girlfriend I'd take her to Rome")).toBe(false);
    // The writer left by a partner (fact-couples.ts): single again.
    expect(conflicting('my girlfriend is Kate', 'kate dumped me on my birthday, can you believe it')).toBe(true);
    expect(conflicting('my boyfriend is Sam', 'Sam broke up with me last night')).toBe(true);
    expect(conflicting('my boyfriend is Sam', 'Sam would never dump me')).toBe(false);
  });

  it('reads a job begun at an employer not named as a change, named by the statement after it', () => {
    expect(conflicting('I work at Tesco.', 'Started a new job this week, so nervous!')).toBe(true);
    expect(conflicting('I work for the council.', 'my new coworkers are so friendly')).toBe(true);
    expect(conflicting('I work at Tesco.', 'My new boss at Tesco is much nicer than the old one.')).toBe(false);
    expect(conflicting('I work at Tesco.', 'My sister started a new job this week.')).toBe(false);
    expect(conflicting('I work at the bank.', 'I might look for a new job next year.')).toBe(false);
    expect(conflicting('I started a new job last week.', 'I work at a mechanical engineering company.')).toBe(false);
  });

  it('takes a workplace named by fewer of its words for the same one', () => {
    expect(conflicting("I'm a receptionist at a dental clinic.", 'My shift at the clinic ran late again.')).toBe(false);
    expect(conflicting('I work at the city library.', 'My boss at the hospital is retiring.')).toBe(true);
  });
});
