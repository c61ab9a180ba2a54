// Endings named by what they end (issue 53, session 12). A sentence that says something is over ("we said goodbye to
// the caravan", "kate dumped me", "no more train") often has no frame the fact rules read, but it names again what an
// earlier statement held. Here a sentence with a word of ending, not negated, hedged or asked, yields its subject and
// the words it names; the knowledge timeline (knowledge.ts) ends a current fact of that subject whose value is among
// them. The rules need not read the new sentence's grammar; the older statement, which they read, says what it is.
import { STOP_WORDS } from '../stopwords.js';
import type { EntityMention } from './entities.js';
import type { EntityRef } from './fact-model.js';
import { CHILD_WORDS, PARTNERS, SPOUSES } from './fact-words.js';
import { HEDGES } from './lexicon.js';
import type { Token } from './tokens.js';
import { nounIs, verbClassAt } from './word-kinds.js';

/**
 * A sentence stating that something of `subject`'s ended; `words`: its words in the singular, lower case; `objectKeys`:
 * the keys of the words right after its word of ending ("cut out coffee" -> "coffe"), which may name an activity's
 * value by its key.
 */
export interface Ending {
  subject: EntityRef;
  words: string[];
  objectKeys: string[];
}

/** Keys (tokens.ts) of words that end what they govern, beside WordNet's verb classes of ending. */
const ENDING_KEYS = new Set([
  'quit',
  'stop',
  'sold',
  'sell',
  'lost',
  'end',
  'retir',
  'resign',
  'fire',
  'divorc',
  'separ',
  'broke',
  'split',
  'die',
  'dead',
  'goodby',
  'rid',
  'ex',
  'former',
  'formerli',
  'abandon',
  'cancel',
  'scrap',
  'gave',
  'cut',
  'kick',
  // A thing ended by its own verb or taken ("the boat sank", "someone nicked my bike", "we had to rehome Luna").
  'stole',
  'stolen',
  'nick',
  'sank',
  'sunk',
  'rehom',
  'wreck',
]);
/** Ending only with a particle or alone: "broke up", "split from", not "broke a string" or "split the bill". */
const WITH_PARTICLE = new Set(['broke', 'split']);
const PARTICLES = new Set(['up', 'off', 'with', 'from']);
/** Words of ending that, before a person, give or do something for them instead. */
const TO_SOMEONE = new Set(['gave', 'cut', 'sold', 'lost']);
const OBJECT_PRONOUNS = new Set(['me', 'us', 'him', 'her', 'them', 'you']);
/** Words before a thing named as the subject of its own ending ("the boat sank", "our piano's gone"). */
const THING_OWNERS = new Set(['the', 'my', 'our', 'his', 'her', 'their']);
/** Verbs a thing ends by of its own ("the boat sank"), which make an ending no one named the writer's. */
const OWN_ENDINGS = new Set(['sank', 'sunk', 'stolen', 'wreck', 'die', 'dead']);
const OTHER_PEOPLE = new Set(['he', 'she', 'they', 'his', 'her', 'their', 'you', 'your']);
const LINKS = new Set(["'s", 'is', 'was', 'got', 'has', 'had', 'were', 'are', "'re"]);
/** An absence for a while is no ending ("I left the city for the weekend"). */
const TEMPORARY = new Set(['weekend', 'trip', 'holiday', 'vacat', 'visit', 'tour', 'break']);
/** Words after which a noun ends its phrase: "my iPhone charger" names a charger, "my iPhone in the lake" an iPhone. */
const PHRASE_FOLLOWERS = new Set([...STOP_WORDS, 'last', 'yesterday', 'today', 'ago', 'completely', 'now', 'anymore']);
/** Words of ending that need a negation before them: "not ... anymore", "no longer", "no more". */
const NEGATED_ENDINGS = new Set(['anymor', 'longer', 'more']);
/** Words after which a verb stands: a subject, an auxiliary, an adverb of time. */
const VERB_BEFORE = new Set([
  'i',
  'we',
  'he',
  'she',
  'they',
  'have',
  "'ve",
  'had',
  "'d",
  'has',
  'just',
  'finally',
  'to',
]);
const ENDING_CLASSES = new Set(['possession_end', 'job_end', 'relationship_end', 'habit_end']);
const NEGATION = new Set(['not', "n't", 'never', 'no', 'nt']);
/** A plan, a wish or a condition states no ending ("I might sell the boat"); "used to" is the rules'. */
const HEDGED = new Set([...HEDGES.filter((h) => h !== 'use'), 'someday']);
const SELF_WORDS = new Set(['i', 'we', 'me', 'us', 'my', 'our', 'myself']);
const OTHERS_UNNAMED = new Set(['they', 'you']);
/** A person named by a role after "my" ("my friend sold her piano" is not the writer's ending). */
const ROLES = new Set([
  ...PARTNERS,
  ...SPOUSES,
  ...CHILD_WORDS,
  'friend',
  'buddi',
  'mate',
  'boss',
  'colleagu',
  'cowork',
  'neighbour',
  'neighbor',
  'roommat',
  'flatmat',
  'housemat',
  'classmat',
]);

