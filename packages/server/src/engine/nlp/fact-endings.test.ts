import { describe, expect, it } from 'vitest';
import { conflicting } from '../../testing/fact-reading.js';

describe('endings named by what they end', () => {
  it('ends the fact whose value a sentence of ending names, whatever its frame', () => {
    expect(conflicting('I own a canoe.', 'We finally got rid of the canoe, it took up the whole garage.')).toBe(true);
    expect(conflicting('I have a kayak.', 'The kayak is history, we scrapped it.')).toBe(true);
    expect(conflicting('I take the bus to work.', 'No more bus for me, I cycle.')).toBe(true);
    expect(conflicting('I live in Hull.', 'Hull is history, we sold up.')).toBe(true);
    expect(conflicting('I live in Hull.', "We're not in Hull anymore.")).toBe(true);
  });

  it('leaves alone a plan, a negated ending, a question, a stay away, a part of it and someone else’s', () => {
    expect(conflicting('I own a canoe.', "I'm thinking of selling the canoe.")).toBe(false);
    expect(conflicting('I own a canoe.', "I won't ever sell the canoe.")).toBe(false);
    expect(conflicting('I own a canoe.', 'Should I sell the canoe?')).toBe(false);
    expect(conflicting('I have an iPad.', 'I lost my iPad charger.')).toBe(false);
    expect(conflicting('I own a canoe.', 'My neighbour sold his canoe.')).toBe(false);
    expect(conflicting('I live in Hull.', 'I lost my keys in Hull on a trip.')).toBe(false);
    expect(conflicting('I play the cello.', 'I broke a string on the cello.')).toBe(false);
    expect(conflicting('I volunteer at the shelter every week.', 'I volunteered there and they gave me a medal.')).toBe(
      false,
    );
  });

  it('names an activity by its key only in the object of the word of ending', () => {
    expect(conflicting('I drink coffee every day.', 'Cut out coffee completely, it was keeping me up.')).toBe(true);
    expect(conflicting('I hike every weekend to enjoy nature.', 'It felt good to get lost in nature.')).toBe(false);
    expect(conflicting('I drink coffee every day.', 'I lost my keys, so no coffee shop this morning.')).toBe(false);
    expect(conflicting('I bake bread every weekend.', 'No more baking for me, the oven broke.')).toBe(true);
    expect(conflicting('I drink tea every day.', 'No more drinking for me after that party.')).toBe(false);
  });

  it('ends a habit by its activity, never by its time', () => {
    expect(conflicting('I play football every Thursday.', 'We lost 3-1 on Thursday, gutted.')).toBe(false);
    expect(conflicting('I play football every Thursday.', 'Gave up football after my knee op.')).toBe(true);
  });
});
