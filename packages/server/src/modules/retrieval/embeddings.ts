import { createHash } from 'node:crypto';
import { EmbedderError, type Embedder } from '../../engine/index.js';
import { AppError } from '../../core/errors.js';
import { nowIso, type Database } from '../../store/database.js';
import { memoriesHeld, type IndexedMemory } from '../memories/index.js';

/** Texts sent to the provider in one call by the background embedding. */
export const EMBED_BATCH = 64;
/**
 * Tries of a memory the provider refuses (a 4xx other than 408/429: the request itself is wrong;
 * a refused batch is sent again a memory a call) before it is left without a vector (until the
 * next change or `POST /memory/refresh`).
 * Any other failure (the provider unreachable, slow, rate limiting or failing; the database) is
 * tried again without end, after a pause.
 */
export const EMBED_ATTEMPTS = 3;
/** The pause of the background embedding after a failed call, doubled by each failure in a row up to the most. */
export const EMBED_BACKOFF_MS = 1000;
export const EMBED_BACKOFF_MAX_MS = 60_000;

/** A failure that trying again cannot mend: the provider refused the request as made. */
export const refused = (error: unknown): boolean => {
  const status = error instanceof Error && error.cause instanceof EmbedderError ? error.cause.status : undefined;
  return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
};

/**
 * Vectors of a remote (OpenAI-compatible) embedder, stored per memory and embedder id so that
 * they are computed once and an embedder change never mixes spaces. This module owns
 * memory_embeddings. Without a remote embedder nothing is stored: the built-in ranking
 * features are computed in memory.
 */
export class EmbeddingStore {
  /**
   * Vectors of recent query texts by the text's hash (most recently used last): a repeated query
   * costs no call. Memory texts are not kept here (a forgotten memory's vector must not outlive it):
   * their reuse goes through the stored rows' text hashes (`store`).
   */
  private readonly queries = new Map<string, Float32Array>();

  constructor(
    readonly embedder: Embedder | null,
    private readonly cachedQueries = QUERY_CACHE_ENTRIES,
  ) {}

  get id(): string {
    return this.embedder?.id ?? 'builtin';
  }

  /** Stored vectors for these memories (none are computed: the index cache embeds missing ones in the background). */
  async storedVectors(database: Database, ids: readonly number[]): Promise<Map<number, Float32Array>> {
    const vectors = new Map<number, Float32Array>();
    if (!this.embedder || ids.length === 0) return vectors;
    for (let i = 0; i < ids.length; i += 500) {
      const stored = await database.db
        .selectFrom('memory_embeddings')
        .select(['memory_id', 'vector'])
        .where('embedder', '=', this.embedder.id)
        .where('memory_id', 'in', ids.slice(i, i + 500))
        .execute();
      for (const s of stored) vectors.set(s.memory_id, decodeVector(s.vector));
    }
    return vectors;
  }

  /**
   * (Re)computes and stores vectors for these memories, replacing stored ones. A text whose vector
   * a memory of the project already has stored (same text hash; stored vectors are only of live
   * memories) reuses it, unless `fresh` (a refresh:
   * every text from the provider); the others go to the provider, each distinct text once. The
   * texts were read before the provider's call: a vector is stored only if its memory is still live
   * with that text (not forgotten or its summary rewritten meanwhile, whose erasure would not see
   * it), checked in the storing transaction under its owner's lock (memoriesHeld).
   */
  async store(
    database: Database,
    projectId: string,
    rows: IndexedMemory[],
    into = new Map<number, Float32Array>(),
    fresh = false,
  ): Promise<void> {
    if (!this.embedder || rows.length === 0) return;
    const hashes = rows.map((r) => textHash(r.text));
    const known = new Map<string, Float32Array>();
    if (!fresh) {
      const distinct = [...new Set(hashes)];
      for (let i = 0; i < distinct.length; i += 500) {
        // A stored vector's memory is live: forgetting erases its vectors in the same transaction.
        const found = await database.db
          .selectFrom('memory_embeddings')
          .select(['text_hash', 'vector'])
          .where('embedder', '=', this.embedder.id)
          .where('project_id', '=', projectId)
          .where('text_hash', 'in', distinct.slice(i, i + 500))
          .execute();
        for (const f of found) if (f.text_hash) known.set(f.text_hash, decodeVector(f.vector));
      }
    }
    const missing = [
      ...new Map(rows.flatMap((r, i) => (known.has(hashes[i]!) ? [] : [[hashes[i]!, r.text] as const]))).entries(),
    ];
    if (missing.length > 0) {
      const fresh = await this.embed(missing.map(([, text]) => text));
      missing.forEach(([hash], i) => known.set(hash, fresh[i]!));
    }
    const embedded = hashes.map((h) => known.get(h)!);
    const now = nowIso();
    for (let i = 0; i < rows.length; i += 200) {
      const batch = rows.slice(i, i + 200);
      await database.db.transaction().execute(async (trx) => {
        const current = new Map(
          (
            await memoriesHeld(
              database,
              trx,
              { projectId },
              batch.map((r) => r.id),
            )
          ).map((m) => [m.id, m.text]),
        );
        const values = batch.flatMap((r, j) =>
          current.get(r.id) === r.text
            ? [
                {
                  memory_id: r.id,
                  embedder: this.embedder!.id,
                  project_id: projectId,
                  vector: encodeVector(embedded[i + j]!),
                  created_at: now,
                  text_hash: hashes[i + j]!,
                },
              ]
            : [],
        );
        if (values.length === 0) return;
        await trx
          .insertInto('memory_embeddings')
          .values(values)
          .onConflict((oc) =>
            oc.columns(['memory_id', 'embedder']).doUpdateSet((eb) => ({
              vector: eb.ref('excluded.vector'),
              text_hash: eb.ref('excluded.text_hash'),
              created_at: now,
            })),
          )
          .execute();
      });
    }
    rows.forEach((r, i) => into.set(r.id, embedded[i]!));
  }

  /** A provider failure is the caller's 503, not a 500: the request may succeed when it recovers. */
  private async embed(texts: string[]): Promise<Float32Array[]> {
    try {
      return await this.embedder!.embed(texts);
    } catch (error) {
      const detail = error instanceof EmbedderError ? `: ${error.message}` : '';
      throw Object.assign(
        new AppError('unavailable', `The embedding provider (${this.embedder!.id}) did not answer${detail}`),
        // The background embedding tells a refused request (not tried again) from a failure (index-cache.ts).
        { cause: error },
      );
    }
  }

  /** Forgets the query vectors held (after a refresh: the provider's vectors may have changed). */
  forgetTexts(): void {
    this.queries.clear();
  }

  async embedQuery(text: string): Promise<Float32Array | undefined> {
    if (!this.embedder) return undefined;
    const key = textHash(text);
    const vector = this.queries.get(key) ?? (await this.embed([text]))[0]!;
    this.queries.delete(key);
    this.queries.set(key, vector);
    for (const [oldest] of this.queries) {
      if (this.queries.size <= this.cachedQueries) break;
      this.queries.delete(oldest);
    }
    return vector;
  }
}

const textHash = (text: string) => createHash('sha256').update(text).digest('base64');

/** Query texts whose vectors are held (4 KB each at 1,024 dimensions). */
const QUERY_CACHE_ENTRIES = 1024;

export function encodeVector(v: Float32Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

export function decodeVector(b: Buffer | Uint8Array): Float32Array {
  // Copy: the driver's buffer may be a view into a larger, shared allocation.
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer);
}
