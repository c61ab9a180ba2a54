// Ages said by a birthday's ordinal or a verb of reaching ("Grandpa's 90th", "Happy 51st to me", "Nate celebrated his
// 25th", "Dad just hit 61", "Turning 47 next week", "Being 42 doesn't feel any different") (issue 53, session 14).
// A relative's age is kept as the extractor keeps it: the writer's, with the relative as aspect ("my dad" -> "dad").
import type { EntityMention } from './entities.js';
import { statementsOf } from './fact-endings.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import { numberOf, ordinalOf } from './fact-phrases.js';
import { whose } from './fact-world.js';
import type { Token } from './tokens.js';
import { nounIs } from './word-kinds.js';

/** Verbs (lower case) of reaching an age. */
const REACHED = new Set(['turned', 'turning', 'turns', 'hit', 'hits', 'reached', 'being', 'officially']);
/** Words that may follow an age reached; any other word makes the figure something else ("hit 40 degrees"). */
const AFTER_AGE = new Set([
  'today',
  'yesterday',
  'this',
  'last',
  'next',
  'and',
  'on',
  'in',
  'now',
  'already',
  'as',
  'years',
  'doesn',
  'does',
  'feels',
  'is',
  'lol',
  'so',
  'but',
]);
/** Words after a birthday's ordinal that end its phrase ("her 90th", "his 25th with a party", "90th birthday"). */
const AFTER_ORDINAL = new Set([
  'birthday',
  'bday',
  'with',
  'at',
  'on',
  'was',
  'to',
  'party',
  'yesterday',
  'last',
  'is',
]);

const ADVERBS = new Set(['just', 'finally', 'officially', 'now', 'already', 'been']);
/** How ordinals end ("90th", "twenty-first", "second", "third"): only such words are read as one. */
const ORDINAL_ENDS = new Set(['th', 'st', 'nd', 'rd']);
const age = (n: number) => ({ name: String(n), type: 'quantity' });

/** The age's owner as the extractor states it: a relative ("my dad", "grandpa") as the writer's with an aspect. */
function emitAge(subject: EntityRef, n: number, self: EntityRef, emit: Emit): void {
  if (n < 1 || n > 120) return;
  const kin = /^(?:my |our )?(\w+)$/.exec(subject.name.toLowerCase());
  if (subject !== self && kin && nounIs(kin[1]!, 'relative')) emit(self, FACT_RELATIONS.age, age(n), false, kin[1]!);
  else emit(subject, FACT_RELATIONS.age, age(n), false);
}

/** Auxiliaries between a subject and its verb of reaching ("my son is turning 6", "she's just turned 30"). */
const AUXILIARIES = new Set(['is', "'s", 'are', "'re", 'was', 'were', 'has', 'have', "'ve", 'had', 'will', "'ll"]);
const POSSESSIVES = new Set(['my', 'our', 'his', 'her', 'their', 'your']);
/** Whether the verb at `k` follows a possessed noun phrase that is no relative ("my dog", "our little one"). */
function someonesBefore(sentence: Token[], k: number): boolean {
  let j = k - 1;
  while (j >= 0 && (ADVERBS.has(sentence[j]!.lower) || AUXILIARIES.has(sentence[j]!.lower))) j--;
  const head = sentence[j];
  if (!head || head.punct || nounIs(head.lower, 'relative')) return false;
  for (let p = j - 1; p >= Math.max(0, j - 3); p--) {
    if (POSSESSIVES.has(sentence[p]!.lower)) return true;
    if (sentence[p]!.punct || sentence[p]!.lower === 'and') return false;
  }
  return false;
}

export function agesReached(tokens: Token[], mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  for (const { sentence, at } of statementsOf(tokens)) {
    // "... for my 18th birthday ten years ago": an age of then.
    if (sentence.some((t) => t.key === 'ago')) continue;
    for (let k = 0; k < sentence.length; k++) {
      const t = sentence[k]!;
      const next = sentence[k + 1];
      const ordinal = ORDINAL_ENDS.has(t.lower.slice(-2)) ? ordinalOf(t) : undefined;
      if (ordinal && (!next || next.punct || AFTER_ORDINAL.has(next.lower))) {
        const owner = sentence[k - 1]?.lower;
        if (owner === "'s" && sentence[k - 2]) {
          const name = sentence[k - 2]!;
          const person = mentions.find((m) => m.type === 'person' && m.last - at - 1 === k - 2);
          const subject = person
            ? { name: person.name, type: 'person' }
            : nounIs(name.lower, 'relative')
              ? { name: name.lower, type: 'person' }
              : null;
          if (subject) emitAge(subject, ordinal, self, emit);
        } else if (owner === 'happy' && sentence.slice(k + 1, k + 3).some((s) => s.lower === 'me')) {
          emitAge(self, ordinal, self, emit);
        } else if (owner === 'his' || owner === 'her' || owner === 'my') {
          const subject = owner === 'my' ? self : whose(sentence, at, k - 1, mentions, self);
          if (subject && subject !== self) emitAge(subject, ordinal, self, emit);
          else if (owner === 'my') emitAge(self, ordinal, self, emit);
        }
        continue;
      }
      if (!REACHED.has(t.lower)) continue;
      const n = numberOf(next);
      const after = sentence[k + 2];
      if (n === null || !(!after || after.punct || AFTER_AGE.has(after.lower))) continue;
      // "Being 42", "Officially 30" open their sentence; "turned 30" may follow its subject.
      if ((t.lower === 'being' || t.lower === 'officially') && k > 1) continue;
      // "My son's best friend turned five": someone of the subject's, not the subject, reached the age.
      const possessed = sentence
        .slice(0, k)
        .some((s, j) => s.lower === "'s" && j + 1 < k && !ADVERBS.has(sentence[j + 1]!.lower));
      if (possessed) continue;
      // "my dog turned 9", "my little one just turned 2": a thing or one of the writer's the rules name no kin of.
      if (someonesBefore(sentence, k)) continue;
      const subject = whose(sentence, at, k, mentions, self);
      if (subject) emitAge(subject, n, self, emit);
    }
  }
}
