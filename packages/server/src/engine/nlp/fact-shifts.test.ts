import { describe, expect, it } from 'vitest';
import { conflicting } from '../../testing/fact-reading.js';

describe('habits, preferences, favourites, ages and couples said without the rules’ frame', () => {
  it('reads a habit moved, cut or lapsed, and leaves one done once alone', () => {
    expect(conflicting('I go swimming twice a week.', 'I only swim on Sundays now.')).toBe(true);
    expect(conflicting('I meditate every evening.', "I've moved my meditation to the mornings.")).toBe(true);
    expect(conflicting('I go to the gym every day.', "I haven't been to the gym in weeks.")).toBe(true);
    expect(conflicting('I go swimming twice a week.', 'Went swimming this morning, the pool was cold.')).toBe(false);
    expect(conflicting('I meditate every evening.', 'I also journal every evening.')).toBe(false);
    expect(conflicting('I play the drums.', "It's a bond I haven't felt since my time in the band.")).toBe(false);
  });

  it('reads an activity ended by its container, its replacement or the substance it holds, not a day’s swap', () => {
    expect(conflicting('I go to the gym three times a week.', 'I cancelled my gym membership.')).toBe(true);
    expect(conflicting('I drink two coffees a day.', "I've cut out caffeine completely.")).toBe(true);
    expect(conflicting('I smoke about half a pack a day.', 'Six months smoke-free today!!')).toBe(true);
    expect(conflicting('I go to kickboxing on Tuesdays.', 'I switched from kickboxing to taekwondo.')).toBe(true);
    expect(conflicting('I run every Saturday.', 'I swim on Saturdays instead of running.')).toBe(true);
    expect(conflicting('I go running every morning.', 'I went for a swim instead of running today.')).toBe(false);
    expect(conflicting('I smoke.', 'I quit smoking three months ago.')).toBe(true);
  });

  it('reads a preference between rivals and a liking given up, not a liking added', () => {
    expect(conflicting("I'm a tea person.", "Coffee is my drink now, tea just doesn't do it anymore.")).toBe(true);
    expect(conflicting("I'm more of a beach person.", 'Mountains over beaches, every time.')).toBe(true);
    expect(conflicting('I like tea.', 'I like juice.')).toBe(false);
    expect(conflicting("I'm a dog person.", "My neighbour's cat visits every morning.")).toBe(false);
    expect(conflicting('I love sushi.', "I've gone off sushi.")).toBe(true);
    expect(conflicting('I love my job.', "I'm over the moon about it!")).toBe(false);
  });

  it('reads a favourite without its kind or by a replacement', () => {
    expect(conflicting('My go-to drink is red wine.', 'My favourite drink is gin now.')).toBe(true);
    expect(conflicting('Pizza is my favourite.', 'These days my favourite is sushi.')).toBe(true);
    expect(conflicting('My go-to drink is a latte.', "I've switched to flat whites.")).toBe(true);
    expect(conflicting('My go-to drink is a flat white.', "I've moved on from flat whites.")).toBe(true);
    expect(conflicting("I'd rather hike than bike.", "I'd pick biking over hiking any day.")).toBe(true);
    expect(conflicting('I drink coffee every day.', 'My sister switched to green tea.')).toBe(false);
    expect(conflicting('My favourite movie is Titanic.', 'Inception has replaced Titanic as my favourite movie.')).toBe(
      true,
    );
  });

  it('reads an age by a birthday’s ordinal or a verb of reaching, not a friend’s', () => {
    expect(conflicting("I'm 45.", 'Turning 47 next week, send cake.')).toBe(true);
    expect(conflicting('My grandma is 89.', 'We threw Grandma a big party for her 90th.')).toBe(true);
    expect(conflicting('My son is 12.', "My son's friend turned 13 today.")).toBe(false);
    expect(conflicting("I'm 19.", 'I was 18 when I moved out.')).toBe(false);
  });

  it('reads a couple’s status said of both', () => {
    expect(conflicting("I'm married to Dan.", 'Dan and I got divorced last year.')).toBe(true);
    expect(conflicting('Jo is married to Sam.', 'Jo and Sam got divorced.')).toBe(true);
    expect(conflicting("I'm engaged to Alex.", 'Alex and I tied the knot in June.')).toBe(true);
    expect(conflicting("I'm married to Dan.", 'Dan and I went to Rome for our anniversary.')).toBe(false);
  });
});
