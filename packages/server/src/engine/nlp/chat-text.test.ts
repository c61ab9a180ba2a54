import { describe, expect, it } from 'vitest';
import { conflicting, factsOf as facts } from '../../testing/fact-reading.js';
import { chatText } from './chat-text.js';

describe('chat wording', () => {
  it('gives a sentence that drops its "I" the writer as subject', () => {
    expect(chatText('omg just moved to Leeds!')).toBe('omg I just moved to Leeds!');
    expect(chatText('Long week. Got a job at Monzo though')).toBe('Long week. I got a job at Monzo though');
    expect(chatText('been living in Leeds for a year')).toBe("I've been living in Leeds for a year");
    expect(conflicting('I live in Atlanta.', 'just moved to Nashville last week!')).toBe(true);
    expect(conflicting('I work at Barclays.', 'got hired by Monzo yesterday')).toBe(true);
    // A mood, a named subject or a sentence with its subject is left as written.
    expect(chatText('Tired today.')).toBe('Tired today.');
    expect(chatText('Ted moved to Paris.')).toBe('Ted moved to Paris.');
    expect(conflicting('I live in Atlanta.', 'Tom moved to Nashville.')).toBe(false);
    // A denial too, but not a greeting's.
    expect(chatText("Haven't meditated since January.")).toBe("I haven't meditated since January.");
    expect(conflicting('I meditate every morning.', "Haven't meditated since January honestly.")).toBe(true);
    expect(chatText("Haven't talked with you in a while!")).toBe("Haven't talked with you in a while!");
  });

  it('reads "mum and dad" as the writer’s parents', () => {
    expect(facts('mum and dad moved to Spain last year')).toContain('lives_in=spain');
    expect(conflicting('My parents live in Kent.', 'mum and dad moved to Spain last year, they love it')).toBe(true);
    expect(conflicting('My parents live in Kent.', "My mum and dad's friends moved to Spain.")).toBe(false);
  });

  it('reads contractions typed without apostrophes, "i" and shorthand as the rules spell them', () => {
    expect(chatText('im a nurse and i dont smoke')).toBe("I'm a nurse and I don't smoke");
    expect(facts('im a nurse')).toContain('works_as=nurse');
    expect(facts('my bf is Tom')).toContain('partner=tom');
    expect(facts('my fav food is sushi')).toContain('favorite_food=sushi');
    expect(conflicting('I smoke every day.', 'i dont smoke anymore')).toBe(true);
    // "its", "were", "well": words too, never rewritten.
    expect(chatText('its fine, we were well')).toBe('its fine, we were well');
  });

  it('capitalises known names and places in a text typed all in lower case', () => {
    expect(chatText('my sister anna moved to new york')).toBe('my sister Anna moved to New York');
    expect(conflicting('my sister anna lives in madrid', 'anna moved to seville')).toBe(true);
    // Everyday words that are also names stay words; a text that capitalises its names is left alone.
    expect(chatText('i had turkey with mark')).toBe('I had turkey with mark');
    expect(chatText('Maya lives in Denver and loves reading')).toBe('Maya lives in Denver and loves reading');
  });
});
