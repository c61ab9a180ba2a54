import { describe, expect, it } from 'vitest';
import { parseTemporal } from './temporal.js';
import { scanText } from './text.js';

// Friday 2023-09-01 15:00 UTC
const now = Date.UTC(2023, 8, 1, 15);
const day = (y: number, m: number, d: number) => Date.UTC(y, m - 1, d);
const range = (q: string) => {
  const r = parseTemporal(q, now);
  return r && [new Date(r.from).toISOString().slice(0, 10), new Date(r.to - 1).toISOString().slice(0, 10)];
};

describe('parseTemporal', () => {
  it('reads absolute dates', () => {
    expect(range('what happened on 2023-05-08?')).toEqual(['2023-05-08', '2023-05-08']);
    expect(range('notes from 8 May, 2023')).toEqual(['2023-05-08', '2023-05-08']);
    expect(range('May 8th 2023 meeting')).toEqual(['2023-05-08', '2023-05-08']);
    expect(range('in March 2023')).toEqual(['2023-03-01', '2023-03-31']);
    expect(range('during 2022')).toEqual(['2022-01-01', '2022-12-31']);
  });

  it('reads relative dates against now', () => {
    expect(range('yesterday')).toEqual(['2023-08-31', '2023-08-31']);
    expect(range('today')).toEqual(['2023-09-01', '2023-09-01']);
    expect(range('what did I do last week')).toEqual(['2023-08-21', '2023-08-27']); // ISO weeks start Monday
    expect(range('last month')).toEqual(['2023-08-01', '2023-08-31']);
    expect(range('this year')).toEqual(['2023-01-01', '2023-12-31']);
    expect(range('3 days ago')).toEqual(['2023-08-29', '2023-08-29']);
    expect(range('in March')).toEqual(['2023-03-01', '2023-03-31']);
    expect(range('in December')).toEqual(['2022-12-01', '2022-12-31']); // most recent December that began
    expect(range('on Monday')).toEqual(['2023-08-28', '2023-08-28']);
  });

  it('reads open ranges up to now', () => {
    const r = parseTemporal('anything new since Monday?', now)!;
    expect(r.from).toBe(day(2023, 8, 28));
    expect(r.to).toBeGreaterThan(now);
    expect(r.matched).toBe('since Monday');
    const p = parseTemporal('in the past 2 weeks', now)!;
    expect(p.from).toBe(now - 14 * 86_400_000);
  });

  it('returns null without a time phrase and ignores look-alike words', () => {
    expect(parseTemporal('what is my favourite colour', now)).toBeNull();
    expect(parseTemporal('we sat in the sun', now)).toBeNull();
    expect(parseTemporal('I may go', now)).toBeNull();
    expect(parseTemporal('', now)).toBeNull();
    expect(parseTemporal('2023-02-30', now)).toBeNull(); // not a real day
  });
  it('finds a phrase of every rule (each passes the cheap check that comes first), in any case', () => {
    const phrases = [
      '2023-05-08T10:00',
      '8th of May, 2023',
      'May 8',
      'since last Monday',
      'since March',
      'since the start of this year',
      'since 2020',
      'since yesterday',
      'in June',
      'from 2021',
      'the day before yesterday',
      'last night',
      'TONIGHT',
      'this afternoon',
      'this evening',
      'the past weekend',
      'over the last 3 days',
      'a couple of weeks ago',
      'next month',
      'on Sunday',
      'Lately',
      'these days',
      'recently',
    ];
    for (const phrase of phrases) expect(parseTemporal(`what about ${phrase}?`, now), phrase).not.toBeNull();
    expect(parseTemporal('what did Caroline paint for her friend?', now)).toBeNull();
  });

  it("finds no time in a text without the index's cue (TIME_RULE_WORD a word at a time), glued words and edges too", () => {
    // Words of every rule, and letters that glue onto them ("xtoday", "stonight", "weekends"): each alternative's edges.
    const pieces = ['yesterday', 'today', 'tonight', 'weekend', 'recently', 'lately', 'night', 'morning', 'evening'];
    pieces.push('last', 'past', 'this', 'next', 'the', 'these', 'since', 'in', 'during', 'on', 'before', 'ago', 'a');
    pieces.push('few', 'May', 'march', 'sept', 'Monday', 'day', 'days', 'week', 'years', '3', '2023', '05', 'x', 's');
    pieces.push(' ', ' ', ' ', ' ', ' ', ' ', ',', '-', '_', 'é', '\u2013', '\u2014');
    let seed = 11;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let found = 0;
    for (let i = 0; i < 20_000; i++) {
      const text = Array.from({ length: 1 + Math.floor(next() * 7) }, () => pieces[Math.floor(next() * pieces.length)]);
      const joined = text.join('');
      const cued = parseTemporal(joined, now, scanText(joined).mayNameTime);
      expect(cued, JSON.stringify(joined)).toEqual(parseTemporal(joined, now));
      if (cued) found++;
    }
    expect(found).toBeGreaterThan(2000);
  });

  it('tries the rules of dates and of "since" under the case folding they match with (a gate of its own must not differ)', () => {
    // U+017F (long s) folds to "s" and U+212A (Kelvin) to "k" under /iu, as the rules match: "ſince" is "since".
    expect(range('\u017Fince 2021')).toEqual(['2021-01-01', '2023-09-01']);
    expect(range('SINCE MONDAY')).toEqual(['2023-08-28', '2023-09-01']);
    expect(range('ſince yesterday')).toEqual(['2023-08-31', '2023-09-01']);
    // Full-width digits are no digits to the rules (\d is ASCII): no date.
    expect(range('on ２０２３-０５-０８')).toBeNull();
  });
});
