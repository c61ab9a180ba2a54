import { type CpuInfo, cpus, loadavg } from 'node:os';
import type { Config } from '../../config.js';
import { moduleWorker, rethrown, siblingModule, type ThreadError } from '../../core/worker-threads.js';
import { TermNumbering } from '../../engine/index.js';
import { opensAgain, type Database } from '../../store/database.js';
import { liveOwnerIds, liveOwnerPage, type Owner } from '../memories/index.js';
import { prepareInto, preparedPage, type PreparedPage } from './build-rows.js';

/**
 * A page of a build from scratch: live rows in id order, prepared (prepareRow), their terms numbered by the build
 * reader (`byReader`) or by the building thread (each numbers the terms of the pages it prepared).
 */
export interface BuildPage {
  page: PreparedPage;
  byReader: boolean;
}

/** What the build reader is started with (build-reader-worker.ts). */
export interface BuildReaderData {
  database: Config['database'];
  owner: Owner;
  ids: Float64Array;
  size: number;
  /** The number of pages claimed so far by either thread (Atomics): each page is read by the one that claims it. */
  claimed: Int32Array;
  /** Pages it may read before the first is taken; one more each time one is. */
  ahead: number;
  /** Whether the builder reads rows back (rowAt); without, a page prepared there goes without them (withoutRows). */
  rowsRead: boolean;
}

export type BuildReaderMessage = { page: PreparedPage; number: number } | { done: true } | { error: ThreadError };

/** Pages the reader keeps ready: the one the builder takes next, and the one being read meanwhile. */
const READ_AHEAD = 2;

const readerUrl = siblingModule('build-reader-worker', import.meta.url);

/**
 * How many of the machine's cores were idle between two readings of os.cpus() (the share of their time idle, times
 * their number); from the load average when no time passed between them (its ticks are of 10 ms).
 */
export function idleCores(before: readonly CpuInfo[], after: readonly CpuInfo[]): number {
  let [idle, total] = [0, 0];
  for (let i = 0; i < after.length && i < before.length; i++) {
    const [a, b] = [after[i]!.times, before[i]!.times];
    idle += a.idle - b.idle;
    total += a.user + a.nice + a.sys + a.idle + a.irq - (b.user + b.nice + b.sys + b.idle + b.irq);
  }
  return total > 0 ? (idle / total) * after.length : Math.max(0, after.length - loadavg()[0]!);
}

/**
 * The owner's live rows for a build from scratch, a page of `size` at a time, each to be indexed and dropped before
 * the next is taken (300,000 rows read at once lived through the whole build): their ids first (liveOwnerIds),
 * then each page's rows by id (liveOwnerPage). `count`: how many at most (forgotten ones are among the ids).
 * With at least `reader.minRows` of them, on a database another thread can open, while at least `reader.idleCores`
 * of the machine's cores were idle (during the read of the ids), the pages are read and prepared (prepareRow) by a
 * thread of its own on its own connection, a page ahead of the indexing: the reads and the texts' scans of page
 * n + 1 take an idle core while page n is indexed, where they took turns on one thread. With no idle core the
 * reader's own cost (its start, the pages' copies) made the build slower (bench/README.md, session 12).
 * `rowsRead`: whether the builder reads the pages' rows back (rowAt), else it has only their prepared columns.
 */
export async function ownerBuildPages(
  database: Database,
  owner: Owner,
  size: number,
  reader: { minRows: number; idleCores: number },
  rowsRead = true,
): Promise<{ count: number; pages: AsyncGenerator<BuildPage>; onReader: boolean }> {
  const before = cpus();
  const ids = await liveOwnerIds(database.db, owner);
  const onReader =
    ids.length >= reader.minRows &&
    opensAgain(database.config) &&
    (reader.idleCores <= 0 || idleCores(before, cpus()) >= reader.idleCores);
  const pages = onReader ? readerPages(database, owner, ids, size, rowsRead) : localPages(database, owner, ids, size);
  return { count: ids.length, pages, onReader };
}

