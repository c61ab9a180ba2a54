/**
 * Statement pairs drawn from real text nobody on this project wrote: the LoCoMo dev conversations'
 * turns (first-person sentences, every speaker's taken as one end user's, as Dialogue NLI pairs
 * persona sentences of different people) and their per-session observations (third-person facts
 * about a named person, paired only within that person). Pairs are proposed by the issue's kinds of
 * fact (a broad word list per kind, not the extractor's rules), sampled with a fixed seed, and split
 * into tuning and held-out halves by a hash of the pair before anyone labels them. A pair is named
 * by references (file:dia_id#sentence, file:obsSESSION:Person#index) so the labels file carries no
 * LoCoMo text; resolveRef reads it back from ENGRAM_LOCOMO_DIR.
 *
 *   node --import tsx bench/intelligence/locomo-pairs.ts [--same | --changes] > /tmp/candidates.txt   (proposes; a person labels)
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mulberry32 } from '../lib/locomo.js';

export const locomoDir = () =>
  process.env.ENGRAM_LOCOMO_DIR ??
  resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../shared/bench/locomo-dev');

export interface Statement {
  ref: string;
  text: string;
  /** Subject: 'I' for a turn, the person's name for an observation or event. */
  subject: string;
  /** Who said a turn (the person an observation or event is about). */
  speaker: string;
  /** Conversation order: session * 1000 + turn. */
  order: number;
}

const sentencesOf = (text: string) =>
  text
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim())
    .filter(Boolean);

/** Every first-person turn sentence and every observation of the dev conversations, by reference. */
export function loadStatements(dir = locomoDir()): Map<string, Statement> {
  const out = new Map<string, Statement>();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const name = file.replace(/\.json$/, '');
    const raw = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, any>;
    for (const key of Object.keys(raw)) {
      const turns = /^session_(\d+)$/.exec(key);
      if (turns) {
        for (const [t, turn] of (raw[key] as Array<{ dia_id: string; text: string; speaker: string }>).entries()) {
          for (const [i, text] of sentencesOf(turn.text).entries()) {
            out.set(`${name}:${turn.dia_id}#${i}`, {
              ref: `${name}:${turn.dia_id}#${i}`,
              text,
              subject: 'I',
              speaker: turn.speaker,
              order: Number(turns[1]) * 1000 + t,
            });
          }
        }
      }
      const observed = /^session_(\d+)_observation$/.exec(key);
      if (observed) {
        for (const [person, facts] of Object.entries(raw[key] as Record<string, Array<[string, string]>>)) {
          for (const [i, [text]] of facts.entries()) {
            const ref = `${name}:obs${observed[1]}:${person}#${i}`;
            out.set(ref, { ref, text, subject: person, speaker: person, order: Number(observed[1]) * 1000 + i });
          }
        }
      }
      // Event summaries: one short third-person sentence per event of a session (ordered after its turns).
      const events = /^events_session_(\d+)$/.exec(key);
      if (events) {
        for (const [person, list] of Object.entries(raw[key] as Record<string, unknown>)) {
          if (!Array.isArray(list)) continue;
          for (const [i, text] of (list as string[]).entries()) {
            const ref = `${name}:ev${events[1]}:${person}#${i}`;
            out.set(ref, { ref, text, subject: person, speaker: person, order: Number(events[1]) * 1000 + 900 + i });
          }
        }
      }
    }
  }
  return out;
}

/** The statement of a reference, read from the LoCoMo files. */
export function resolver(dir = locomoDir()) {
  const statements = loadStatements(dir);
  return (ref: string) => {
    const s = statements.get(ref);
    if (!s) throw new Error(`no LoCoMo statement ${ref} in ${dir}`);
    return s;
  };
}

