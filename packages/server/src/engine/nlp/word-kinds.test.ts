import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conflicting, factsOf as facts } from '../../testing/fact-reading.js';
import { tokenizeWithOffsets } from './tokens.js';
import { nounIs, verbClassAt } from './word-kinds.js';

describe('the lexicon of kinds (WordNet)', () => {
  it('is the file the generator writes from WordNet', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'word-kinds-')), 'word-kinds.txt');
    const script = new URL('../../../scripts/build-word-kinds.ts', import.meta.url).pathname;
    execFileSync(process.execPath, ['--import', 'tsx', script, out], { stdio: 'ignore' });
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(new URL('./word-kinds.txt', import.meta.url), 'utf8'));
  }, 60_000);

  it('knows nouns by kind and verbs by the change they state, phrasal and irregular forms too', () => {
    expect(nounIs('tacoma', 'place')).toBe(true);
    expect(nounIs('cellist', 'occupation')).toBe(true);
    expect(nounIs('ferrets', 'animal')).toBe(true);
    expect(nounIs('oboe', 'instrument')).toBe(true);
    expect(nounIs('venison', 'meat')).toBe(true);
    expect(nounIs('mackerel', 'fish')).toBe(true);
    expect(nounIs('champagne', 'alcohol')).toBe(true);
    expect(nounIs('lemonade', 'alcohol')).toBe(false);
    expect(nounIs('stepfather', 'relative')).toBe(true);
    expect(nounIs('cello', 'animal')).toBe(false);
    const kind = (text: string) => verbClassAt(tokenizeWithOffsets(text))?.kind ?? null;
    expect(kind('emigrated to Chile')).toBe('residence');
    expect(kind('auctioned off my cello')).toBe('possession_end');
    expect(kind('sold the boat')).toBe('possession_end');
    expect(kind('ceased smoking')).toBe('habit_end');
    expect(kind('gave up smoking')).toBe('habit_end');
    expect(kind('gave up my job')).toBe('job_end');
    expect(kind('stepped down from the board')).toBe('job_end');
    expect(kind('eloped')).toBe('marriage');
    expect(kind('took up pottery')).toBe('habit_start');
    expect(kind('took up a post at the museum')).toBe('job_start');
    // A modal is no verb of dismissal, a sense far down a word's list no class of it.
    expect(kind('can swim')).toBe(null);
    expect(kind('dropped the kids off')).toBe(null);
  });

  it('reads a clause no rule was written for by the class of its verb and the kind of its words', () => {
    expect(facts('I emigrated to Chile.')).toContain('lives_in=chile');
    expect(facts('I auctioned off my cello.')).toContain('has!=cello');
    expect(facts('I ceased smoking.')).toContain('does!=smoke');
    expect(facts("I'm a cellist.")).toContain('works_as=cellist');
    expect(facts('I took up pottery in March.')).toContain('does=potteri');
    expect(facts('I married Tom in June.')).toEqual(expect.arrayContaining(['relationship_status=married']));
    expect(conflicting('I live in Boise.', 'We resettled in Tacoma.')).toBe(true);
    expect(conflicting('I have a ferret.', 'I gave my ferret away.')).toBe(true);
    expect(conflicting("I don't own any pets.", 'We adopted a ferret.')).toBe(true);
    expect(conflicting("I'm a vegetarian.", 'I eat venison now.')).toBe(true);
    expect(conflicting("I don't eat fish.", "I've started eating mackerel, my doctor told me to.")).toBe(true);
    expect(conflicting("I don't drink alcohol.", "I've started having a glass of champagne with dinner.")).toBe(true);
    expect(conflicting("I don't drink alcohol.", 'I had a glass of lemonade with dinner.')).toBe(false);
    expect(conflicting('My stepfather lives in Ohio.', 'My stepfather moved to Texas.')).toBe(true);
    expect(conflicting('Joanna is a screenwriter.', 'Joanna quit screenwriting to become a teacher.')).toBe(true);
    // Compatible statements stay so.
    expect(conflicting('I have a ferret.', 'I have a cello.')).toBe(false);
    expect(conflicting('I live in Boise.', 'My sister emigrated to Chile.')).toBe(false);
  });
});
