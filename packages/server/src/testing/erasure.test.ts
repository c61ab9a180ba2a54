import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { afterAll, expect, it } from 'vitest';
import { HeldApart, heapsHolding } from './erasure.js';

/**
 * The heap search the erasure tests rely on sees a marker deep in a long text, in either thread: a snapshot cuts
 * strings at 1,024 characters unless told otherwise, and a memory's text may be longer than that.
 */
const marker = new HeldApart(`zqd${randomBytes(6).toString('hex')}`);
// The marker's bytes travel to the worker; each thread makes its long string there, so no short copy exists.
const worker = new Worker(
  `const { parentPort, workerData } = require('node:worker_threads');
   globalThis.held = Buffer.concat([Buffer.alloc(3000, 'w'), Buffer.from(workerData)]).toString();
   parentPort.on('message', () => {}); // kept running until terminated
   parentPort.postMessage('ready');`,
  { eval: true, workerData: Buffer.from(`${marker}`) },
);
afterAll(() => worker.terminate());

it('finds a marker 3,000 characters into a string, in the main thread and in a worker', async () => {
  await new Promise((resolve) => worker.once('message', resolve));
  const thread = { heapSnapshot: () => worker.getHeapSnapshot() };
  expect(await heapsHolding(thread, marker)).toEqual(["the search thread's heap"]);

  const held = { text: Buffer.concat([Buffer.alloc(3000, 'm'), Buffer.from(`${marker}`)]).toString() };
  expect(await heapsHolding(thread, marker)).toEqual(["the main thread's heap", "the search thread's heap"]);
  held.text = '';
});
