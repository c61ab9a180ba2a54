import { expect } from 'vitest';

/**
 * Asserts that `run` takes time linear in its input, not a backtracking regular expression's or a quadratic loop's:
 * the input of 4n characters must take under 8x the time of n's (a quadratic one takes ~16x; the best of three of
 * each, and at least `floorMs` for n's, so that a busy machine's noise on tiny times does not count), and under an
 * absolute `limitMs`. The inputs were seconds before their fixes (docs/architecture.md, hostile input).
 */
export async function expectLinear(
  make: (n: number) => string,
  run: (text: string) => unknown,
  { n = 8_000, floorMs = 10, limitMs = 2_000 }: { n?: number; floorMs?: number; limitMs?: number } = {},
): Promise<void> {
  const best = async (text: string) => {
    let least = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await run(text);
      least = Math.min(least, performance.now() - started);
    }
    return least;
  };
  const small = await best(make(n));
  const large = await best(make(4 * n));
  expect(large, `4n: ${large.toFixed(1)} ms, n: ${small.toFixed(1)} ms`).toBeLessThan(8 * Math.max(small, floorMs));
  expect(large).toBeLessThan(limitMs);
}
