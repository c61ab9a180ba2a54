import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../../store/database.js';
import { createInProcessRetrieval } from './engine.js';
import { threadError } from '../../core/worker-threads.js';
import type { ThreadAnswer, ThreadCall, ThreadData } from './thread.js';

/**
 * The search thread (thread.ts): the retrieval engine with its own database connection, answering
 * the HTTP thread's calls one message each, concurrently, as it would in process.
 */
const { database: databaseConfig, retrieval: retrievalConfig } = workerData as ThreadData;
// Checkpoints stay with the serving connection's own thread (store/sqlite-connection.ts).
const database = openDatabase(databaseConfig, { checkpoints: false });
const { retrieval, cache } = createInProcessRetrieval(database, retrievalConfig);
const port = parentPort!;

async function answer({ method, args }: ThreadCall): Promise<unknown> {
  switch (method) {
    case 'rankHeld':
      return retrieval.rankHeld(...(args as Parameters<typeof retrieval.rankHeld>));
    case 'queryAfresh':
      return retrieval.queryAfresh(...(args as Parameters<typeof retrieval.queryAfresh>));
    case 'matching':
      return retrieval.matching(...(args as Parameters<typeof retrieval.matching>));
    case 'retrieve':
      return retrieval.retrieve(...(args as Parameters<typeof retrieval.retrieve>));
    case 'search':
      return retrieval.search(...(args as Parameters<typeof retrieval.search>));
    case 'compose':
      return retrieval.compose(...(args as Parameters<typeof retrieval.compose>));
    case 'refreshLargeOwners':
      return cache.refreshLargeOwners();
    case 'invalidateProject':
      return cache.invalidateProject(args[0] as string);
    case 'forgotten':
      return cache.forgotten(...(args as Parameters<typeof cache.forgotten>));
    case 'stats':
      return cache.stats();
    case 'close':
      cache.close();
      return database.close();
  }
}

/**
 * Staying awake for the next call (ENGRAM_SEARCH_THREAD_SPIN_US). A thread that slept takes a
 * wake-up to see its next call (~0.07 ms in a virtual machine) and then runs on a core whose caches
 * went cold: a third of a small query's time at one client (bench/README.md, "The search thread
 * stays awake between close calls"). So once every call is answered, the thread polls its port for
 * up to this long before it sleeps, but only while calls come that close together: one that arrives
 * after a sleep longer than the spin turns spinning off until they do again, and a quiet server
 * never spins. A call taken while awake is answered at once, not on a later turn of the event loop
 * (a turn is a poll for I/O, ~0.08 ms here), but the loop still takes a turn at least every
 * TURN_EVERY_MS, so that its timers and I/O (snapshots taken in slices, builds) go on however close
 * the calls come.
 */
const spinMs = retrievalConfig.searchThreadSpinMicros / 1000;
const TURN_EVERY_MS = 10;
let underWay = 0;
let answeredAt = -Infinity;
let spinning = false;
/** When the event loop last delivered a call (or took a turn before one taken awake). */
let turnedAt = 0;

/** `awake`: taken from the port while spinning, not delivered after a sleep. */
function onCall(call: ThreadCall, awake = false): void {
  if (!awake) {
    turnedAt = performance.now();
    spinning = spinMs > 0 && turnedAt - answeredAt <= spinMs;
  }
  underWay++;
  answer(call).then(
    (result) => reply(call, { id: call.id, result }),
    (error: unknown) => reply(call, { id: call.id, error: threadError(error) }),
  );
}

function reply(call: ThreadCall, answer: ThreadAnswer): void {
  underWay--;
  port.postMessage(answer);
  if (call.method === 'close') {
    // Closed: the thread ends once the answer has gone and nothing else holds it.
    port.off('message', onMessage);
    port.unref();
    return;
  }
  answeredAt = performance.now();
  if (underWay === 0 && spinning) awaitNextCall();
}

function awaitNextCall(): void {
  const until = answeredAt + spinMs;
  do {
    const next = receiveMessageOnPort(port);
    if (next) {
      const call = next.message as ThreadCall;
      if (performance.now() - turnedAt < TURN_EVERY_MS) return onCall(call, true);
      return void setImmediate(() => {
        turnedAt = performance.now();
        onCall(call, true);
      });
    }
  } while (performance.now() < until);
  spinning = false;
}

const onMessage = (call: ThreadCall): void => onCall(call);
port.on('message', onMessage);