const isRole = (t: Token | undefined) => !!t && (ROLES.has(t.key) || nounIs(t.lower, 'relative'));

/** A text's statements: its sentences that ask nothing, with the index of their first token. */
export function statementsOf(tokens: Token[]): Array<{ sentence: Token[]; at: number }> {
  // Many readers walk one text's statements; they share one split (and phrases cached by sentence, fact-world.ts).
  const known = statementsCache.get(tokens);
  if (known) return known;
  const out: Array<{ sentence: Token[]; at: number }> = [];
  let start = 0;
  for (let i = 0; i <= tokens.length; i++) {
    const t = tokens[i];
    if (t && !(t.punct && /[.!?;]/.test(t.text))) continue;
    if (t?.text !== '?' && i > start) out.push({ sentence: tokens.slice(start, i), at: start });
    start = i + 1;
  }
  statementsCache.set(tokens, out);
  return out;
}
const statementsCache = new WeakMap<Token[], Array<{ sentence: Token[]; at: number }>>();

/** A plan, a wish, a condition or a stay away for a while: no change of what holds. */
export function hedged(sentence: Token[]): boolean {
  let known = hedgedCache.get(sentence);
  if (known === undefined) {
    known = sentence.some(
      (s, k) => HEDGED.has(s.key) || TEMPORARY.has(s.key) || (s.lower === 'going' && sentence[k + 1]?.lower === 'to'),
    );
    hedgedCache.set(sentence, known);
  }
  return known;
}
const hedgedCache = new WeakMap<Token[], boolean>();

/** The endings stated in a text's sentences; `self` is who "I" is. */
export function endingsOf(tokens: Token[], mentions: EntityMention[], self: EntityRef): Ending[] {
  const out: Ending[] = [];
  for (const { sentence, at } of statementsOf(tokens)) {
    const cue = endingAt(sentence);
    if (cue < 0 || hedged(sentence)) continue;
    // "The boat sank", "my old laptop died": the thing before the word of ending is named too; "the piano's gone"
    // with no one named is the writer's.
    const k = cue - (LINKS.has(sentence[cue - 1]?.lower ?? '') ? 2 : 1);
    const thing = sentence[k];
    const owned =
      thing && !thing.punct && !STOP_WORDS.has(thing.lower) && THING_OWNERS.has(sentence[k - 1]?.lower ?? '');
    const nobody = () =>
      !sentence.some((t) => OTHER_PEOPLE.has(t.lower)) &&
      !mentions.some((m) => m.type === 'person' && m.first >= at && m.last <= at + sentence.length);
    const ownVerb = OWN_ENDINGS.has(sentence[cue]!.key) || sentence[cue]!.lower === 'gone';
    const subject = subjectOf(sentence, at, cue, mentions, self) ?? (owned && ownVerb && nobody() ? self : null);
    if (!subject) continue;
    const words = headsOf(sentence);
    if (owned && !words.includes(singularOf(thing.lower))) words.push(singularOf(thing.lower));
    out.push({ subject, words, objectKeys: objectKeysAfter(sentence, cue) });
  }
  return out;
}

/** Words that close the object of a verb of ending ("gave up golf and now ...", "lost in nature"). */
const OBJECT_BREAKS = new Set(['and', 'but', 'so', 'becaus', 'because', 'then', 'in', 'at', 'for', 'to', 'me', 'us']);

/** The keys of the heads among the few words after the word of ending, up to a mark or a word that closes its object. */
function objectKeysAfter(sentence: Token[], cue: number): string[] {
  const out: string[] = [];
  for (let k = cue + 1; k < sentence.length && k <= cue + 4; k++) {
    const t = sentence[k]!;
    if (t.punct || OBJECT_BREAKS.has(t.key) || OBJECT_BREAKS.has(t.lower)) break;
    if (isHead(sentence, k)) out.push(t.key);
  }
  return out;
}

