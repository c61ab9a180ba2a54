import { describe, expect, it } from 'vitest';
import { conflicting, factsOf as facts } from '../../testing/fact-reading.js';

describe('frames around a stated fact', () => {
  it('reads the clause a question, a report or a date frames as it reads the clause bare', () => {
    expect(facts('Did I tell you I sold the van?')).toContain('has!=van');
    expect(facts('You know we moved to Austin, right?')).toContain('lives_in=austin');
    expect(facts('My physio says I have to quit running.')).not.toContain('does=run');
    expect(facts('I told my landlord that I live in Ottawa now.')).toContain('lives_in=ottawa');
    expect(facts("It's been a year since I gave away my hamster.")).toContain('has!=hamster');
    expect(conflicting('I work at Intel.', "It's been six months since I left Intel.")).toBe(true);
    expect(conflicting("I'm vegetarian.", "Did I tell you I'm not vegetarian anymore?")).toBe(true);
    // A denied frame is no statement, and a report about someone else stays theirs.
    expect(facts('I never said I sold the van.')).not.toContain('has!=van');
    expect(conflicting('I work at Honda.', 'Did you know my cousin works at Toyota?')).toBe(false);
  });

  it('puts a passive loss, the end user as the object and a former partner in the rules shape', () => {
    expect(facts('The kayak was sold last month.')).toContain('has!=kayak');
    expect(facts('My iPad got stolen on the train.')).toContain('has!=ipad');
    expect(facts('The kayak was sold by my brother.')).not.toContain('has!=kayak');
    expect(conflicting('I work at Asda.', 'Asda let me go last week.')).toBe(true);
    expect(conflicting("I'm dating Ali.", 'Ali dumped me.')).toBe(true);
    expect(conflicting("I'm dating Rosa.", "I'm not with Rosa anymore.")).toBe(true);
    expect(conflicting("I'm dating Hugo.", 'My ex-boyfriend Hugo lives in Spain.')).toBe(true);
    // An ex unnamed may be anyone's past; being with someone is company unless denied.
    expect(conflicting("I'm married to Lucy.", 'My ex-wife called me yesterday.')).toBe(false);
    expect(conflicting("I'm married to Lucy.", 'I was with Mel at the park.')).toBe(false);
    expect(facts("My parents' house was sold.")).not.toContain('has!=house');
    expect(conflicting('I work at Siemens.', 'I quit Siemens.')).toBe(true);
    // The person who fired one is not the employer; a message left for one is no parting.
    expect(facts('My boss fired me.')).not.toContain('works_at!=boss');
    expect(conflicting("I'm dating Tom.", 'Tom left me a message.')).toBe(false);
  });

  it('reads kin named as a name and an ordinal birthday as an age', () => {
    expect(conflicting('My mum is 60.', 'Mum turned 61 on Friday.')).toBe(true);
    expect(conflicting("I'm 39.", 'I celebrated my 40th birthday last month.')).toBe(true);
    expect(conflicting("I'm 39.", 'My mum is 61.')).toBe(false);
    expect(conflicting('My son is four.', 'My son celebrated his fifth birthday on Saturday.')).toBe(true);
    expect(facts('Tom celebrated his 40th birthday yesterday.')).toContain('age=40');
    expect(conflicting("I'm 29.", 'I went to his fifth birthday party.')).toBe(false);
  });

  it("reads an age reached after a possessed noun as that one's, not the writer's", () => {
    expect(conflicting('I am 35.', 'my little one just turned 2')).toBe(false);
    expect(conflicting('I am 35.', 'my dog turned 9 this week')).toBe(false);
    expect(conflicting('I am 35.', 'Happy to say my boy turned 10!')).toBe(false);
    expect(conflicting('I am 35.', 'my wife and I both turned 36 this year')).toBe(true);
    expect(conflicting('My son is 6.', 'My son just turned 7.')).toBe(true);
    expect(conflicting('I am 35.', 'our puppy is turning 1 on Sunday')).toBe(false);
  });

  it('reads two people named together as two, and their parting as each one’s', () => {
    expect(conflicting('Lisa is married to Greg.', 'Lisa and Greg are getting divorced.')).toBe(true);
    expect(conflicting('Kate is dating Tom.', 'Kate and Tom broke up last week.')).toBe(true);
    expect(conflicting('Kate is dating Tom.', 'Kate and Tom split the bill.')).toBe(false);
  });

  it('reads a habit whose place one "makes it to" as the habit', () => {
    expect(conflicting('I go to the gym five times a week.', 'I only make it to the gym once a week now.')).toBe(true);
  });

  it('reads an aspect, a gerund subject, a cleft, "me and" and a pronoun for a thing given up', () => {
    expect(facts('Basically I quit my job.')).toContain('works_as=unemployed');
    expect(facts('I recently started working at Tesco.')).toContain('works_at=tesco');
    expect(facts('We ended up moving to Leeds.')).toContain('lives_in=leeds');
    expect(facts('I managed to sell my car.')).toContain('has!=car');
    expect(facts('Moving to Leeds was the best decision.')).toContain('lives_in=leeds');
    expect(facts('Moving to Leeds would be great.')).not.toContain('lives_in=leeds');
    expect(facts('After I left Google, I joined a startup.')).toContain('works_at!=google');
    expect(facts('Leeds is where I live now.')).toContain('lives_in=leeds');
    expect(facts('Tesco is where I work now.')).toContain('works_at=tesco');
    expect(facts('Me and my wife moved to Leeds.')).toContain('lives_in=leeds');
    expect(conflicting('I have a piano.', 'I loved my old piano but I sold it last year.')).toBe(true);
    // A past home stays past; an aspect before an object the rules read is left to them.
    expect(facts('Chicago was home for years.')).toContain('lives_in!=chicago');
    expect(facts("I've started dating a guy named Theo.")).toContain('partner=theo');
  });
});
