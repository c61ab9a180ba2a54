import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../config.js';
import { AppError } from '../../core/errors.js';
import { rethrown, siblingModule, type ThreadError } from '../../core/worker-threads.js';
import type { ReadDocument } from './document.js';
import { tooLarge, type DocumentLimits } from './parsers/limits.js';
import type { FileType } from './parsers/parser.js';

/**
 * Untrusted files are read in processes of their own (reader-worker.ts), never in the process that
 * serves requests: a file can be built to inflate to gigabytes, claim a million pages, nest without
 * end or keep a parser busy for minutes. Each reader's JavaScript heap is capped
 * (ENGRAM_PARSE_MAX_HEAP_MB), each read has a deadline (ENGRAM_PARSE_TIMEOUT_MS) after which its
 * reader is ended, what lives outside the heap is counted before it is made (parsers/limits.ts), and
 * at most ENGRAM_PARSE_CONCURRENCY files are read at once. A file beyond a bound fails alone, with 413.
 * Processes, not worker threads: a worker reader reaching its heap limit is ended only at V8's
 * discretion, and a DOCX bomb's DOM aborted the whole server that way (issue 46: 2 of 2 trials at a
 * 128 MB limit, 1 of 2 at 256); a reader process that runs out of heap ends alone.
 */

export type ParseSettings = Config['parse'];

export interface ReadCall {
  id: number;
  op: 'read' | 'detect';
  bytes: Uint8Array;
  name: string;
  mediaType: string | undefined;
  limits: DocumentLimits;
}

export type ReadAnswer = { id: number; result: unknown } | { id: number; error: ThreadError };

/** What a caller does when every reader is busy and many files already wait: refuse (503, a request) or wait (a job). */
export type WhenBusy = 'refuse' | 'wait';

let workerUrl = siblingModule('reader-worker', import.meta.url);

/** Readers started from now on run `compiled` (the tests', like the search reader's: testing/file-setup.ts). */
export function runReadersFrom(compiled: URL): void {
  workerUrl = compiled;
}

/** An idle reader ends after this, and its memory with it. */
const IDLE_MS = 10_000;
/** Files that may wait for a reader, per reader, before a request is refused. */
const WAITING_PER_THREAD = 8;
/** A reader that has not loaded its parsers within this is ended (its load is not the file's time). */
const START_MS = 30_000;

interface ReadingProcess {
  child: ChildProcess;
  ready: Promise<void>;
  /** The read under way hears its answer or the reader's end here. */
  settle?: (outcome: { answer: ReadAnswer } | { ended: Error }) => void;
  idleTimer?: NodeJS.Timeout;
  /** Ended by us (a deadline, idle, close): its exit is no failure of the file's. */
  ending?: boolean;
}

/**
 * The error a reader that died mid-read stands for: V8 aborts a process out of heap (SIGABRT), and
 * the kernel's OOM killer sends SIGKILL; both are the file's doing (413), anything else is ours.
 */
function endedBy(error: Error | undefined, code: number | null, signal: string | null, heapMb: number): Error {
  if (signal === 'SIGABRT' || signal === 'SIGKILL' || code === 134) {
    return tooLarge('ENGRAM_PARSE_MAX_HEAP_MB', `Reading the file needs more than ${heapMb} MB of memory`);
  }
  return error ?? new Error(`a reading process exited (${signal ?? `code ${code}`})`);
}

/** The pool of reading processes (one pool per server process, services.ts). */
export class DocumentReader {
  private readonly idle: ReadingProcess[] = [];
  private readonly readers = new Set<ReadingProcess>();
  private readonly waiting: Array<{ go(): void; fail(error: Error): void }> = [];
  private reading = 0;
  private nextId = 0;
  private closed = false;

  /** `idleMs`: how long an idle reader is kept (a test shortens it). */
  constructor(
    private readonly settings: ParseSettings,
    private readonly idleMs = IDLE_MS,
  ) {}

  /** The document in `bytes`: its type, chunks and digest; 400, 413 or 415 for a file that cannot be read. */
  read(bytes: Buffer, name: string, mediaType: string | undefined, whenBusy: WhenBusy): Promise<ReadDocument> {
    return this.run('read', bytes, name, mediaType, whenBusy) as Promise<ReadDocument>;
  }

  /** The file's type (parsers/index.ts#detectType), found by a reader: sniffing may parse the whole file. */
  detect(bytes: Buffer, name: string, mediaType: string | undefined, whenBusy: WhenBusy): Promise<FileType> {
    return this.run('detect', bytes, name, mediaType, whenBusy) as Promise<FileType>;
  }

