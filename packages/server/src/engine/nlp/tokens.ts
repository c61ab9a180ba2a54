// Tokens with their surface form, position and a lemma-ish key for matching cue phrases.
import { stem } from '../text.js';
import { lookupTable } from '../../core/lookup.js';

export interface Token {
  /** As written, possessive and clitics split off ("Caroline's" -> "Caroline", "'s"). */
  text: string;
  lower: string;
  /** Lower case, a few irregular verbs mapped to their base form, then Porter2: what cues compare. */
  key: string;
  start: number;
  end: number;
  /** Starts with an upper-case letter or is an all-caps acronym. */
  capitalized: boolean;
  /** First word of its sentence (capitalisation says little there). */
  sentenceStart: boolean;
  punct: boolean;
}

const IRREGULAR: Record<string, string> = lookupTable({
  am: 'be',
  is: 'be',
  are: 'be',
  was: 'be',
  were: 'be',
  been: 'be',
  being: 'be',
  "'m": 'be',
  "'re": 'be',
  m: 'be',
  has: 'have',
  had: 'have',
  having: 'have',
  "'ve": 'have',
  ve: 'have',
  does: 'do',
  went: 'go',
  goes: 'go',
  gone: 'go',
  got: 'get',
  gotten: 'get',
  flew: 'fly',
  flown: 'fly',
  grew: 'grow',
  grown: 'grow',
  met: 'meet',
  knew: 'know',
  known: 'know',
  bought: 'buy',
  thought: 'think',
  wed: 'wed',
  "n't": 'not',
  "can't": 'not',
  wo: 'will',
  ca: 'can',
  "'ll": 'will',
  "'d": 'would',
  favourite: 'favorit',
  favourites: 'favorit',
  travelled: 'travel',
  traveled: 'travel',
  travelling: 'travel',
  traveling: 'travel',
});

export function keyOf(word: string): string {
  const lower = word.toLowerCase().replace(/’/g, "'");
  return IRREGULAR[lower] ?? stem(lower);
}

// Words, numbers (with decimals, ordinals, slashes), clitics, and single punctuation marks.
const TOKEN_RE =
  /n['’]t\b|\$?\d+(?:[.,:/-]\d+)*(?:st|nd|rd|th|s|k|%)?|[\p{L}][\p{L}\p{M}\d-]*|['’](?:s|m|re|ve|ll|d)\b|[.,;:!?()"“”$%&]/giu;

/** Splits text into tokens, separating English clitics ("don't" -> "do" "n't", "I'm" -> "I" "'m"). */
export function tokenizeWithOffsets(text: string): Token[] {
  const out: Token[] = [];
  let sentenceStart = true;
  const source = text
    .replace(/(\p{L})n['’]t\b/giu, "$1\u0000n't")
    .replace(/(\p{L})(['’](?:s|m|re|ve|ll|d)\b)/giu, '$1\u0000$2');
  // The NUL markers keep offsets aligned with the original text only when removed; track them.
  let removed = 0;
  const matches = source.matchAll(new RegExp(`\u0000|${TOKEN_RE.source}`, 'giu'));
  for (const m of matches) {
    if (m[0] === '\u0000') {
      removed++;
      continue;
    }
    const raw = m[0].replace(/’/g, "'");
    const start = m.index! - removed;
    const punct = /^[.,;:!?()"“”&]$/.test(raw);
    const lower = raw.toLowerCase();
    out.push({
      text: raw,
      lower,
      key: punct ? raw : keyOf(raw),
      start,
      end: start + raw.length,
      capitalized: !punct && (/^\p{Lu}/u.test(raw) || /^[a-z]+\p{Lu}/u.test(raw)),
      sentenceStart,
      punct,
    });
    sentenceStart = punct ? /[.!?]/.test(raw) || (sentenceStart && raw === '"') : false;
  }
  return out;
}
