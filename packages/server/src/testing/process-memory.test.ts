import { expect, it } from 'vitest';
import { leaveBufferPool } from '../engine/index.js';
import { HeldApart } from './erasure.js';
import { processMemoryHolding } from './process-memory.js';

/**
 * The search of the process's memory (docs/api.md, What forgetting removes: what it found) sees a marker in bytes no
 * heap snapshot shows, in UTF-8 and UTF-16LE, and the test's masked marker is not itself a hit.
 */
it('finds a marker in native bytes, in UTF-8 and UTF-16LE, and no copy of the masked marker itself', () => {
  const marker = HeldApart.random('zqp');
  expect(processMemoryHolding(marker)).toEqual([]);

  // Written a byte at a time into memory of their own: no string of the marker is ever made.
  const utf8 = Buffer.allocUnsafeSlow(marker.length + 2);
  const utf16 = Buffer.alloc(2 * marker.length);
  utf8[0] = 0x5b;
  utf8[marker.length + 1] = 0x5d;
  for (let i = 0; i < marker.length; i++) {
    utf8[i + 1] = marker.byteAt(i);
    utf16[2 * i] = marker.byteAt(i);
  }
  const hits = processMemoryHolding(marker);
  expect(hits.map((hit) => hit.encoding).sort()).toEqual(['utf16le', 'utf8']);
  expect(hits.find((hit) => hit.encoding === 'utf8')?.around).toMatch(/\[<M>\]/);

  utf8.fill(0);
  utf16.fill(0);
  expect(processMemoryHolding(marker)).toEqual([]);
});

it('moves a thread on to a new Buffer pool after an erasure', () => {
  const pool = Buffer.allocUnsafe(1).buffer;
  leaveBufferPool();
  expect(Buffer.allocUnsafe(1).buffer).not.toBe(pool);
});
