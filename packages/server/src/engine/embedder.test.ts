import { describe, expect, it } from 'vitest';
import { builtinEmbedder, dot } from './embedder.js';

describe('builtin embedder', () => {
  const e = builtinEmbedder();
  it('is deterministic, unit length and fixed size', async () => {
    const a = e.embedSync('Caroline went to the support group');
    const b = (await e.embed(['Caroline went to the support group']))[0]!;
    expect(a).toHaveLength(e.dimensions);
    expect(Array.from(a)).toEqual(Array.from(b));
    expect(dot(a, a)).toBeCloseTo(1, 5);
    expect(e.id).toMatch(/^builtin-v1/);
  });
  it('puts related wording closer than unrelated wording', () => {
    const q = e.embedSync('painting a sunset');
    expect(dot(q, e.embedSync('she painted the sunsets'))).toBeGreaterThan(
      dot(q, e.embedSync('football match tickets')),
    );
    // Typos share character n-grams though no word matches.
    expect(dot(q, e.embedSync('paintng a sunsett'))).toBeGreaterThan(
      dot(q, e.embedSync('football match tickets')) + 0.2,
    );
  });
  it('handles empty and non-Latin text', () => {
    expect(Array.from(e.embedSync('')).every((x) => x === 0)).toBe(true);
    expect(dot(e.embedSync('東京タワー'), e.embedSync('東京タワーに行った'))).toBeGreaterThan(0.3);
  });
});
