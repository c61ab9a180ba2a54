import { describe, expect, it } from 'vitest';
import { ContextCache, MAX_PAIRS } from './bm25-context.js';

/** A spread as scoreWithContext leaves it: own and neighbours' tf by slot, and the slots in first-touch order. */
function spread(entries: [slot: number, own: number, ctx: number][]) {
  const size = Math.max(...entries.map(([slot]) => slot)) + 1;
  const tfSelf = new Float64Array(size);
  const tfCtx = new Float64Array(size);
  const touched = new Int32Array(entries.length + 1);
  entries.forEach(([slot, own, ctx], j) => {
    touched[j] = slot;
    tfSelf[slot] = own;
    tfCtx[slot] = ctx;
  });
  return { tfSelf, tfCtx, touched, n: entries.length };
}

describe('ContextCache', () => {
  it("keeps each entry own tf and the same total double the spread summed, by their pair's number among few", () => {
    // Totals summed in different orders can differ in the last bit: each is kept as it is.
    const ctxA = 0.7 + 0.35 + 0.175;
    const ctxB = 0.175 + 0.35 + 0.7;
    const entries: [number, number, number][] = [
      [5, 1, 0],
      [4, 0, 0.35],
      [6, 0, 0.7],
      [3, 0, ctxA],
      [7, 2, ctxB],
      [9, 0, 0.7],
      [8, 1, 0.35],
      [10, 0, 1],
    ];
    const { tfSelf, tfCtx, touched, n } = spread(entries);
    const cache = new ContextCache();
    const kept = cache.keep('term', n, touched, tfSelf, tfCtx, 1e9)!;
    expect(kept).not.toBeNull();
    expect([...kept.slots]).toEqual(entries.map(([slot]) => slot));
    entries.forEach(([, own, ctx], j) => {
      const p = kept.pairNo[j]! * 2;
      expect(kept.pairs[p]).toBe(own);
      expect(Object.is(kept.pairs[p + 1], own + ctx)).toBe(true);
    });
    // One pair per distinct (own, total): slots 5 and 10 have one total and two pairs; slots 6 and 9 one pair.
    expect(kept.pairs.length / 2).toBe(new Set(entries.map(([, own, ctx]) => `${own} ${own + ctx}`)).size);
    // The buffers are left zero for the next term.
    expect(tfSelf.every((v) => v === 0) && tfCtx.every((v) => v === 0)).toBe(true);
    expect(cache.bytes).toBeGreaterThan(0);
    cache.drop('term');
    expect(cache.bytes).toBe(0);
  });

  it('keeps nothing, and leaves the spread where it lies, for a term with more distinct pairs than a number holds', () => {
    const entries = Array.from({ length: MAX_PAIRS + 1 }, (_, j): [number, number, number] => [j, 0, 1 + j / 1024]);
    const { tfSelf, tfCtx, touched, n } = spread(entries);
    const cache = new ContextCache();
    expect(cache.keep('term', n, touched, tfSelf, tfCtx, 1e12)).toBeNull();
    expect(cache.bytes).toBe(0);
    // saturateInPlace reads the spread from the buffers next.
    expect(tfCtx[MAX_PAIRS]).toBe(1 + MAX_PAIRS / 1024);
    expect(tfCtx[0]).toBe(1);
  });

  it('keeps nothing when the entries and their totals do not fit the budget', () => {
    const { tfSelf, tfCtx, touched, n } = spread([
      [0, 1, 0],
      [1, 0, 0.7],
    ]);
    const cache = new ContextCache();
    expect(cache.keep('term', n, touched, tfSelf, tfCtx, 10)).toBeNull();
    expect([tfSelf[0], tfCtx[1]]).toEqual([1, 0.7]);
  });
});