/** The kinds of fact of issue 53, each a broad word list (first and third person). */
const KINDS: Record<string, RegExp> = {
  residence: /\b(live|lives|living|lived|moved?|moving|home|hometown|from|based|relocat\w*)\b/i,
  employer: /\b(work(s|ing|ed)? (at|for)|job|company|employer|hired|quit|fired|laid off|business|boss)\b/i,
  job: /\b(career|profession|works? as|(I'm|I am|is) an? [a-z]+(er|or|ist|ian|ant)\b)/i,
  favorite: /\bfavou?rite\b/i,
  preference: /\b(prefers?|preferred|rather|more than|over)\b/i,
  date_age: /\b(years? old|birthday|born|age|anniversary)\b/i,
  family:
    /\b(married|husband|wife|partner|boyfriend|girlfriend|kids|children|son|daughter|divorced?|engaged|single|dating|mom|dad|mother|father)\b/i,
  possession: /\b(have|has|own|owns|bought|sold|got|new)\b/i,
  habit: /\b(every|usually|always|often|daily|weekly|weekends?|mornings?|evenings?|routine|regularly|twice|once a)\b/i,
  negation: /\b(not|n't|never|no longer|anymore|stopped|quit|gave up)\b/i,
};

const FIRST_PERSON = /\b(I|I'm|I've|I'd|my|we|we're|our)\b/;

export const heldOut = (a: string, b: string) => createHash('sha256').update(`${a}|${b}`).digest()[0]! % 2 === 0;

/** Candidate pairs: per kind, up to `perKind` turn pairs and as many observation pairs of one person. */
export function propose(statements: Map<string, Statement>, perKind = 24, seed = 53) {
  const rand = mulberry32(seed);
  const pick = <T>(xs: T[], n: number) => {
    const copy = [...xs];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy.slice(0, n);
  };
  const all = [...statements.values()].filter((s) => s.text.length >= 12 && s.text.length <= 160);
  const pairs: Array<{ kind: string; older: Statement; newer: Statement }> = [];
  const seen = new Set<string>();
  for (const [kind, words] of Object.entries(KINDS)) {
    const turns = all.filter((s) => s.subject === 'I' && FIRST_PERSON.test(s.text) && words.test(s.text));
    const observations = all.filter((s) => s.subject !== 'I' && words.test(s.text));
    const candidates: Array<[Statement, Statement]> = [];
    for (let n = 0; n < perKind * 20 && candidates.length < perKind; n++) {
      const [a, b] = pick(turns, 2);
      if (a && b) candidates.push([a, b]);
    }
    const byPerson = new Map<string, Statement[]>();
    for (const s of observations)
      byPerson.set(`${s.ref.split(':')[0]}:${s.subject}`, [
        ...(byPerson.get(`${s.ref.split(':')[0]}:${s.subject}`) ?? []),
        s,
      ]);
    const people = [...byPerson.values()].filter((xs) => xs.length >= 2);
    for (let n = 0; n < perKind * 20 && candidates.length < perKind * 2 && people.length > 0; n++) {
      const [a, b] = pick(people[Math.floor(rand() * people.length)]!, 2);
      if (a && b && a.order !== b.order) candidates.push([a, b]);
    }
    for (const [a, b] of candidates) {
      const [older, newer] = a.order <= b.order ? [a, b] : [b, a];
      const key = `${older.ref}|${newer.ref}`;
      if (seen.has(key) || older.text === newer.text) continue;
      seen.add(key);
      pairs.push({ kind, older, newer });
    }
  }
  return pairs;
}

/**
 * The same-subject set (issue 53, session 4): pairs of statements about ONE person, each a first-person
 * turn sentence of that speaker or an observation / event summary about them, from different sessions,
 * both matching one kind's word list and sharing a content word (so that most pairs speak of the same
 * thing: the same job, pet, city). Proposed with a fixed seed, split by `heldOut` before labelling.
 */
const SAME_KINDS: Record<string, RegExp> = {
  residence: /\b(live[sd]?|living|moved?|moving|relocat\w*|hometown|apartment|house|neighbou?rhood|grew up)\b/i,
  employer_job:
    /\b(work(s|ed|ing)? (at|for|as)|job|career|hired|quit|fired|laid off|employ\w*|promot\w*|boss|company|position|profession|business|studio|store|shop)\b/i,
  relationship:
    /\b(married|marry|husband|wife|partner|boyfriend|girlfriend|divorc\w*|engaged|single|dating|fianc\w*|broke up|break up|split up)\b/i,
  age_birthday: /\b(years? old|birthday|born|turn(ed|ing|s)? \d+|my age|aged)\b/i,
  favorite_preference: /\b(favou?rite|prefer\w*|rather|more than|the best)\b/i,
  possession:
    /\b(own|owns|owned|bought|sold|adopted|got an? |have an? |has an? |new (car|house|phone|dog|cat|puppy)|pets?|dogs?|cats?|car)\b/i,
  habit:
    /\b(every (day|morning|week|weekend|evening|night|month|year)|usually|always|daily|weekly|twice|once a|routine|regularly|each (day|week|morning))\b/i,
  negation: /\b(not|n't|never|no longer|anymore|stopped|quit|gave up)\b/i,
};
const CONTENT_STOP = new Set(
  'that this with have has been about what when where they them their there your just really like from some more also would could should will them then than into over much very make made good great time things thing know think feel want need going doing being were here even still those these such only other every each well back lots much many glad happy love loved awesome amazing thanks thank yeah sure right'.split(
    ' ',
  ),
);
const contentWords = (text: string) =>
  new Set(
    (text.toLowerCase().match(/[a-z]{4,}/g) ?? [])
      .map((w) => w.replace(/(ies|es|s|ed|ing)$/, ''))
      .filter((w) => w.length >= 4 && !CONTENT_STOP.has(w)),
  );

export function proposeSameSubject(statements: Map<string, Statement>, perKind = 22, seed = 534) {
  const rand = mulberry32(seed);
  const all = [...statements.values()].filter(
    (s) => s.text.length >= 12 && s.text.length <= 180 && (s.subject !== 'I' || FIRST_PERSON.test(s.text)),
  );
  const pairs: Array<{ kind: string; older: Statement; newer: Statement }> = [];
  const seen = new Set<string>();
  for (const [kind, words] of Object.entries(SAME_KINDS)) {
    const bySubject = new Map<string, Statement[]>();
    for (const s of all.filter((x) => words.test(x.text))) {
      const key = `${s.ref.split(':')[0]}:${s.speaker}`;
      bySubject.set(key, [...(bySubject.get(key) ?? []), s]);
    }
    const candidates: Array<[Statement, Statement]> = [];
    for (const xs of bySubject.values())
      for (let i = 0; i < xs.length; i++)
        for (let j = i + 1; j < xs.length; j++) {
          const [a, b] = xs[i]!.order <= xs[j]!.order ? [xs[i]!, xs[j]!] : [xs[j]!, xs[i]!];
          if (Math.floor(a.order / 1000) === Math.floor(b.order / 1000)) continue;
          const wa = contentWords(a.text);
          if (![...contentWords(b.text)].some((w) => wa.has(w))) continue;
          candidates.push([a, b]);
        }
    for (let i = candidates.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [candidates[i], candidates[j]] = [candidates[j]!, candidates[i]!];
    }
    let n = 0;
    for (const [older, newer] of candidates) {
      if (n >= perKind) break;
      const key = `${older.ref}|${newer.ref}`;
      if (seen.has(key) || older.text === newer.text) continue;
      seen.add(key);
      pairs.push({ kind, older, newer });
      n++;
    }
  }
  return pairs;
}

/** A newer statement that says something changed (the candidates real updates are among). */
const CHANGE =
  /\b(lost|quit|left|moved|sold|gave away|adopted|new|started|began|became|no longer|anymore|passed away|died|stopped|switched|changed|now|opened|closed|got (a|an|my)|broke up|divorc\w*|got married|retired|fired|laid off|third|second|another)\b/i;

/**
 * Change candidates: per kind, a newer statement with a change word and an older statement of the same
 * person from an earlier session, of the same kind and sharing a content word (where real updates are).
 */
export function proposeChanges(statements: Map<string, Statement>, perKind = 14, seed = 535) {
  const rand = mulberry32(seed);
  const all = [...statements.values()].filter(
    (s) => s.text.length >= 12 && s.text.length <= 180 && (s.subject !== 'I' || FIRST_PERSON.test(s.text)),
  );
  const pairs: Array<{ kind: string; older: Statement; newer: Statement }> = [];
  for (const [kind, words] of Object.entries(SAME_KINDS)) {
    const candidates: Array<[Statement, Statement]> = [];
    const matching = all.filter((x) => words.test(x.text));
    for (const b of matching.filter((x) => CHANGE.test(x.text)))
      for (const a of matching) {
        if (a.speaker !== b.speaker || a.ref.split(':')[0] !== b.ref.split(':')[0]) continue;
        if (Math.floor(a.order / 1000) >= Math.floor(b.order / 1000)) continue;
        const wa = contentWords(a.text);
        if ([...contentWords(b.text)].some((w) => wa.has(w))) candidates.push([a, b]);
      }
    for (let i = candidates.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [candidates[i], candidates[j]] = [candidates[j]!, candidates[i]!];
    }
    for (const [older, newer] of candidates.slice(0, perKind)) pairs.push({ kind, older, newer });
  }
  return pairs;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const same = ['--same', '--changes'].some((f) => process.argv.includes(f));
  const proposer = process.argv.includes('--changes') ? proposeChanges : same ? proposeSameSubject : propose;
  for (const { kind, older, newer } of proposer(loadStatements())) {
    console.log(
      `${heldOut(older.ref, newer.ref) ? 'H' : 'T'} ${kind} || ${older.ref} || ${newer.ref}\n    A: ${same ? `(${older.speaker}) ` : ''}${older.text}\n    B: ${same ? `(${newer.speaker}) ` : ''}${newer.text}`,
    );
  }
}
