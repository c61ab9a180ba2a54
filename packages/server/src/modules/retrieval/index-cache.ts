import { MemoryIndex, parseTemporal } from '../../engine/index.js';
import type { Database } from '../../store/database.js';
import {
  changesSince, liveMemoryCount, liveProjectMemories, projectRevision, revisionOf, type IndexedMemory, type Owner,
} from '../memories/index.js';
import { invalid } from '../../core/errors.js';
import type { EmbeddingStore } from './embeddings.js';
import { feedbackSums } from './feedback.js';

/** What filters need of a memory, kept beside the index so filtering costs no query. */
export interface DocMeta {
  tags: string[];
  source: string | null;
  createdAt: number;
  metadata: Record<string, unknown>;
  isSummary: boolean;
  sessionId: string | null;
  /** When the text says it happened (a date in the text, read relative to created_at), if it names one. */
  event?: { from: number; to: number };
}

export interface CachedIndex {
  index: MemoryIndex;
  meta: Map<number, DocMeta>;
  revision: number;
}

interface Entry extends CachedIndex {
  bytes: number;
  /** Set while the entry is being brought up to date, so concurrent queries share one refresh. */
  refreshing?: Promise<void>;
}

/**
 * One in-process index per end user (and one per project, for principal-scoped composition),
 * validated against the database on every use: the owner's revision is one indexed read, and
 * a stale entry is brought up to date from the rows whose change sequence is newer. So every
 * process sees every committed write, on SQLite and PostgreSQL alike. Bounded by bytes (LRU).
 */
export class IndexCache {
  private readonly entries = new Map<string, Entry>();
  private totalBytes = 0;
  /** Lookups answered from a current index, and those that had to load or bring one up to date (for /metrics). */
  private hits = 0;
  private misses = 0;

  constructor(
    private readonly database: Database,
    private readonly embeddings: EmbeddingStore,
    private readonly maxBytes: number,
    private readonly projectMaxMemories: number,
  ) {}

  async forOwner(owner: Owner): Promise<CachedIndex> {
    const key = `u\u0000${owner.projectId}\u0000${owner.tenantId}\u0000${owner.endUserId}`;
    return this.use(key, () => revisionOf(this.database.db, owner), async (entry, revision) => {
      const rows = await changesSince(this.database.db, owner, entry.revision);
      await this.apply(entry, owner.projectId, rows, { owner });
      entry.revision = revision;
    });
  }

  /** The whole project (or one tenant of it). Rebuilt when any end user's revision moves. */
  async forProject(projectId: string, tenantId: string | null): Promise<CachedIndex> {
    const key = `p\u0000${projectId}\u0000${tenantId ?? '*'}`;
    return this.use(key, () => projectRevision(this.database.db, projectId, tenantId), async (entry, revision) => {
      // A whole-project index lives in memory; past this size a request must name an end user.
      if ((await liveMemoryCount(this.database.db, [projectId])) > this.projectMaxMemories) {
        throw invalid('X-End-User-ID', `The project holds more than ${this.projectMaxMemories} memories; send X-End-User-ID to compose for one end user`);
      }
      entry.index = new MemoryIndex({ embedder: null });
      entry.meta.clear();
      let batch: IndexedMemory[] = [];
      for await (const row of liveProjectMemories(this.database.db, projectId, tenantId)) {
        batch.push(row);
        if (batch.length === 1000) {
          await this.apply(entry, projectId, batch, {});
          batch = [];
        }
      }
      await this.apply(entry, projectId, batch, {});
      entry.revision = revision;
    });
  }

  /** Drops cached indexes of a project (after an embedder change, say). */
  invalidateProject(projectId: string): void {
    for (const [key, entry] of this.entries) {
      if (key.split('\u0000')[1] === projectId) {
        this.entries.delete(key);
        this.totalBytes -= entry.bytes;
      }
    }
  }

  private async use(
    key: string,
    currentRevision: () => Promise<number>,
    refresh: (entry: Entry, revision: number) => Promise<void>,
  ): Promise<CachedIndex> {
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { index: new MemoryIndex({ embedder: null }), meta: new Map(), revision: 0, bytes: 0 };
      this.entries.set(key, entry);
    } else {
      // Most recently used last.
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    let fresh = true;
    for (;;) {
      const revision = await currentRevision();
      if (revision === entry.revision) break;
      fresh = false;
      if (entry.refreshing) {
        await entry.refreshing;
        continue;
      }
      const current = entry;
      current.refreshing = refresh(current, revision).finally(() => {
        current.refreshing = undefined;
      });
      try {
        await current.refreshing;
      } catch (error) {
        // A half-applied refresh must not be trusted: start from scratch next time.
        this.entries.delete(key);
        this.totalBytes -= current.bytes;
        throw error;
      }
      this.account(current);
      break;
    }
    if (fresh) this.hits++;
    else this.misses++;
    return entry;
  }

  private async apply(entry: Entry, projectId: string, rows: IndexedMemory[], opts: { owner?: Owner }): Promise<void> {
    if (rows.length === 0) return;
    const live = rows.filter((r) => !r.deleted);
    const [vectors, feedback] = await Promise.all([
      this.embeddings.vectorsFor(this.database.db, projectId, live),
      feedbackSums(this.database.db, live.map((r) => r.id), opts.owner),
    ]);
    for (const row of rows) {
      if (row.deleted) {
        entry.index.remove(row.id);
        entry.meta.delete(row.id);
        continue;
      }
      const createdAt = Date.parse(row.created_at);
      entry.index.upsert(
        {
          id: row.id, text: row.text, sessionId: row.session_id, createdAt, importance: row.importance,
          feedback: feedback.get(row.id) ?? 0, speaker: row.speaker, tags: row.tags,
        },
        vectors.get(row.id),
      );
      const event = parseTemporal(row.text, createdAt);
      entry.meta.set(row.id, {
        tags: row.tags, source: row.source, createdAt, metadata: row.metadata, isSummary: row.is_summary, sessionId: row.session_id,
        ...(event ? { event: { from: event.from, to: event.to } } : {}),
      });
    }
  }

  private account(entry: Entry): void {
    const bytes = entry.index.approxBytes() + entry.meta.size * 200;
    this.totalBytes += bytes - entry.bytes;
    entry.bytes = bytes;
    for (const [key, oldest] of this.entries) {
      if (this.totalBytes <= this.maxBytes || oldest === entry) break;
      this.entries.delete(key);
      this.totalBytes -= oldest.bytes;
    }
  }

  stats(): { entries: number; bytes: number; hits: number; misses: number } {
    return { entries: this.entries.size, bytes: this.totalBytes, hits: this.hits, misses: this.misses };
  }
}
