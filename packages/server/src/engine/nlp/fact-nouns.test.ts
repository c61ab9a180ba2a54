import { describe, expect, it } from 'vitest';
import { conflicting, factsOf as facts } from '../../testing/fact-reading.js';

describe("facts stated through an attribute's noun", () => {
  it('reads a home by its noun, its owner and the place beside it', () => {
    expect(facts('finally got the keys to our new place in Nashville')).toContain('lives_in=nashville');
    expect(facts('just signed a lease on a flat in Sydney')).toContain('lives_in=sydney');
    expect(facts("We've made Houston our home.")).toContain('lives_in=houston');
    expect(conflicting('I live in Atlanta.', 'Our new address is in Nashville.')).toBe(true);
    expect(conflicting('Kev lives in Hull.', 'Kev bought a house in Sheffield.')).toBe(true);
    expect(conflicting('we live in Dublin', "we've been Cork-based since the spring")).toBe(true);
    // A plan, a stay, an office, a past home, someone else's or a home sold are no home of now.
    expect(conflicting('I live in Lisbon.', "I'd love to buy a flat in Porto one day.")).toBe(false);
    expect(conflicting('I live in Perth.', 'My new office is in Sydney.')).toBe(false);
    expect(conflicting('I live in Perth.', 'We booked a place in Sydney for the weekend.')).toBe(false);
    expect(conflicting('I live in Perth.', 'I miss my old flat in Sydney.')).toBe(false);
    expect(conflicting('I live in Perth.', "My parents' house in Sydney is huge.")).toBe(false);
    expect(facts('We sold our house in Leeds.')).not.toContain('lives_in=leeds');
  });

  it('reads an employer by a job noun, and a resignation as its end', () => {
    expect(conflicting('I work at Barclays.', 'first week at Monzo done!')).toBe(true);
    expect(conflicting('I work at Nike.', 'My new employer is Adidas.')).toBe(true);
    expect(conflicting('I work at Boots.', 'I handed in my resignation at Boots.')).toBe(true);
    expect(facts('I quit my job at IBM in 2022.')).not.toContain('works_at=ibm');
    expect(conflicting('I work at Nike.', "I've got a job interview at Adidas next week.")).toBe(false);
    expect(conflicting('I work at Nike.', 'I turned down a job offer from Adidas.')).toBe(false);
  });

  it('reads a couple that is done, a divorce filed for and a bare kin word as the writer’s', () => {
    expect(conflicting("I'm dating Leo.", 'Leo and I are done.')).toBe(true);
    expect(conflicting("I'm dating Leo.", 'Leo and I are done with the kitchen.')).toBe(false);
    expect(conflicting("I'm married to Greg.", 'I filed for divorce from Greg.')).toBe(true);
    expect(facts('mum turns 71 today')).toContain('age=71');
    expect(conflicting("I'm 52.", 'mum turns 71 today')).toBe(false);
  });
});
