// Sentences about a time before now (issue 53, session 14): "I was 18 when I moved out", "As a kid I lived in
// Michigan", "I wasn't religious as a teenager", "If I had a car I'd drive to the coast". What such a sentence
// states held then (or would hold), not now; the extractor keeps its facts out of the text's facts of now.

/** A clause or phrase that puts its sentence in the past or in a wish. */
const FRAMES = [
  /\bwhen (?:i|he|she|we|they) (?:was|were)\b/i,
  /\bas (?:a|an) (?:kid|child|teen|teenager|student|boy|girl|youngster|baby|toddler)\b/i,
  /\b(?:growing up|back then|back in the day|in those days)\b/i,
  /\bin (?:grad|high|middle|primary|elementary) school\b/i,
  /\buntil (?:\d{4}|last year|recently)\b/i,
  /\b(?:i|he|she|we|they) (?:was|were) (?:\d+|an? (?:\w+ )?(?:kid|teen|teenager|student))\b/i,
  /\bif (?:i|we|he|she|they) (?:had|were|was|could)\b/i,
];
/** A state denied in such a sentence ("I wasn't vegan until 2019") was denied then; an act of ending still ends. */
const STATE_DENIED = /\b(?:wasn't|weren't|was not|were not|wasnt|werent)\b/i;

export interface PastFrame {
  /** The sentences of the past or of a wish, joined. */
  past: string;
  /** The text's other sentences. */
  rest: string;
  /** Whether a denial in them is of a state ("wasn't"), which then holds only for the past too. */
  stateDenied: boolean;
  /** Whether they say something began then ("I started painting when I was 17"): a habit begun may still hold. */
  begun: boolean;
}

/** The text's sentences of the past, or null when it has none. */
export function pastFrame(text: string): PastFrame | null {
  if (!FRAMES.some((f) => f.test(text))) return null;
  const sentences = text.match(/[^.!?;]+[.!?;]*/g) ?? [text];
  const past = sentences.filter((s) => FRAMES.some((f) => f.test(s)));
  return {
    past: past.join(' '),
    rest: sentences.filter((s) => !past.includes(s)).join(' '),
    stateDenied: past.some((s) => STATE_DENIED.test(s)),
    begun: past.some((s) => /\b(?:started|began|took up|picked up)\b/i.test(s)),
  };
}