/** The index of the sentence's word of ending, or -1 (also when it is negated: "I won't quit"). */
function endingAt(sentence: Token[]): number {
  for (let i = 0; i < sentence.length; i++) {
    const t = sentence[i]!;
    const negated = sentence.slice(Math.max(0, i - 3), i).some((s) => NEGATION.has(s.lower) || NEGATION.has(s.key));
    if (NEGATED_ENDINGS.has(t.key)) {
      if (negated) return i;
      continue;
    }
    if (WITH_PARTICLE.has(t.lower) && sentence[i + 1] && !PARTICLES.has(sentence[i + 1]!.lower)) continue;
    // "they gave me a medal", "she cut us a slice": a thing given or cut for someone ends nothing.
    if (TO_SOMEONE.has(t.key) && OBJECT_PRONOUNS.has(sentence[i + 1]?.lower ?? '')) continue;
    // "we ended up with sponsors" ends nothing; "quite" shares its stem with "quit".
    if ((t.key === 'end' && sentence[i + 1]?.lower === 'up') || t.lower === 'quite') continue;
    // "Nick" is a name; "gone" ends only as a state ("the piano's gone"), not a trip ("we've gone to Rome").
    if (t.key === 'nick' && t.capitalized) continue;
    if (t.lower === 'gone' && !negated && ["'s", 'is', 'are', "'re", 'was'].includes(sentence[i - 1]?.lower ?? '')) {
      const next = sentence[i + 1];
      if (!next || next.punct || ['now', 'for', 'too', 'forever', 'after', 'sinc'].includes(next.key)) return i;
    }
    // A WordNet verb of ending only where a verb stands ("we parted", "I've parted with it"; not "part of my life").
    const verb = (t.lower.endsWith('ed') || VERB_BEFORE.has(sentence[i - 1]?.lower ?? '')) && verbClassAt(sentence, i);
    if ((ENDING_KEYS.has(t.key) || ENDING_KEYS.has(t.lower) || (verb && ENDING_CLASSES.has(verb.kind))) && !negated)
      return i;
  }
  return -1;
}

/**
 * Whose ending it is: the nearest subject before the word of ending (a named person, "my sister", or I/we), else an
 * owner after it ("someone stole my bike"). A person named after a possessive noun is the owner's ("Maria's dog
 * Shadow died" is Maria's).
 */
export function subjectOf(
  sentence: Token[],
  at: number,
  cue: number,
  mentions: EntityMention[],
  self: EntityRef,
): EntityRef | null {
  const personEnding = new Map<number, EntityMention>();
  for (const m of mentions) if (m.type === 'person') personEnding.set(m.last - 1 - at, m);
  const who = (j: number): EntityRef | null => {
    const t = sentence[j]!;
    const person = personEnding.get(j);
    if (person) {
      const owner = sentence[person.first - at - 2];
      const ownerEnd = personEnding.get(person.first - at - 3);
      if (owner?.lower === "'s" && ownerEnd) return { name: ownerEnd.name, type: 'person' };
      if (owner && (owner.lower === 'my' || owner.lower === 'our')) return self;
      return { name: person.name, type: 'person' };
    }
    if ((sentence[j - 1]?.lower === 'my' || sentence[j - 1]?.lower === 'our') && isRole(t))
      return { name: `my ${t.lower}`, type: 'person' };
    if (SELF_WORDS.has(t.lower) && !isRole(sentence[j + 1])) return self;
    return null;
  };
  for (let j = cue - 1; j >= 0; j--) {
    // "... and they gave ...": the ending is of people unnamed, not of whoever was named before.
    if (OTHERS_UNNAMED.has(sentence[j]!.lower)) return null;
    const found = who(j);
    if (found) return found;
  }
  for (let j = cue + 1; j < sentence.length; j++) {
    const found = who(j);
    if (found) return found;
  }
  return null;
}

/** The heads of a sentence's noun phrases (a word followed by the end, a mark or a function word), as values are. */
export function headsOf(sentence: Token[]): string[] {
  const heads = sentence.filter((_, k) => isHead(sentence, k));
  return [...new Set(heads.map((s) => singularOf(s.lower)))];
}

/** Whether the word at `k` ends a noun phrase: followed by the end, a mark or a function word. */
function isHead(sentence: Token[], k: number): boolean {
  const s = sentence[k]!;
  const next = sentence[k + 1];
  return !s.punct && !STOP_WORDS.has(s.lower) && (!next || next.punct || PHRASE_FOLLOWERS.has(next.lower));
}

/** A word as a value's word is compared: lower case, in the singular. */
export function singularOf(word: string): string {
  const w = word.toLowerCase();
  return w.length > 3 && w.endsWith('s') && !/(ss|us|is)$/.test(w) ? w.slice(0, -1) : w;
}
