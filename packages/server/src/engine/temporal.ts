// Temporal phrases in a query -> created_at range [from, to) in epoch ms.
// Calendar arithmetic is in UTC: the engine does not know the end user's time zone,
// and UTC keeps results identical on every server.
import { lookupTable } from '../core/lookup.js';

export interface TemporalRange {
  from: number;
  to: number;
  /** The phrase as it appears in the query (so the caller can strip it from lexical matching). */
  matched: string;
}

const DAY = 86_400_000;
/** Month names in calendar order (also the fact rules' names of a time, nlp/fact-world.ts). */
export const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
const MONTH_RE =
  '(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
// Full names only: "sun", "sat" and "wed" are ordinary words too often.
const WEEKDAY_RE = '(sunday|monday|tuesday|wednesday|thursday|friday|saturday)';
const UNIT_RE = '(day|week|month|year)s?';
const NUM_WORDS: Record<string, number> = lookupTable({
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  few: 3,
  couple: 2,
  several: 3,
});
const NUM_RE =
  '(\\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|a couple of|several)';

function monthIndex(name: string): number {
  const p = name.slice(0, 3).toLowerCase();
  return MONTHS.findIndex((m) => m.startsWith(p));
}
function weekdayIndex(name: string): number {
  const p = name.slice(0, 3).toLowerCase();
  return WEEKDAYS.findIndex((d) => d.startsWith(p));
}
function num(word: string): number {
  const w = word
    .toLowerCase()
    .replace(/^a (few|couple of)$/, '$1')
    .replace(/ of$/, '');
  return /^\d+$/.test(w) ? Number(w) : (NUM_WORDS[w] ?? 1);
}
function startOfDay(t: number): number {
  return Math.floor(t / DAY) * DAY;
}
/** Weeks start on Monday (ISO 8601). */
function startOfWeek(t: number): number {
  const d = startOfDay(t);
  const dow = (new Date(d).getUTCDay() + 6) % 7;
  return d - dow * DAY;
}
function monthStart(y: number, m: number): number {
  return Date.UTC(y, m, 1);
}
function unitRange(now: number, unit: string, offset: number): [number, number] {
  // Calendar unit containing now, shifted by offset units (offset -1 = "last <unit>").
  const d = new Date(now);
  switch (unit) {
    case 'day': {
      const s = startOfDay(now) + offset * DAY;
      return [s, s + DAY];
    }
    case 'week': {
      const s = startOfWeek(now) + offset * 7 * DAY;
      return [s, s + 7 * DAY];
    }
    case 'month': {
      const y = d.getUTCFullYear();
      const m = d.getUTCMonth() + offset;
      return [monthStart(y, m), monthStart(y, m + 1)];
    }
    default: {
      const y = d.getUTCFullYear() + offset;
      return [Date.UTC(y, 0, 1), Date.UTC(y + 1, 0, 1)];
    }
  }
}
function unitMs(unit: string): number {
  return unit === 'day' ? DAY : unit === 'week' ? 7 * DAY : unit === 'month' ? 30.44 * DAY : 365.25 * DAY;
}
/** Most recent occurrence of a weekday strictly before today. */
function pastWeekday(now: number, wd: number): number {
  const today = startOfDay(now);
  const dow = new Date(today).getUTCDay();
  const back = (dow - wd + 7) % 7 || 7;
  return today - back * DAY;
}
function validDay(y: number, m: number, d: number): boolean {
  const t = new Date(Date.UTC(y, m, d));
  return t.getUTCMonth() === m && t.getUTCDate() === d;
}

type Rule = {
  re: RegExp;
  range: (m: RegExpExecArray, now: number) => [number, number] | null;
  /** What every match of `re` holds (the same case folding), tested once a text: a text without it skips the rule. */
  needs?: 'digit' | 'since';
};

const DIGIT = /\d/u;
const SINCE = /since/iu;

const b = (s: string) => new RegExp(`(?<![\\p{L}\\p{N}])${s}(?![\\p{L}\\p{N}])`, 'iu');

/**
 * Every rule below needs a digit or one of these words (or word starts) somewhere, under the same
 * case folding: one pass of this excludes most texts (three in four conversation turns) at a
 * twelfth of the cost of trying the rules, which the index pays for every memory it loads.
 */
