import type { Readable } from 'node:stream';
import type { Config } from '../../config.js';
import { openAiEmbedder, type Embedder } from '../../engine/index.js';
import type { JobHandler } from '../../jobs/runner.js';
import { opensAgain, type Database, type Executor } from '../../store/database.js';
import { changesSince, liveMemoryCount, liveProjectMemories, type IndexedMemory } from '../memories/index.js';
import { EmbeddingStore } from './embeddings.js';
import { IndexCache } from './index-cache.js';
import { Retrieval } from './service.js';
import { RetrievalThread, type IndexCacheService, type RetrievalService } from './thread.js';
import { eraseIndexSnapshots } from './snapshots.js';

export const REFRESH_JOB = 'embeddings.refresh';

export function createEmbedder(config: Config['retrieval']['embedder']): Embedder | null {
  if (config.kind === 'builtin') return null;
  return openAiEmbedder({
    baseUrl: config.baseUrl,
    model: config.model,
    ...(config.apiKey ? { apiKey: config.apiKey } : {}),
    ...(config.dimensions ? { dimensions: config.dimensions } : {}),
  });
}

export interface RetrievalEngine {
  /** The stored vectors (the `embeddings.refresh` job writes them here, on this thread). */
  embeddings: EmbeddingStore;
  cache: IndexCacheService;
  retrieval: RetrievalService;
  /** Starts the search thread, if there is one, ahead of the first call (`engram serve` does, as it starts). */
  start(): void;
  /** Ends the search thread, if there is one. */
  close(): Promise<void>;
  /** The search thread's heap snapshot, if one runs (the erasure test searches it; thread.ts). */
  heapSnapshot(): Promise<Readable> | undefined;
}

/**
 * The retrieval engine behind the shared per-end-user index cache; /v1 recall uses the same
 * instance. On a thread of its own (thread.ts) when the configuration asks for it and another
 * connection can open the database (not an in-memory SQLite database); otherwise in process.
 */
export function createRetrieval(database: Database, config: Config['retrieval']): RetrievalEngine {
  if (!config.searchThread || !opensAgain(database.config)) return createInProcessRetrieval(database, config);
  // Its PostgreSQL pool: half the process's again (retrieval reads one statement a call), two at least.
  const threadDatabase =
    database.config.dialect === 'postgres'
      ? { ...database.config, poolSize: Math.max(2, Math.ceil(database.config.poolSize / 2)) }
      : database.config;
  const thread = new RetrievalThread({ database: threadDatabase, retrieval: config }, database);
  return {
    embeddings: new EmbeddingStore(createEmbedder(config.embedder)),
    cache: thread.cache,
    retrieval: thread.retrieval,
    start: () => thread.start(),
    close: () => thread.close(),
    heapSnapshot: () => thread.heapSnapshot(),
  };
}

/** The engine on this thread: the index cache and the searches it serves (also the search thread's own, thread-worker.ts). */
export function createInProcessRetrieval(
  database: Database,
  config: Config['retrieval'],
): RetrievalEngine & { cache: IndexCache; retrieval: Retrieval } {
  const embeddings = new EmbeddingStore(createEmbedder(config.embedder));
  const cache = new IndexCache(
    database,
    embeddings,
    config.indexCacheBytes,
    config.projectIndexMaxMemories,
    config.indexSnapshotMinMemories,
    config.indexContextCacheShare,
  );
  // Not on PostgreSQL: its process encodes the pages a build asks for two ahead (feed.ts#liveOwnerPage) while this
  // thread indexes; the build reader, a page at a time on one connection, made a 300,000-row build slower (5.5 s
  // against 3.8 s in process on 2 cores, bench/README.md, session 19).
  if (database.dialect === 'postgres') cache.buildReader.minRows = Number.POSITIVE_INFINITY;
  return {
    embeddings,
    cache,
    retrieval: new Retrieval(database, cache, embeddings),
    start: () => {},
    close: async () => cache.close(),
    heapSnapshot: () => undefined,
  };
}

/** The `embeddings.refresh` job: recomputes stored vectors for an end user or a whole project, reporting progress. */
export function refreshEmbeddingsJob(database: Database, { embeddings, cache }: RetrievalEngine): JobHandler {
  return async (job) => {
    const { tenantId, endUserId } = job.payload as { tenantId: string; endUserId: string | null };
    const projectId = job.projectId!;
    const rows: AsyncIterable<IndexedMemory> | IndexedMemory[] = endUserId
      ? await changesSince(database.db, { projectId, tenantId, endUserId }, 0)
      : liveProjectMemories(database.db, projectId, tenantId || null);
    const total = Array.isArray(rows) ? rows.length : await liveMemoryCount(database.db, [projectId]);
    let done = 0;
    let batch: IndexedMemory[] = [];
    const flush = async () => {
      await embeddings.store(database, projectId, batch, undefined, true);
      done += batch.length;
      batch = [];
      await job.progress(total === 0 ? 1 : done / total);
    };
    for await (const row of rows) {
      batch.push(row);
      if (batch.length === 100) await flush();
    }
    await flush();
    cache.invalidateProject(projectId);
    return { memories: done, embedder: embeddings.id };
  };
}

/** Vectors, feedback and stored indexes are derived from memories: they go in the transaction that forgets them. */
export async function eraseDerivedData(trx: Executor, memoryIds: number[]): Promise<void> {
  await eraseVectors(trx, memoryIds);
  await trx.deleteFrom('feedback').where('memory_id', 'in', memoryIds).execute();
  await eraseIndexSnapshots(trx, memoryIds);
}

/** The stored vectors of memories, also when their text is replaced (a summary rewritten): the next load embeds the new text. */
export async function eraseVectors(trx: Executor, memoryIds: number[]): Promise<void> {
  await trx.deleteFrom('memory_embeddings').where('memory_id', 'in', memoryIds).execute();
}
