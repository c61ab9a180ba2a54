import type { Readable } from 'node:stream';
import type { Worker } from 'node:worker_threads';
import { moduleWorker, rethrown, siblingModule, type ThreadError } from '../../core/worker-threads.js';
import type { Config } from '../../config.js';
import type { Database } from '../../store/database.js';
import type { Owner } from '../memories/index.js';
import type { IndexCacheStats } from './index-cache.js';
import { answerFromHeld, checkQuery, type Ranking, type Retrieval, type ScoredMemory } from './service.js';

/**
 * Retrieval on a thread of its own (ENGRAM_SEARCH_THREAD): the indexes, their upkeep and every
 * search live in a worker thread with its own database connection, and the HTTP thread only
 * asks. Ranking a query is half of its server time; on one thread a process serves queries one
 * search at a time, on two the next request is parsed, authenticated and answered while a search
 * runs (bench/README.md, "A thread for the search"). Exactly what the in-process engine answers:
 * the worker runs the same code (thread-worker.ts).
 */

/** What callers use of the retrieval engine, wherever it runs. */
export type RetrievalService = Pick<Retrieval, 'query' | 'matching' | 'retrieve' | 'search' | 'compose'>;

/** What callers use of the index cache, wherever it runs. */
export interface IndexCacheService {
  refreshLargeOwners(): Promise<number>;
  invalidateProject(projectId: string): void;
  /** After an erasure of the owner's memories committed (IndexCache.forgotten). */
  forgotten(owner: Owner, purged: boolean): Promise<void>;
  stats(): Promise<IndexCacheStats>;
}

export type ThreadMethod =
  | 'rankHeld'
  | 'queryAfresh'
  | 'matching'
  | 'retrieve'
  | 'search'
  | 'compose'
  | 'refreshLargeOwners'
  | 'invalidateProject'
  | 'forgotten'
  | 'stats'
  | 'close';

export interface ThreadCall {
  id: number;
  method: ThreadMethod;
  args: unknown[];
}

export type ThreadAnswer = { id: number; result: unknown } | { id: number; error: ThreadError };

export interface ThreadData {
  database: Config['database'];
  retrieval: Config['retrieval'];
}

/** The worker's module: compiled JavaScript beside this file, or TypeScript under tsx (`npm run dev`, tests without a build). */
let workerUrl = siblingModule('thread-worker', import.meta.url);

/**
 * Search threads started from now on run `compiled` (thread-worker.js of a build). The tests'
 * do, from the build their run's setup brought up to date (testing/global-setup.ts): a thread
 * that loads the source under tsx takes seconds of CPU to start, and nearly every test app starts one.
 */
export function runSearchThreadsFrom(compiled: URL): void {
  workerUrl = compiled;
}

/**
 * The search thread, started by `start` (`engram serve`, as it starts) or at the first call (a
 * process that never retrieves never starts it). Should it die, the calls under way fail and the
 * next call starts another (its indexes are then built or loaded again, as in a new process).
 */
export class RetrievalThread {
  private worker: Worker | undefined;
  private exited: Promise<void> | undefined;
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  private nextId = 0;
  private closed = false;
  private closing = false;

  readonly retrieval: RetrievalService = {
    // Ranked on the thread, the rows read back here: the two threads share a query's work about
    // equally (the thread is left only the search); exact as in process (Retrieval.query).
    query: async (owner, input, heldAt, seen) => {
      checkQuery(input);
      const { held, queryVector } = (await this.call('rankHeld', [owner, input])) as Ranking;
      const answer = held && (await answerFromHeld(this.database, owner, held, input, heldAt));
      if (answer) {
        seen?.(held.rankedAt);
        return answer;
      }
      return (await this.call('queryAfresh', [owner, input, heldAt, queryVector])) as ScoredMemory[];
    },
    matching: (...args) => this.call('matching', args) as ReturnType<Retrieval['matching']>,
    retrieve: (...args) => this.call('retrieve', args) as ReturnType<Retrieval['retrieve']>,
    search: (...args) => this.call('search', args) as ReturnType<Retrieval['search']>,
    compose: (...args) => this.call('compose', args) as ReturnType<Retrieval['compose']>,
  };

  readonly cache: IndexCacheService = {
    refreshLargeOwners: () => this.call('refreshLargeOwners', []) as Promise<number>,
    // Nothing to drop on a thread that has not started (or has died): it holds no index.
    invalidateProject: (projectId) => void (this.worker && this.call('invalidateProject', [projectId]).catch(() => {})),
    // Nothing to let go on a thread that has not started: it holds nothing.
    forgotten: async (owner, purged) => void (this.worker && (await this.call('forgotten', [owner, purged]))),
    stats: async () =>
      this.worker
        ? ((await this.call('stats', [])) as IndexCacheStats)
        : { entries: 0, bytes: 0, hits: 0, misses: 0, snapshots: { loaded: 0, stored: 0, failed: 0 } },
  };

  /** `database`: this thread's connection, on which a query's rows are read back. */
  constructor(
    private readonly data: ThreadData,
    private readonly database: Database,
  ) {}

  /** Starts the thread now (it loads its modules and opens its connection meanwhile), so that the first call does not wait for it. */
  start(): void {
    if (!this.worker && !this.closed) this.spawn();
  }

  private call(method: ThreadMethod, args: unknown[]): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error('the search thread is closed'));
    const worker = this.worker ?? this.spawn();
    const id = ++this.nextId;
    // Held while a call is under way (the caller waits for it), not while idle.
    if (this.pending.size === 0) worker.ref();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, method, args } satisfies ThreadCall);
    });
  }

  private spawn(): Worker {
    const worker = moduleWorker(workerUrl, { workerData: this.data satisfies ThreadData });
    // Like the checkpointer thread, it must not keep alive a process that has nothing else to do.
    worker.unref();
    worker.on('message', (answer: ThreadAnswer) => {
      const waiting = this.pending.get(answer.id);
      if (!waiting) return;
      this.pending.delete(answer.id);
      if (this.pending.size === 0 && !this.closing) worker.unref();
      if ('error' in answer) waiting.reject(rethrown(answer.error, 'the search thread'));
      else waiting.resolve(answer.result);
    });
    let failure: Error | undefined;
    worker.on('error', (error) => (failure = error));
    this.exited = new Promise((resolve) => {
      worker.once('exit', (code) => {
        if (this.worker === worker) this.worker = undefined;
        const error = failure ?? new Error(`the search thread exited (code ${code})`);
        for (const waiting of this.pending.values()) waiting.reject(error);
        this.pending.clear();
        resolve();
      });
    });
    this.worker = worker;
    return worker;
  }

  /** The thread's V8 heap snapshot, taken after a full collection (the erasure test searches it), or undefined when none runs. */
  heapSnapshot(): Promise<Readable> | undefined {
    return this.worker?.getHeapSnapshot();
  }

  /** Closes the thread's database connection and ends it (calls made afterwards fail). */
  async close(): Promise<void> {
    if (this.closed) return;
    const worker = this.worker;
    if (!worker) {
      this.closed = true;
      return;
    }
    // Held while it closes, so that a process awaiting this does not end before it has.
    this.closing = true;
    worker.ref();
    const exited = this.exited!;
    await this.call('close', []).catch(() => {});
    this.closed = true;
    const ended = await Promise.race([
      exited.then(() => true),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), 2_000).unref()),
    ]);
    if (!ended) await worker.terminate();
    await exited;
  }
}