  /** Ends every reader; reads under way or waiting fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.fail(new Error('the document reader is closed'));
    await Promise.all([...this.readers].map((r) => this.end(r)));
  }

  private async run(
    op: ReadCall['op'],
    bytes: Buffer,
    name: string,
    mediaType: string | undefined,
    whenBusy: WhenBusy,
  ): Promise<unknown> {
    await this.turn(whenBusy);
    try {
      const { id, limits } = { id: ++this.nextId, limits: this.settings };
      return await this.onReader({
        id,
        op,
        bytes,
        name,
        mediaType,
        limits: { maxExpandedBytes: limits.maxExpandedBytes, maxPages: limits.maxPages, maxParts: limits.maxParts },
      });
    } finally {
      const next = this.waiting.shift();
      if (next) next.go();
      else this.reading--;
    }
  }

  /** Waits for a free reader; a turn ending hands it straight to the next waiting read. */
  private turn(whenBusy: WhenBusy): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the document reader is closed'));
    if (this.reading < this.settings.concurrency) {
      this.reading++;
      return Promise.resolve();
    }
    if (whenBusy === 'refuse' && this.waiting.length >= this.settings.concurrency * WAITING_PER_THREAD) {
      return Promise.reject(
        new AppError('unavailable', 'Too many files are being read at once; retry shortly', undefined, {
          'Retry-After': '1',
        }),
      );
    }
    return new Promise((go, fail) => this.waiting.push({ go, fail }));
  }

  private async onReader(call: ReadCall): Promise<unknown> {
    const reader = this.idle.pop() ?? this.spawn();
    clearTimeout(reader.idleTimer);
    reader.child.ref();
    reader.child.channel?.ref();
    let outcome: { answer: ReadAnswer } | { ended: Error } | { timedOut: true };
    try {
      let startDeadline: NodeJS.Timeout | undefined;
      const started = await Promise.race([
        reader.ready.then(() => true),
        new Promise<false>((r) => (startDeadline = setTimeout(() => r(false), START_MS).unref())),
      ]);
      // Cleared, not left to run out: its closure's scope holds the call (the file's bytes and name) meanwhile.
      clearTimeout(startDeadline);
      // A machine too busy to start a process is the server's state, not the file's: 503, try again.
      if (!started) {
        throw new AppError(
          'unavailable',
          `No reading process started within ${START_MS} ms; retry shortly`,
          undefined,
          {
            'Retry-After': '5',
          },
        );
      }
      outcome = await new Promise((resolve) => {
        const deadline = setTimeout(() => resolve({ timedOut: true }), this.settings.timeoutMs);
        reader.settle = (o) => {
          clearTimeout(deadline);
          resolve(o);
        };
        reader.child.send(call);
      });
    } catch (error) {
      await this.end(reader);
      throw error;
    }
    reader.settle = undefined;
    if ('timedOut' in outcome) {
      // Whatever the reader is doing, it is stopped: the next read gets a fresh one.
      await this.end(reader);
      throw tooLarge('ENGRAM_PARSE_TIMEOUT_MS', `Reading the file takes longer than ${this.settings.timeoutMs} ms`);
    }
    if ('ended' in outcome) throw outcome.ended;
    const { answer } = outcome;
    if ('error' in answer) {
      // A reader that failed a file may hold what that file made it allocate: it is ended, and gone
      // before the next read starts, so two readers' memory never adds up past ENGRAM_PARSE_CONCURRENCY.
      await this.end(reader);
      throw rethrown(answer.error, 'a reading process');
    }
    this.park(reader);
    return answer.result;
  }

  private spawn(): ReadingProcess {
    const module = fileURLToPath(workerUrl);
    const child = fork(module, [], {
      execArgv: [
        `--max-old-space-size=${this.settings.maxHeapMb}`,
        // TypeScript (npm run dev, tests without a build) is loaded through tsx. Vite's transform of a workspace
        // package's tests has no import.meta.resolve: there the name is resolved from the working directory.
        ...(module.endsWith('.ts')
          ? ['--import', typeof import.meta.resolve === 'function' ? import.meta.resolve('tsx') : 'tsx']
          : []),
      ],
      // Bytes and documents cross as structured clones, as they would between threads.
      serialization: 'advanced',
      // Errors come back as messages; V8's report of a reader out of heap would only garble the server's log lines.
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    let started!: () => void;
    const reader: ReadingProcess = { child, ready: new Promise((r) => (started = r)) };
    let failure: Error | undefined;
    child.on('message', (message: ReadAnswer | 'ready') =>
      message === 'ready' ? started() : reader.settle?.({ answer: message }),
    );
    child.on('error', (error) => (failure = error));
    child.once('exit', (code, signal) => {
      this.readers.delete(reader);
      const at = this.idle.indexOf(reader);
      if (at !== -1) this.idle.splice(at, 1);
      clearTimeout(reader.idleTimer);
      reader.settle?.({
        ended: reader.ending
          ? new Error('the reading process was ended')
          : endedBy(failure, code, signal, this.settings.maxHeapMb),
      });
    });
    this.readers.add(reader);
    return reader;
  }

  private park(reader: ReadingProcess): void {
    reader.child.unref();
    reader.child.channel?.unref();
    if (this.closed) return void this.end(reader);
    reader.idleTimer = setTimeout(() => void this.end(reader), this.idleMs).unref();
    this.idle.push(reader);
  }

  private async end(reader: ReadingProcess): Promise<void> {
    reader.settle = undefined;
    reader.ending = true;
    // Out of the idle list at once, not at its exit: a read taking it meanwhile failed (500) when it exited.
    const at = this.idle.indexOf(reader);
    if (at !== -1) this.idle.splice(at, 1);
    const { child } = reader;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    // An idle reader is unreferenced: referenced again, its exit is waited for, not lost at the loop's end.
    child.ref();
    child.kill('SIGKILL');
    await exited;
  }
}
