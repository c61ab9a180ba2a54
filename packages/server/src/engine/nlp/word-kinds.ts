// The fact model's lexicon of kinds (issue 53), generated from WordNet by scripts/build-word-kinds.ts into
// word-kinds.txt: nouns by kind (a place, an occupation, an animal, a musical instrument, a vehicle, meat...) and
// verbs by the change they state (of residence, of a possession, of a job, of a relationship, of a habit). The
// rules read a word by its kind, so wording they were not written from is read as the wording they were.
// Loaded on first use (about 150 KB).
import { readFileSync } from 'node:fs';
import { keyOf, type Token } from './tokens.js';

export type NounKind =
  | 'place'
  | 'occupation'
  | 'relative'
  | 'animal'
  | 'instrument'
  | 'vehicle'
  | 'meat'
  | 'dairy'
  | 'fish'
  | 'alcohol'
  | 'food'
  | 'sport'
  | 'recreation';
export type VerbClass =
  | 'residence'
  | 'possession_end'
  | 'job_end'
  | 'job_start'
  | 'marriage'
  | 'courtship'
  | 'relationship_end'
  | 'habit_start'
  | 'habit_end';

interface Lexicon {
  nouns: Map<NounKind, Set<string>>;
  /** First word's key -> the verb phrases starting with it: their other words and class. */
  verbs: Map<string, Array<{ rest: string[]; kind: VerbClass }>>;
}

let loaded: Lexicon | null = null;

function lexicon(): Lexicon {
  if (loaded) return loaded;
  const nouns = new Map<NounKind, Set<string>>();
  const verbs: Lexicon['verbs'] = new Map();
  for (const line of readFileSync(new URL('./word-kinds.txt', import.meta.url), 'utf8').split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const [kind, list] = line.split('\t') as [string, string];
    const words = list.split('|');
    if (!kind.startsWith('verb:')) {
      nouns.set(kind as NounKind, new Set(words));
      continue;
    }
    for (const phrase of words) {
      const [head, ...rest] = phrase.split(' ');
      // Both the stem and the form as written: "sold" is no stem of "sell".
      for (const key of new Set([keyOf(head!), head!])) {
        if (!verbs.has(key)) verbs.set(key, []);
        verbs.get(key)!.push({ rest, kind: kind.slice(5) as VerbClass });
      }
    }
  }
  // Longest phrase first: "give away" before "give".
  for (const list of verbs.values()) list.sort((a, b) => b.rest.length - a.rest.length);
  loaded = { nouns, verbs };
  return loaded;
}

/** Whether a lower-case word or phrase is of a kind ("tacoma" a place, "cellist" an occupation). */
export function isKind(word: string, kind: NounKind): boolean {
  return lexicon().nouns.get(kind)?.has(word) ?? false;
}

/** Every lower-case word and phrase of a kind (for answer types: "which instruments" -> "bassoon"). */
export function wordsOfKind(kind: NounKind): ReadonlySet<string> {
  return lexicon().nouns.get(kind) ?? new Set();
}

/** The noun's kind in the singular or as written. */
export function nounIs(word: string, kind: NounKind): boolean {
  const set = lexicon().nouns.get(kind);
  if (!set) return false;
  return (
    set.has(word) ||
    (word.endsWith('s') && set.has(word.slice(0, -1))) ||
    (word.endsWith('es') && set.has(word.slice(0, -2)))
  );
}

/**
 * The change of state the verb phrase at `tokens[at]` states ("relocated", "gave away", "split up"),
 * with the number of tokens it spans; null when the verb is of no class. A verb's inflection is its stem's.
 * It reads a few tokens from `at`: a caller trying each position passes the index, not a slice (a slice per
 * position was quadratic in a sentence's length).
 */
export function verbClassAt(tokens: Token[], at = 0): { kind: VerbClass; span: number } | null {
  const first = tokens[at];
  if (!first || first.punct) return null;
  const { verbs } = lexicon();
  const found = [first.key, first.lower]
    .flatMap((key) => verbs.get(key) ?? [])
    .filter((c) => c.rest.every((w, k) => tokens[at + k + 1]?.lower === w || tokens[at + k + 1]?.key === keyOf(w)));
  if (!found.length) return null;
  const span = 1 + Math.max(...found.map((c) => c.rest.length));
  const kinds = new Set(found.filter((c) => c.rest.length === span - 1).map((c) => c.kind));
  // A phrase of several classes ("give up": a habit, a possession, a job) is read by what follows it: an activity
  // ("gave up running") is a habit, a job ("gave up my job", "took up a post") employment, anything else a possession
  // ended or a pastime begun ("took up pottery").
  const next = tokens.slice(at + span, at + span + 3);
  const pick =
    (kinds.has('habit_end') && /ing$/.test(next[0]?.lower ?? '') && 'habit_end') ||
    (kinds.has('job_end') && next.some((t) => JOB_NOUNS.has(t.key)) && 'job_end') ||
    (kinds.has('job_start') && next.some((t) => JOB_NOUNS.has(t.key) || t.key === 'as') && 'job_start') ||
    (kinds.has('possession_end') && 'possession_end') ||
    (kinds.has('habit_start') && 'habit_start') ||
    [...kinds][0]!;
  return { kind: pick, span };
}
const JOB_NOUNS = new Set(['job', 'posit', 'post', 'role', 'career']);
