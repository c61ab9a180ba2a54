import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { MemoryIndex } from './memory-index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** What this thread holds: its heap and the array buffers, after collecting twice. */
function held(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Texts of 8-30 words drawn from 5,000 made-up words, the common ones far more often (like a language). */
function texts(count: number, seed: number): string[] {
  let s = seed;
  const rand = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const word = (n: number) => `w${n.toString(36)}x${'abcdefgh'[n % 8]}`;
  return Array.from({ length: count }, () =>
    Array.from({ length: 8 + Math.floor(rand() * 23) }, () => word(Math.floor(5000 * rand() ** 3))).join(' '),
  );
}

describe('what an index counts of itself (issue 46, defect 8)', () => {
  it('counts its bytes within a quarter of what the heap shows it holds', () => {
    const made = Array.from({ length: 8 }, (_, u) => texts(2000, u + 1));
    const before = held();
    const indexes = made.map((docs, u) => {
      const index = new MemoryIndex({ embedder: null });
      docs.forEach((text, i) =>
        index.upsert({
          id: u * 10_000 + i + 1,
          text,
          sessionId: `session-${u}-${Math.floor(i / 20)}`,
          createdAt: 1_700_000_000_000 + i,
          importance: 0.5,
          feedback: 0,
          speaker: i % 2 ? 'Caroline' : 'Melanie',
          tags: [],
        }),
      );
      // Some docs changed and some removed, as an end user's index lives.
      for (let i = 0; i < 200; i++) {
        const doc = { id: u * 10_000 + i + 1, text: docs[(i * 7) % docs.length]!, createdAt: 1_700_000_000_000 };
        index.upsert({ ...doc, sessionId: null, importance: 0.5, feedback: 0 });
      }
      for (let i = 200; i < 300; i++) index.remove(u * 10_000 + i + 1);
      return index;
    });
    const measured = held() - before;
    const counted = indexes.reduce((sum, index) => sum + index.approxBytes(), 0);
    expect(counted / measured).toBeGreaterThan(0.75);
    expect(counted / measured).toBeLessThan(1.33);
  });
});
