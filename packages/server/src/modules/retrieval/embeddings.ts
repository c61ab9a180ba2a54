import { createHash } from 'node:crypto';
import { EmbedderError, type Embedder } from '../../engine/index.js';
import { AppError } from '../../core/errors.js';
import { nowIso, type Database } from '../../store/database.js';
import { memoriesHeld, type IndexedMemory } from '../memories/index.js';

/**
 * Vectors of a remote (OpenAI-compatible) embedder, stored per memory and embedder id so that
 * they are computed once and an embedder change never mixes spaces. This module owns
 * memory_embeddings. Without a remote embedder nothing is stored: the built-in ranking
 * features are computed in memory.
 */
export class EmbeddingStore {
  /**
   * Vectors of recently embedded texts by the text's hash (most recently used last): the same text
   * (a repeated query, a memory added again, a rewritten summary back to an old text) costs no call.
   */
  private readonly byText = new Map<string, Float32Array>();

  constructor(readonly embedder: Embedder | null, private readonly cachedTexts = TEXT_CACHE_ENTRIES) {}

  get id(): string {
    return this.embedder?.id ?? 'builtin';
  }

  /** Stored vectors for these memories (none are computed: the index cache embeds missing ones in the background). */
  async storedVectors(database: Database, rows: IndexedMemory[]): Promise<Map<number, Float32Array>> {
    const vectors = new Map<number, Float32Array>();
    if (!this.embedder || rows.length === 0) return vectors;
    const live = rows.filter((r) => !r.deleted);
    for (let i = 0; i < live.length; i += 500) {
      const ids = live.slice(i, i + 500).map((r) => r.id);
      const stored = await database.db
        .selectFrom('memory_embeddings')
        .select(['memory_id', 'vector'])
        .where('embedder', '=', this.embedder.id)
        .where('memory_id', 'in', ids)
        .execute();
      for (const s of stored) vectors.set(s.memory_id, decodeVector(s.vector));
    }
    return vectors;
  }

  /**
   * (Re)computes and stores vectors for these memories, replacing stored ones. The texts were read
   * before the provider's call: a vector is stored only if its memory is still live with that text
   * (not forgotten or its summary rewritten meanwhile, whose erasure would not see it), checked in
   * the storing transaction under its owner's lock (memoriesHeld).
   */
  async store(database: Database, projectId: string, rows: IndexedMemory[], into = new Map<number, Float32Array>(), fresh = false): Promise<void> {
    if (!this.embedder || rows.length === 0) return;
    const embedded = await this.embed(rows.map((r) => r.text), fresh);
    const now = nowIso();
    for (let i = 0; i < rows.length; i += 200) {
      const batch = rows.slice(i, i + 200);
      await database.db.transaction().execute(async (trx) => {
        const current = new Map((await memoriesHeld(database, trx, { projectId }, batch.map((r) => r.id))).map((m) => [m.id, m.text]));
        const values = batch.flatMap((r, j) => (current.get(r.id) === r.text ? [{
          memory_id: r.id, embedder: this.embedder!.id, project_id: projectId, vector: encodeVector(embedded[i + j]!), created_at: now,
        }] : []));
        if (values.length === 0) return;
        await trx
          .insertInto('memory_embeddings')
          .values(values)
          .onConflict((oc) => oc.columns(['memory_id', 'embedder']).doUpdateSet((eb) => ({ vector: eb.ref('excluded.vector'), created_at: now })))
          .execute();
      });
    }
    rows.forEach((r, i) => into.set(r.id, embedded[i]!));
  }

  /**
   * Vectors of texts: those held by the text-hash cache from it, the others (each distinct text
   * once) in one call to the provider; `fresh`: every text from the provider (a refresh after the
   * provider's model changed behind the same name). A provider failure is the caller's 503, not a 500: the
   * request may succeed when it recovers.
   */
  private async embed(texts: string[], fresh = false): Promise<Float32Array[]> {
    const keys = texts.map((t) => createHash('sha256').update(t).digest('base64'));
    const missing = [...new Map(keys.flatMap((k, i) => (this.byText.has(k) && !fresh ? [] : [[k, texts[i]!] as const]))).entries()];
    try {
      if (missing.length > 0) {
        const fresh = await this.embedder!.embed(missing.map(([, text]) => text));
        missing.forEach(([key], i) => this.remember(key, fresh[i]!));
      }
      return keys.map((k) => {
        const v = this.byText.get(k)!;
        this.remember(k, v);
        return v;
      });
    } catch (error) {
      const detail = error instanceof EmbedderError ? `: ${error.message}` : '';
      throw new AppError('unavailable', `The embedding provider (${this.embedder!.id}) did not answer${detail}`);
    }
  }

  /** Forgets the texts' vectors (after a refresh: the provider's vectors may have changed). */
  forgetTexts(): void {
    this.byText.clear();
  }

  private remember(key: string, vector: Float32Array): void {
    this.byText.delete(key);
    this.byText.set(key, vector);
    for (const [oldest] of this.byText) {
      if (this.byText.size <= this.cachedTexts) break;
      this.byText.delete(oldest);
    }
  }

  async embedQuery(text: string): Promise<Float32Array | undefined> {
    if (!this.embedder) return undefined;
    return (await this.embed([text]))[0];
  }
}

/** Texts whose vectors the text-hash cache holds (4 KB each at 1,024 dimensions). */
const TEXT_CACHE_ENTRIES = 4096;

export function encodeVector(v: Float32Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

export function decodeVector(b: Buffer | Uint8Array): Float32Array {
  // Copy: the driver's buffer may be a view into a larger, shared allocation.
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer);
}
