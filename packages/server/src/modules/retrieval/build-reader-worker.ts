import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { threadError } from '../../core/worker-threads.js';
import { TermNumbering } from '../../engine/index.js';
import { openDatabase } from '../../store/database.js';
import { liveOwnerPage } from '../memories/index.js';
import type { BuildReaderData, BuildReaderMessage } from './build-reader.js';
import { preparedPage, withoutRows } from './build-rows.js';

/**
 * The build reader (build-reader.ts): an owner's live rows by id, a page at a time on a connection of its own,
 * sent at most `ahead` pages before the builder has taken them; each one it claims first (the builder reads those it
 * finds unclaimed when it would wait: the first ones, while this thread starts). A page read while the builder waits
 * (it has taken every page sent) goes as it is, for the builder to prepare, and the next is read meanwhile; any other
 * is prepared here (build-rows.ts). So the two threads share the work as their speeds (and the machine's load) allow.
 * A prepared page goes without its texts and times as text unless the builder reads its rows back (rowsRead).
 */
const { database: config, owner, ids, size, claimed, ahead, rowsRead } = workerData as BuildReaderData;
const port = parentPort!;
// Checkpoints stay with the serving connection's own thread (store/sqlite-connection.ts).
const database = openDatabase(config, { checkpoints: false });
let credit = ahead;
// The build's numbers of the terms of the pages prepared here (preparedPage).
const numbering = new TermNumbering();
let wake: (() => void) | undefined;
const onTaken = () => {
  credit++;
  wake?.();
};
port.on('message', onTaken);
const send = (message: BuildReaderMessage) => port.postMessage(message);

/** Takes the builder's messages that arrived while this thread ran (the event loop delivers them only when idle). */
const takeArrived = () => {
  while (receiveMessageOnPort(port)) credit++;
};

try {
  for (;;) {
    takeArrived();
    while (credit === 0) await new Promise<void>((resolve) => (wake = resolve));
    const number = Atomics.add(claimed, 0, 1);
    if (number * size >= ids.length) break;
    credit--;
    const rows = await liveOwnerPage(
      database.db,
      database.dialect,
      owner,
      Array.from(ids.subarray(number * size, (number + 1) * size)),
    );
    takeArrived();
    // Every page sent before was taken: the builder waits for this one.
    const builderWaits = credit === ahead - 1;
    const page = preparedPage(rows, builderWaits ? undefined : numbering);
    send({ page: page.prepared && !rowsRead ? withoutRows(page) : page, number });
  }
  send({ done: true });
} catch (error) {
  send({ error: threadError(error) });
} finally {
  port.off('message', onTaken);
  await database.close();
}