export const MAY_NAME_TIME =
  /\d|day|week|month|year|night|morning|afternoon|evening|recent|lately|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec/iu;

/**
 * The same check a word at a time, finer, for ASCII text (the index's scan looks each distinct word up once): a match
 * of every rule below holds a word (a run of ASCII letters and digits, lower case) this matches. A digit for the
 * rules that need one, the word "since" for those that need it; the rest hold a month, weekday or unit, "ago",
 * "night", "morning", "afternoon" or "evening" as a whole word, or, in an alternative of theirs that lacks a boundary
 * on one side, a word that starts with "yesterday", "today", "weekend" or "recently" or holds "tonight" or "lately".
 * MAY_NAME_TIME also lets through texts that only have such letters within words ("maybe", "doctor", "birthday"),
 * each trying every rule: 63,325 of the bench's 300,000 texts against 48,864.
 */
export const TIME_RULE_WORD = new RegExp(
  `\\d|^(?:since|${MONTH_RE}|${WEEKDAY_RE}|${UNIT_RE}|ago|night|morning|afternoon|evening|(?:yesterday|today|weekend|recently).*|.*(?:tonight|lately).*)$`,
);

// Ordered from most to least specific; the first rule that matches wins.
const RULES: Rule[] = [
  {
    // ISO date, optionally with time: 2023-05-08
    re: b('(\\d{4})-(\\d{2})-(\\d{2})(?:[t ][\\d:.]+z?)?'),
    needs: 'digit',
    range: (m) => {
      const y = +m[1]!,
        mo = +m[2]! - 1,
        d = +m[3]!;
      if (!validDay(y, mo, d)) return null;
      const s = Date.UTC(y, mo, d);
      return [s, s + DAY];
    },
  },
  {
    // 8 May 2023 / 8th of May, 2023 / May 8, 2023 / May 8th 2023
    re: b(
      `(?:(\\d{1,2})(?:st|nd|rd|th)?(?: of)? ${MONTH_RE},? (\\d{4})|${MONTH_RE} (\\d{1,2})(?:st|nd|rd|th)?,? (\\d{4}))`,
    ),
    needs: 'digit',
    range: (m) => {
      const d = +(m[1] ?? m[5]!),
        mo = monthIndex(m[2] ?? m[4]!),
        y = +(m[3] ?? m[6]!);
      if (!validDay(y, mo, d)) return null;
      const s = Date.UTC(y, mo, d);
      return [s, s + DAY];
    },
  },
  {
    // May 2023 / in March, 2023
    re: b(`(?:(?:in|during|of) )?${MONTH_RE},? (\\d{4})`),
    needs: 'digit',
    range: (m) => {
      const mo = monthIndex(m[1]!),
        y = +m[2]!;
      return [monthStart(y, mo), monthStart(y, mo + 1)];
    },
  },
  {
    // May 8 / 8 May (no year): the most recent such day not in the future
    re: b(`(?:(\\d{1,2})(?:st|nd|rd|th)?(?: of)? ${MONTH_RE}|${MONTH_RE} (\\d{1,2})(?:st|nd|rd|th)?)`),
    needs: 'digit',
    range: (m, now) => {
      const d = +(m[1] ?? m[4]!),
        mo = monthIndex(m[2] ?? m[3]!);
      let y = new Date(now).getUTCFullYear();
      if (Date.UTC(y, mo, d) > now) y--;
      if (!validDay(y, mo, d)) return null;
      const s = Date.UTC(y, mo, d);
      return [s, s + DAY];
    },
  },
  {
    re: b(`since (?:last )?${WEEKDAY_RE}`),
    needs: 'since',
    range: (m, now) => [pastWeekday(now, weekdayIndex(m[1]!)), now + 1],
  },
  {
    re: b(`since ${MONTH_RE}`),
    needs: 'since',
    range: (m, now) => {
      const mo = monthIndex(m[1]!);
      let y = new Date(now).getUTCFullYear();
      if (monthStart(y, mo) > now) y--;
      return [monthStart(y, mo), now + 1];
    },
  },
  {
    re: b('since (?:the )?(?:start of )?(last|this) (week|month|year)'),
    needs: 'since',
    range: (m, now) => [unitRange(now, m[2]!, m[1] === 'last' ? -1 : 0)[0], now + 1],
  },
  {
    re: b('since (\\d{4})'),
    needs: 'since',
    range: (m, now) => [Date.UTC(+m[1]!, 0, 1), now + 1],
  },
  {
    re: b('since yesterday'),
    needs: 'since',
    range: (_m, now) => [startOfDay(now) - DAY, now + 1],
  },
  {
    // in March (no year): the most recent March that has begun
    re: b(`(?:in|during) ${MONTH_RE}`),
    range: (m, now) => {
      const mo = monthIndex(m[1]!);
      let y = new Date(now).getUTCFullYear();
      if (monthStart(y, mo) > now) y--;
      return [monthStart(y, mo), monthStart(y, mo + 1)];
    },
  },
  {
    re: b('(?:in|during|of|from) (\\d{4})'),
    needs: 'digit',
    range: (m) => {
      const y = +m[1]!;
      if (y < 1900 || y > 2199) return null;
      return [Date.UTC(y, 0, 1), Date.UTC(y + 1, 0, 1)];
    },
  },
  {
    re: b('(?:the )?day before yesterday'),
    range: (_m, now) => unitRange(now, 'day', -2),
  },
  { re: b('yesterday|last night'), range: (_m, now) => unitRange(now, 'day', -1) },
  { re: b('today|tonight|this (?:morning|afternoon|evening)'), range: (_m, now) => unitRange(now, 'day', 0) },
  {
    re: b('(?:the )?(?:last|past) weekend|this weekend'),
    range: (_m, now) => {
      // Saturday..Monday of the most recent weekend that has started.
      const sat = pastWeekday(now + DAY, 6);
      return [sat, sat + 2 * DAY];
    },
  },
  {
    // in the last 3 days / past two weeks / over the last few months
    re: b(`(?:(?:in|over|during|within) )?(?:the )?(?:last|past) ${NUM_RE} ${UNIT_RE}`),
    range: (m, now) => [now - num(m[1]!) * unitMs(m[2]!.toLowerCase()), now + 1],
  },
  {
    // 3 days ago / two weeks ago / a year ago: the unit around that point
    re: b(`${NUM_RE} ${UNIT_RE} ago`),
    range: (m, now) => {
      const u = unitMs(m[2]!.toLowerCase());
      const t = now - num(m[1]!) * u;
      return m[2]!.toLowerCase().startsWith('day') ? [startOfDay(t), startOfDay(t) + DAY] : [t - u / 2, t + u / 2];
    },
  },
  {
    re: b('(last|this|next) (week|month|year)'),
    range: (m, now) =>
      unitRange(now, m[2]!.toLowerCase(), m[1]!.toLowerCase() === 'last' ? -1 : m[1]!.toLowerCase() === 'next' ? 1 : 0),
  },
  {
    re: b(`(?:(?:on|last) )?${WEEKDAY_RE}`),
    range: (m, now) => {
      const s = pastWeekday(now, weekdayIndex(m[1]!));
      return [s, s + DAY];
    },
  },
  { re: b('recently|lately|these days'), range: (_m, now) => [now - 30 * DAY, now + 1] },
];

/**
 * Finds the most specific temporal phrase in the query and returns its created_at
 * range, or null when the query has none.
 */
export function parseTemporal(query: string, now: number, cue?: boolean): TemporalRange | null {
  // `cue`: whether the caller already found MAY_NAME_TIME in it, or TIME_RULE_WORD in a word of it (the index's scanText).
  if (!query || !(cue ?? MAY_NAME_TIME.test(query))) return null;
  const text = query.length > 2000 ? query.slice(0, 2000) : query;
  // A memory's text that names a time mostly does so by a word ("last week"): the rules of dates and of
  // "since" are skipped unless it has a digit or the word (half the rules; the index applies this to each memory).
  const digit = DIGIT.test(text);
  const since = SINCE.test(text);
  for (const rule of RULES) {
    if (rule.needs === 'digit' ? !digit : rule.needs === 'since' && !since) continue;
    const m = rule.re.exec(text);
    if (!m) continue;
    const r = rule.range(m, now);
    if (!r || !(r[0] < r[1])) continue;
    return { from: r[0], to: r[1], matched: m[0] };
  }
  return null;
}