/**
 * The pages read and prepared on the building thread. On PostgreSQL the next two pages are asked for before this one
 * is handed over, so the server reads them while this thread prepares and indexes (one ahead left this thread ~1 s
 * of a 300,000-row build idle, waiting for pages; a SQLite read runs on this thread).
 */
async function* localPages(
  database: Database,
  owner: Owner,
  ids: Float64Array,
  size: number,
): AsyncGenerator<BuildPage> {
  const numbering = new TermNumbering();
  const read = (at: number) =>
    liveOwnerPage(database.db, database.dialect, owner, Array.from(ids.subarray(at, at + size)));
  const ahead = database.config.dialect === 'postgres' ? PAGES_ASKED_AHEAD : 0;
  const pending: Array<Promise<unknown[][]>> = [];
  try {
    for (let at = 0, asked = 0; at < ids.length; at += size) {
      // Asked for in order: pending[0] is the page at `at`.
      while (asked < ids.length && (asked === at || pending.length < ahead)) {
        pending.push(read(asked));
        asked += size;
      }
      const rows = await pending.shift()!;
      yield { page: preparedPage(rows, numbering), byReader: false };
    }
  } finally {
    // Pages asked for ahead of a build that stopped: their failures are nobody's.
    for (const page of pending) page.catch(() => {});
  }
}

/** Pages of a build on PostgreSQL asked for ahead of the one being prepared (each on a connection of the pool). */
const PAGES_ASKED_AHEAD = 2;

/**
 * The pages as the build reader sends them; it ends when they are all taken, or when the taker stops (or fails).
 * A page the reader has not claimed when the builder would wait for it is read and prepared here: the reader's
 * thread takes a few hundred ms to start (its modules, its connection), which the first pages' indexing takes.
 */
async function* readerPages(
  database: Database,
  owner: Owner,
  ids: Float64Array,
  size: number,
  rowsRead: boolean,
): AsyncGenerator<BuildPage> {
  const { config } = database;
  const pageCount = Math.ceil(ids.length / size);
  const claimed = new Int32Array(new SharedArrayBuffer(4));
  const worker = moduleWorker(readerUrl, {
    workerData: {
      // One connection is all it uses.
      database: config.dialect === 'postgres' ? { ...config, poolSize: 1 } : config,
      owner,
      ids,
      size,
      claimed,
      ahead: READ_AHEAD,
      rowsRead,
    } satisfies BuildReaderData,
  });
  worker.unref();
  const arrived: Array<BuildReaderMessage | { failed: Error }> = [];
  let wake: (() => void) | undefined;
  const take = (message: BuildReaderMessage | { failed: Error }) => {
    arrived.push(message);
    wake?.();
  };
  worker.on('message', take);
  worker.on('error', (error) => take({ failed: error }));
  worker.on('exit', (code) => take({ failed: new Error(`the build reader exited (code ${code})`) }));
  // The terms of the pages prepared here, numbered.
  const numbering = new TermNumbering();
  try {
    for (let next = 0; next < pageCount; next++) {
      if (arrived.length === 0 && Atomics.compareExchange(claimed, 0, next, next + 1) === next) {
        const rows = await liveOwnerPage(
          database.db,
          database.dialect,
          owner,
          Array.from(ids.subarray(next * size, (next + 1) * size)),
        );
        yield { page: preparedPage(rows, numbering), byReader: false };
        continue;
      }
      // Held only while the builder waits for it: a build left unfinished (its process closing) holds nothing.
      worker.ref();
      while (arrived.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      worker.unref();
      const message = arrived.shift()!;
      if ('error' in message) throw rethrown(message.error, 'the build reader');
      if ('failed' in message) throw message.failed;
      if ('done' in message || message.number !== next) throw new Error(`the build reader did not send page ${next}`);
      worker.postMessage('next');
      const { page } = message;
      if (page.prepared) yield { page, byReader: true };
      else {
        prepareInto(page, numbering);
        yield { page, byReader: false };
      }
    }
  } finally {
    void worker.terminate();
  }
}
