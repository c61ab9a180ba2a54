// A typo's nearest held word (Bm25Field.nearestTerm, RankingWeights.typo).

/**
 * The held term one edit from `term` (a letter dropped, added or replaced, or two neighbours
 * swapped) that the most docs hold (`df`), the first in code-unit order among equals; failing that,
 * the longest held term of at least 5 characters that begins `term` and is at most 3 shorter (a typo
 * in a suffix keeps the stemmer from removing it: "vacaton" stays whole, "vacation" is "vacat");
 * undefined when none. Letters are tried from a-z and the term's own, so a term of any script
 * gets its own edits.
 */
export function nearestHeldTerm(term: string, df: (term: string) => number): string | undefined {
  const edited = nearestEdit(term, df);
  if (edited !== undefined) return edited;
  for (let n = term.length - 1; n >= Math.max(5, term.length - 3); n--)
    if (df(term.slice(0, n)) > 0) return term.slice(0, n);
  return undefined;
}

function nearestEdit(term: string, df: (term: string) => number): string | undefined {
  let best: string | undefined;
  let bestDf = 0;
  const consider = (candidate: string) => {
    const n = df(candidate);
    if (n > bestDf || (n === bestDf && n > 0 && candidate < best!)) [best, bestDf] = [candidate, n];
  };
  const letters = new Set([...'abcdefghijklmnopqrstuvwxyz', ...term]);
  const chars = [...term];
  for (let i = 0; i <= chars.length; i++) {
    const head = chars.slice(0, i).join('');
    const tail = chars.slice(i).join('');
    const rest = chars.slice(i + 1).join('');
    for (const c of letters) consider(head + c + tail);
    if (i === chars.length) break;
    consider(head + rest);
    for (const c of letters) if (c !== chars[i]) consider(head + c + rest);
    if (i + 1 < chars.length && chars[i] !== chars[i + 1])
      consider(head + chars[i + 1] + chars[i] + chars.slice(i + 2).join(''));
  }
  return best;
}
