import type { Worker } from 'node:worker_threads';
import type { Config } from '../../config.js';
import { AppError } from '../../core/errors.js';
import { moduleWorker, rethrown, siblingModule, type ThreadError } from '../../core/worker-threads.js';
import type { ReadDocument } from './document.js';
import { tooLarge, type DocumentLimits, type FileType } from './parsers/index.js';

/**
 * Untrusted files are read on threads of their own (reader-worker.ts), never on a thread that serves
 * requests: a file can be built to inflate to gigabytes, claim a million pages, nest without end or
 * keep a parser busy for minutes. Each thread's JavaScript heap is capped (ENGRAM_PARSE_MAX_HEAP_MB),
 * each read has a deadline (ENGRAM_PARSE_TIMEOUT_MS) after which its thread is ended, what lives
 * outside the heap is counted before it is made (parsers/limits.ts), and at most
 * ENGRAM_PARSE_CONCURRENCY files are read at once. A file beyond a bound fails alone, with 413.
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

/** What a caller does when every reading thread is busy and many files already wait: refuse (503, a request) or wait (a job). */
export type WhenBusy = 'refuse' | 'wait';

let workerUrl = siblingModule('reader-worker', import.meta.url);

/** Reading threads started from now on run `compiled` (the tests', like the search thread's: testing/file-setup.ts). */
export function runReadersFrom(compiled: URL): void {
  workerUrl = compiled;
}

/** An idle thread ends after this, and its memory with it. */
const IDLE_MS = 10_000;
/** Files that may wait for a thread, per thread, before a request is refused. */
const WAITING_PER_THREAD = 8;
/** A thread that has not loaded its parsers within this is ended (its load is not the file's time). */
const START_MS = 30_000;

interface ReadingThread {
  worker: Worker;
  ready: Promise<void>;
  /** The read under way hears its answer or the thread's end here. */
  settle?: (outcome: { answer: ReadAnswer } | { ended: Error }) => void;
  idleTimer?: NodeJS.Timeout;
}

/** The error a thread that died mid-read stands for: out of heap is the file's doing (413), anything else is ours. */
function endedBy(error: Error | undefined, code: number, heapMb: number): Error {
  if ((error as { code?: string } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
    return tooLarge('ENGRAM_PARSE_MAX_HEAP_MB', `Reading the file needs more than ${heapMb} MB of memory`);
  }
  return error ?? new Error(`a reading thread exited (code ${code})`);
}

/** The pool of reading threads (one per process, services.ts). */
export class DocumentReader {
  private readonly idle: ReadingThread[] = [];
  private readonly threads = new Set<ReadingThread>();
  private readonly waiting: Array<{ go(): void; fail(error: Error): void }> = [];
  private reading = 0;
  private nextId = 0;
  private closed = false;

  constructor(private readonly settings: ParseSettings) {}

  /** The document in `bytes`: its type, chunks and digest; 400, 413 or 415 for a file that cannot be read. */
  read(bytes: Buffer, name: string, mediaType: string | undefined, whenBusy: WhenBusy): Promise<ReadDocument> {
    return this.run('read', bytes, name, mediaType, whenBusy) as Promise<ReadDocument>;
  }

  /** The file's type (parsers/index.ts#detectType), found on a reading thread: sniffing may parse the whole file. */
  detect(bytes: Buffer, name: string, mediaType: string | undefined, whenBusy: WhenBusy): Promise<FileType> {
    return this.run('detect', bytes, name, mediaType, whenBusy) as Promise<FileType>;
  }

  /** Ends every thread; reads under way or waiting fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.fail(new Error('the document reader is closed'));
    await Promise.all([...this.threads].map((t) => t.worker.terminate()));
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
      return await this.onThread({
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

  /** Waits for a free thread; a turn ending hands it straight to the next waiting read. */
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

  private async onThread(call: ReadCall): Promise<unknown> {
    const thread = this.idle.pop() ?? this.spawn();
    clearTimeout(thread.idleTimer);
    thread.worker.ref();
    let outcome: { answer: ReadAnswer } | { ended: Error } | { timedOut: true };
    try {
      const started = await Promise.race([
        thread.ready.then(() => true),
        new Promise<false>((r) => setTimeout(() => r(false), START_MS).unref()),
      ]);
      if (!started) throw new Error(`a reading thread did not start within ${START_MS} ms`);
      outcome = await new Promise((resolve) => {
        const deadline = setTimeout(() => resolve({ timedOut: true }), this.settings.timeoutMs);
        thread.settle = (o) => {
          clearTimeout(deadline);
          resolve(o);
        };
        thread.worker.postMessage(call);
      });
    } catch (error) {
      void this.end(thread);
      throw error;
    }
    thread.settle = undefined;
    if ('timedOut' in outcome) {
      // Whatever the thread is doing, it is stopped: the next read gets a fresh one.
      void this.end(thread);
      throw tooLarge('ENGRAM_PARSE_TIMEOUT_MS', `Reading the file takes longer than ${this.settings.timeoutMs} ms`);
    }
    if ('ended' in outcome) throw outcome.ended;
    const { answer } = outcome;
    if ('error' in answer && answer.error.kind !== 'app') {
      void this.end(thread);
      throw rethrown(answer.error, 'a reading thread');
    }
    this.park(thread);
    if ('error' in answer) throw rethrown(answer.error, 'a reading thread');
    return answer.result;
  }

  private spawn(): ReadingThread {
    const worker = moduleWorker(workerUrl, { resourceLimits: { maxOldGenerationSizeMb: this.settings.maxHeapMb } });
    let started!: () => void;
    const thread: ReadingThread = { worker, ready: new Promise((r) => (started = r)) };
    let failure: Error | undefined;
    worker.on('message', (message: ReadAnswer | 'ready') =>
      message === 'ready' ? started() : thread.settle?.({ answer: message }),
    );
    worker.on('error', (error) => (failure = error));
    worker.once('exit', (code) => {
      this.threads.delete(thread);
      const at = this.idle.indexOf(thread);
      if (at !== -1) this.idle.splice(at, 1);
      clearTimeout(thread.idleTimer);
      thread.settle?.({ ended: endedBy(failure, code, this.settings.maxHeapMb) });
    });
    this.threads.add(thread);
    return thread;
  }

  private park(thread: ReadingThread): void {
    thread.worker.unref();
    if (this.closed) return void this.end(thread);
    thread.idleTimer = setTimeout(() => void this.end(thread), IDLE_MS).unref();
    this.idle.push(thread);
  }

  private async end(thread: ReadingThread): Promise<void> {
    thread.settle = undefined;
    await thread.worker.terminate();
  }
}
