import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../../store/database.js';
import { createInProcessRetrieval } from './engine.js';
import { threadError, type ThreadCall, type ThreadData } from './thread.js';

/**
 * The search thread (thread.ts): the retrieval engine with its own database connection, answering
 * the HTTP thread's calls one message each, concurrently, as it would in process.
 */
const { database: databaseConfig, retrieval: retrievalConfig } = workerData as ThreadData;
// Checkpoints stay with the serving connection's own thread (store/database.ts).
const database = openDatabase(databaseConfig, { checkpoints: false });
const { retrieval, cache } = createInProcessRetrieval(database, retrievalConfig);
const port = parentPort!;

async function answer({ method, args }: ThreadCall): Promise<unknown> {
  switch (method) {
    case 'rankHeld': return retrieval.rankHeld(...(args as Parameters<typeof retrieval.rankHeld>));
    case 'queryAfresh': return retrieval.queryAfresh(...(args as Parameters<typeof retrieval.queryAfresh>));
    case 'matching': return retrieval.matching(...(args as Parameters<typeof retrieval.matching>));
    case 'retrieve': return retrieval.retrieve(...(args as Parameters<typeof retrieval.retrieve>));
    case 'search': return retrieval.search(...(args as Parameters<typeof retrieval.search>));
    case 'compose': return retrieval.compose(...(args as Parameters<typeof retrieval.compose>));
    case 'refreshLargeOwners': return cache.refreshLargeOwners();
    case 'invalidateProject': return cache.invalidateProject(args[0] as string);
    case 'stats': return cache.stats();
    case 'close': return database.close();
  }
}

function onCall(call: ThreadCall): void {
  answer(call).then(
    (result) => {
      port.postMessage({ id: call.id, result });
      // Closed: the thread ends once the answer has gone and nothing else holds it.
      if (call.method === 'close') {
        port.off('message', onCall);
        port.unref();
      }
    },
    (error: unknown) => port.postMessage({ id: call.id, error: threadError(error) }),
  );
}
port.on('message', onCall);
