import { describe, expect, it } from 'vitest';
import { conflicting } from '../../testing/fact-reading.js';

describe('values told apart by world knowledge', () => {
  it('reads a religion, a language, a team and a diet as values that exclude each other', () => {
    expect(conflicting("I'm Muslim.", "I'm a Hindu.")).toBe(true);
    expect(conflicting("I'm an atheist.", "I've found my faith again, I go to mass every week.")).toBe(true);
    expect(conflicting("I'm Catholic.", 'I go to mass every Sunday.')).toBe(false);
    expect(conflicting("I'm an atheist.", 'My parents are very religious.')).toBe(false);
    expect(conflicting('I speak no French.', "I'm fluent in French after living in Lyon for two years.")).toBe(true);
    expect(conflicting('I speak French.', "I'm learning Spanish too.")).toBe(false);
    expect(conflicting('I support Liverpool.', "I've switched to supporting Arsenal, don't judge me.")).toBe(true);
    expect(conflicting('I support Liverpool.', 'My son supports Chelsea, we argue every weekend.')).toBe(false);
    expect(conflicting('Big Yankees fan here.', 'Went to a Red Sox game with work, it was fun.')).toBe(false);
    expect(conflicting("I'm vegetarian.", 'I started eating chicken again, doctor’s orders.')).toBe(true);
    expect(conflicting("I'm vegetarian.", 'I made a chickpea curry for dinner.')).toBe(false);
    expect(conflicting("I don't drink.", 'I have a glass of wine most nights.')).toBe(true);
  });

  it('knows a city inside its country and a home named by a known place', () => {
    expect(conflicting('I live in Germany.', 'The bakery next to my flat in Munich is dangerous for my diet.')).toBe(
      false,
    );
    expect(conflicting('I live in Canada.', 'Our new house in Seattle has a view of the mountains.')).toBe(true);
    expect(conflicting('We live in Manchester.', 'Living in Spain has been amazing so far.')).toBe(true);
    expect(conflicting('I live in Texas.', 'Spent the weekend in Chicago visiting my aunt.')).toBe(false);
    expect(conflicting('I live in Austin.', "We're moving to Denver next year.")).toBe(false);
    expect(conflicting('I live in Nairobi.', 'My best friend just moved to Mombasa.')).toBe(false);
  });

  it('gives "it" the thing the memory before had, and a brand its kind of vehicle', () => {
    expect(conflicting('I bought a Honda last year.', 'I sold it last week, the insurance was too much.')).toBe(true);
    expect(conflicting('I have a bike I ride to work.', 'Someone stole it from outside the station yesterday.')).toBe(
      true,
    );
    expect(conflicting('I bought a Honda last year.', 'I washed it this morning, it looks brand new.')).toBe(false);
    expect(conflicting('I still drive my old Corolla.', 'I donated my old car to the shelter last month.')).toBe(true);
  });

  it('reads an employer by a word of a job beside its name', () => {
    expect(conflicting('I work at Tesco.', 'Handed in my notice at Tesco, starting at Lidl on Monday.')).toBe(true);
    expect(conflicting('I work at Google.', 'Had lunch with an old friend from Microsoft today.')).toBe(false);
  });
});
