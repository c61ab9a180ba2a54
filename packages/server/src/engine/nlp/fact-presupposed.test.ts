import { describe, expect, it } from 'vitest';
import { conflicting } from '../../testing/fact-reading.js';

describe('facts an event presupposes (session 15)', () => {
  it('reads pets and partners named in passing', () => {
    expect(conflicting("I've had my dog Max for ten years.", 'Max passed away last week.')).toBe(true);
    expect(conflicting('We have two cats, Miso and Tofu.', "Tofu passed away in January so it's just Miso now.")).toBe(
      true,
    );
    expect(conflicting("I've got a dog, Max.", 'Max loves the beach.')).toBe(false);
    expect(conflicting('I have a girlfriend, Lena.', 'Lena left me.')).toBe(true);
    expect(conflicting('I have a girlfriend, Lena.', 'Lena is taking me to Rome.')).toBe(false);
    expect(conflicting("I don't have a dog, Max is my sister's.", 'Max passed away.')).toBe(false);
  });

  it('reads social media joined, a driving test passed and a baby welcomed', () => {
    expect(conflicting("I'm not on social media.", 'I finally made an Instagram account.')).toBe(true);
    expect(conflicting("I'm not on social media at all.", 'Caved and made an Instagram, follow me lol.')).toBe(true);
    expect(conflicting("I'm not on social media.", 'My sister joined Instagram.')).toBe(false);
    expect(conflicting("I'm not on social media.", 'I might make an Instagram someday.')).toBe(false);
    expect(conflicting("I don't have a driving licence.", 'I passed my driving test!')).toBe(true);
    expect(conflicting("I don't drive.", 'I passed my driving test last week!')).toBe(true);
    expect(conflicting("I don't drive.", "I didn't pass my driving test.")).toBe(false);
    expect(conflicting("I don't have any kids.", 'We welcomed our baby girl on Tuesday!')).toBe(true);
    expect(conflicting("I don't have any kids.", 'My sister welcomed her baby girl on Tuesday!')).toBe(false);
  });
});

describe('statements the rules read another way (session 15)', () => {
  it("reads a name's 's as 'is', 'become' as a copula and a reported 'her' as the speaker's", () => {
    expect(conflicting("Gina's 24.", "Gina's 25 now.")).toBe(true);
    expect(conflicting("Caroline's single.", "Caroline's been seeing someone.")).toBe(true);
    expect(conflicting("Gina's birthday is in May.", "Gina's two dogs are cute.")).toBe(false);
    expect(conflicting("Nate's not a hiker.", "Nate's become a real hiker.")).toBe(true);
    expect(conflicting("I'm not a morning person.", "I've turned into a morning person, up at 5 every day.")).toBe(
      true,
    );
    expect(
      conflicting(
        "Joanna's favorite dessert is chocolate tart.",
        'Joanna says her new favorite dessert is coconut ice cream.',
      ),
    ).toBe(true);
    expect(conflicting("Joanna's birthday is in May.", 'Joanna told me her birthday is actually in June.')).toBe(true);
    expect(conflicting('Max is nine years old.', 'Max is ten now.')).toBe(true);
  });

  it('reads things ended by their own verbs and employers after a job', () => {
    expect(conflicting('We own a small boat.', "The boat sank in the storm, we don't have it anymore.")).toBe(true);
    expect(conflicting("i've got an old acoustic guitar", 'someone stole my guitar from the car yesterday')).toBe(true);
    expect(conflicting("I've got an old upright piano.", "The piano's gone, a neighbour bought it.")).toBe(true);
    expect(conflicting('I have a car.', "We've gone to Rome.")).toBe(false);
    expect(conflicting('I work as a pharmacist at Boots.', 'Starting at Lloyds Pharmacy on Monday.')).toBe(true);
    expect(conflicting("I'm a shelf stacker at Aldi.", "i'm at Sainsbury's now, better pay")).toBe(true);
    expect(conflicting('My husband Raj is a software engineer at Google.', 'Raj got poached by Stripe.')).toBe(true);
    expect(conflicting('I work at Shell.', "After twelve years at Shell, I've finally moved on to BP.")).toBe(true);
  });

  it('reads partners where they are named, and break-ups', () => {
    expect(conflicting("I'm married to Hugo.", 'Hugo and I split up.')).toBe(true);
    expect(conflicting("I'm seeing someone called Josh.", "Josh and I aren't together anymore.")).toBe(true);
    expect(conflicting('Jo is my fiancée.', 'Jo and I got married in October.')).toBe(true);
    expect(conflicting("I'm a widow.", 'I remarried last autumn.')).toBe(true);
    expect(conflicting("My husband's name is Tom.", 'Tom and I separated last fall.')).toBe(true);
    expect(conflicting("I'm seeing a guy I met at the gym.", 'I broke up with the guy from the gym.')).toBe(true);
    expect(conflicting("I've been single since the breakup.", "We've been together two months now.")).toBe(true);
    expect(conflicting("I'm married to Sara.", 'My ex-wife Jo lives in Leeds.')).toBe(false);
  });

  it('keeps what is of another time or another sense', () => {
    expect(conflicting('My daughter is 7.', "When she's 10 we'll let her have a phone, not before.")).toBe(false);
    expect(conflicting("I'm 28.", 'A friend made this bowl for my 18th birthday ten years ago.')).toBe(false);
    expect(conflicting('I drink coffee daily.', 'I used to drink like five coffees a day in grad school.')).toBe(false);
    expect(conflicting("I'm a writer.", 'I was an actress before I got into writing.')).toBe(false);
    expect(conflicting("I don't drink.", 'I drink a lot of water.')).toBe(false);
    expect(conflicting("I don't drink.", 'I drink wine now.')).toBe(true);
  });
});
