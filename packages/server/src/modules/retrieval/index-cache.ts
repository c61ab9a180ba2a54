import {
  forgetWords,
  leaveBufferPool,
  MAP_ENTRY_BYTES,
  MemoryIndex,
  SLICE_MS,
  stringBytes,
  type MemoryIndexOptions,
} from '../../engine/index.js';
import { forgetLastQuery, type Database } from '../../store/database.js';
import {
  ownerChangesSince,
  largeOwnersChangedAfter,
  liveMemoryCount,
  liveProjectMemories,
  projectRevision,
  revisionOf,
  type IndexedMemory,
  type Owner,
} from '../memories/index.js';
import { invalid } from '../../core/errors.js';
import {
  EMBED_ATTEMPTS,
  EMBED_BACKOFF_MAX_MS,
  EMBED_BACKOFF_MS,
  EMBED_BATCH,
  refused,
  type EmbeddingStore,
} from './embeddings.js';
import { feedbackSums } from './feedback.js';
import { DocMetas, rowMeta, type DocMeta } from './doc-metas.js';
import { loadSnapshot, SnapshotTaking, snapshotRevision, storeSnapshot } from './snapshots.js';
import { FairQueue } from '../../core/fair-queue.js';
import { IndexTexts } from './texts.js';
import { prepareRow } from './build-rows.js';
import { buildFromScratch } from './build-index.js';

export type { DocMeta };

export interface CachedIndex {
  index: MemoryIndex;
  meta: DocMetas;
  revision: number;
  /** The texts of its memories, once a query filtered on them (forOwnerWithTexts). */
  texts?: IndexTexts;
  /** Set while the index is being brought up to date (it may be half applied): its revision is not yet what it holds. */
  readonly refreshing?: Promise<void>;
}

interface Entry extends CachedIndex {
  bytes: number;
  /** Concurrent queries share one refresh. */
  refreshing?: Promise<void>;
  /** Rows applied since the index was last stored or loaded as a snapshot (or built), and whether one is being stored. */
  unsnapshotted: number;
  snapshotted: boolean;
  storing?: boolean;
  /** Set while its snapshot is being taken: a change of `meta` tells it first. */
  taking?: SnapshotTaking;
  /** Memories in the index without their vector yet (being embedded in the background), by id, with the text that is. */
  awaiting?: Map<number, string>;
}

/** A memory to embed in the background, for the cached index that waits for it. */
interface ToEmbed {
  entry: Entry;
  key: string;
  owner?: Owner;
  projectId: string;
  row: IndexedMemory;
  attempts: number;
  /** Sent in a call of its own: its batch was refused, and one text of it may be why. */
  alone?: boolean;
}

/** What /metrics reports of the index cache. */
export interface IndexCacheStats {
  entries: number;
  bytes: number;
  hits: number;
  misses: number;
  snapshots: { loaded: number; stored: number; failed: number };
}

/** A memory waiting for its vector: its entry in `awaiting` and its text (200 characters, a typical memory's). */
const AWAITING_BYTES = MAP_ENTRY_BYTES + stringBytes('x'.repeat(200));

const ownerKey = (owner: Owner) => `u\u0000${owner.projectId}\u0000${owner.tenantId}\u0000${owner.endUserId}`;

const YIELD_EVERY_ROWS = 2000;
/** Builds read on a thread of their own (build-reader.ts; starting one costs ~0.1 s). */
const BUILD_READER = { minRows: 20_000, idleCores: 0.5 };
/** The background refresh looks again at end users changed this long before its last run (writes commit after their time). */
const REFRESH_OVERLAP_MS = 60_000;
/** A built index is stored this long after its build: taking it (~0.3 s CPU at 100,000) lets its queries go first. */
const STORE_AFTER_MS = 1_000;

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
  private readonly snapshots = { loaded: 0, stored: 0, failed: 0 };
  /** Large end users changed after this time are looked at by the next refreshLargeOwners. */
  private changedAfter = new Date(0).toISOString();

  /** How long taking a snapshot runs before it gives the event loop back (engine/snapshot.ts); 0: after every step (tests). */
  snapshotSliceMs = SLICE_MS;
  /** The background embedding's first pause after a failure (tests shorten it). */
  embedBackoffMs = EMBED_BACKOFF_MS;
  /** Builds from scratch of at least minRows rows read them on the build reader's thread when idleCores are idle. */
  buildReader = { ...BUILD_READER };

  /** snapshotMinMemories: end users with at least this many memories get their index stored (snapshots.ts); 0: never. */
  constructor(
    private readonly database: Database,
    private readonly embeddings: EmbeddingStore,
    private readonly maxBytes: number,
    private readonly projectMaxMemories: number,
    private readonly snapshotMinMemories = 0,
    contextCacheShare?: number,
  ) {
    this.indexOptions = { embedder: null, contextCacheShare };
  }

  /** How its indexes are made and restored: no built-in vectors; the context postings they keep (MemoryIndexOptions). */
  private readonly indexOptions: MemoryIndexOptions;

  /**
   * The owner's index as held, without reading the revision: for a caller that reads the revision
   * together with what it needs next and keeps its answer only if it is the one the index was of
   * when searched, and the index was not being refreshed then (then `confirmed`). Undefined when
   * none is held or it is being brought up to date.
   */
  held(owner: Owner): CachedIndex | undefined {
    const key = ownerKey(owner);
    const entry = this.entries.get(key);
    if (!entry || entry.refreshing || entry.revision === 0) return undefined;
    // Most recently used last.
    this.entries.delete(key);
    this.entries.set(key, entry);
    // What its last searches kept (the context postings) counts from now.
    this.account(entry);
    return entry;
  }

  /** A held index turned out current (for /metrics, as a lookup answered from a current index). */
  confirmed(): void {
    this.hits++;
  }

  /** The owner's index, current; `lookup` false when bringing it up to date is no use of it (a forget applied). */
  async forOwner(owner: Owner, lookup = true): Promise<CachedIndex> {
    const key = ownerKey(owner);
    const snapshots = this.snapshotMinMemories > 0;
    return this.use(
      key,
      lookup,
      () => revisionOf(this.database.db, owner),
      async (entry, revision) => {
        if (snapshots && entry.revision === 0 && entry.index.size === 0) {
          const stored = await loadSnapshot(this.database, owner, this.embeddings.id, this.indexOptions);
          if (stored && stored.revision <= revision) {
            Object.assign(entry, {
              index: stored.index,
              meta: stored.meta,
              revision: stored.revision,
              texts: undefined,
              snapshotted: true,
            });
            this.snapshots.loaded++;
          }
        }
        let applied = 0;
        if (entry.revision === 0) {
          // From scratch: the rows a page at a time, each indexed (and dropped) before the next is read.
          const awaitVector = (row: IndexedMemory) => this.awaitVector(entry, row, owner.projectId, { owner, key });
          applied = await buildFromScratch(this.database, this.embeddings, owner, entry, this.buildReader, awaitVector);
          this.embedSoon();
          this.fit(entry);
        } else {
          const { restart, rows } = await ownerChangesSince(this.database.db, owner, entry.revision);
          if (restart) this.clear(entry);
          const building = entry.index.size === 0;
          applied = await this.apply(entry, owner.projectId, rows, { owner, key });
          if (building) this.fit(entry);
        }
        entry.revision = revision;
        entry.unsnapshotted += applied;
        if (snapshots) this.maybeStore(key, owner, entry);
      },
    );
  }

  /**
   * The owner's index brought up to date, with the texts of its memories (IndexTexts), read the first time. They
   * are kept only if no refresh began while they were read (one may have applied rows the read did not see); else
   * they serve this call alone, as a read of the database's current rows.
   */
  async forOwnerWithTexts(owner: Owner): Promise<CachedIndex & { texts: IndexTexts }> {
    const entry = (await this.forOwner(owner)) as Entry;
    if (entry.texts) return entry as Entry & { texts: IndexTexts };
    const { index, revision } = entry;
    const texts = await IndexTexts.read(this.database.db, owner);
    if (entry.refreshing || entry.index !== index || entry.revision !== revision || entry.texts)
      return { index, meta: entry.meta, revision, texts };
    entry.texts = texts;
    this.account(entry);
    return entry as Entry & { texts: IndexTexts };
  }

  /**
   * Background upkeep (the `retrieval.snapshots` chore): brings the index of every large end user
   * whose memories changed since the last run up to date unless its stored snapshot is current,
   * which stores a snapshot when it was built or has changed enough (maybeStore). So the first
   * query after an import, or in a new process, loads an index instead of building it. Returns how
   * many indexes it brought up to date.
   */
  async refreshLargeOwners(): Promise<number> {
    if (this.snapshotMinMemories === 0) return 0;
    const started = Date.now();
    let refreshed = 0;
    for (const { owner, revision } of await largeOwnersChangedAfter(
      this.database.db,
      this.changedAfter,
      this.snapshotMinMemories,
    )) {
      if ((await snapshotRevision(this.database.db, owner, this.embeddings.id)) === revision) continue;
      await this.forOwner(owner);
      refreshed++;
    }
    this.changedAfter = new Date(started - REFRESH_OVERLAP_MS).toISOString();
    return refreshed;
  }

  /**
   * Stores a large index once built, and again after changes of a tenth of it: STORE_AFTER_MS later
   * unless a refresh is under way then (the next refresh decides again), in the background; a
   * failure leaves the previous snapshot, which is only slower to catch up from. It is taken in
   * slices as it is when taking begins, the index of exactly entry.revision, while refreshes go on.
   */
  private maybeStore(key: string, owner: Owner, entry: Entry): void {
    const size = entry.index.size;
    // A snapshot is taken once every memory has its vector (one taken before would keep the gap).
    if (entry.storing || size < this.snapshotMinMemories || (entry.awaiting?.size ?? 0) > 0) return;
    if (entry.snapshotted && entry.unsnapshotted < Math.max(1000, size / 10)) return;
    entry.storing = true;
    setTimeout(() => {
      if (this.entries.get(key) !== entry || entry.refreshing) {
        entry.storing = false;
        return;
      }
      const applied = entry.unsnapshotted;
      const {
        revision,
        index: { size: memories },
      } = entry;
      const taking = new SnapshotTaking(entry.index, entry.meta, this.snapshotSliceMs);
      entry.taking = taking;
      taking.taken
        .finally(() => {
          entry.taking = undefined;
        })
        .then((taken) => storeSnapshot(this.database, owner, this.embeddings.id, { ...taken, revision, memories }))
        .then((outcome) => {
          // Forgotten since it was taken: the next refresh (which that forgetting causes) stores a new one.
          if (outcome === 'forgotten') return;
          if (outcome === 'stored') this.snapshots.stored++;
          entry.snapshotted = true;
          entry.unsnapshotted -= applied;
        })
        .catch(() => {
          this.snapshots.failed++;
        })
        .finally(() => {
          entry.storing = false;
        });
    }, STORE_AFTER_MS).unref();
  }

  /** The whole project (or one tenant of it). Rebuilt when any end user's revision moves. */
  async forProject(projectId: string, tenantId: string | null): Promise<CachedIndex> {
    const key = `p\u0000${projectId}\u0000${tenantId ?? '*'}`;
    return this.use(
      key,
      true,
      () => projectRevision(this.database.db, projectId, tenantId),
      async (entry, revision) => {
        // A whole-project index lives in memory; past this size a request must name an end user.
        if ((await liveMemoryCount(this.database.db, [projectId])) > this.projectMaxMemories) {
          throw invalid(
            'X-End-User-ID',
            `The project holds more than ${this.projectMaxMemories} memories; send X-End-User-ID to compose for one end user`,
          );
        }
        entry.index = new MemoryIndex(this.indexOptions);
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
        this.fit(entry);
        entry.revision = revision;
      },
    );
  }

  /**
   * After an erasure of the owner's memories committed: their index lets them go now, a removed owner's goes whole, and
   * so do the project's (docs/api.md, What forgetting removes); then this thread's word cache and last query's parameters.
   */
  async forgotten(owner: Owner, purged: boolean): Promise<void> {
    const key = ownerKey(owner);
    const entry = this.entries.get(key);
    // A refresh under way ends first (it would put back what it counted of the entry).
    await entry?.refreshing?.catch(() => undefined);
    for (const [held, dropped] of this.entries)
      if ((purged && held === key) || held.startsWith(`p\u0000${owner.projectId}\u0000`)) this.letGo(held, dropped);
    // Not applied (the database failed): the index goes whole rather than hold the forgotten until its next use.
    if (entry && this.entries.get(key) === entry) await this.forOwner(owner, false).catch(() => this.letGo(key, entry));
    // What waited for a vector with a text forgotten (or of an index let go) leaves the queue now.
    this.toEmbed.prune();
    forgetWords();
    forgetLastQuery(this.database);
    leaveBufferPool();
  }

  private letGo(key: string, entry: Entry): void {
    if (this.entries.get(key) === entry && this.entries.delete(key)) this.totalBytes -= entry.bytes;
    entry.awaiting?.clear();
  }

  /** Drops cached indexes of a project, and the vectors held by text (after an embedder change, say). */
  invalidateProject(projectId: string): void {
    this.embeddings.forgetTexts();
    for (const [key, entry] of this.entries) {
      if (key.split('\u0000')[1] === projectId) {
        this.entries.delete(key);
        this.totalBytes -= entry.bytes;
      }
    }
  }

  /** The entry at `key`, brought to the current revision; a `lookup` counts (hit or miss) and makes it the newest. */
  private async use(
    key: string,
    lookup: boolean,
    currentRevision: () => Promise<number>,
    refresh: (entry: Entry, revision: number) => Promise<void>,
  ): Promise<CachedIndex> {
    let entry = this.entries.get(key);
    if (!entry) {
      entry = {
        index: new MemoryIndex(this.indexOptions),
        meta: new DocMetas(),
        revision: 0,
        bytes: 0,
        unsnapshotted: 0,
        snapshotted: false,
      };
      this.entries.set(key, entry);
    } else if (lookup) {
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
    if (lookup && fresh) this.hits++;
    else if (lookup) this.misses++;
    return entry;
  }

  /** A built entry's arrays cut to what they hold (MemoryIndex.fit, DocMetas.fit). */
  private fit(entry: Entry): void {
    entry.index.fit();
    entry.meta.fit();
  }

  /** Drops what an entry holds, to be built again from every live row (ownerChangesSince's restart). */
  private clear(entry: Entry): void {
    entry.index = new MemoryIndex(this.indexOptions);
    entry.meta.clear();
    entry.awaiting?.clear();
    entry.texts = undefined;
    entry.snapshotted = false;
    entry.unsnapshotted = 0;
  }

  private async apply(
    entry: Entry,
    projectId: string,
    rows: IndexedMemory[],
    opts: { owner?: Owner; key?: string },
  ): Promise<number> {
    if (rows.length === 0) return 0;
    const liveIds = rows.filter((r) => !r.deleted).map((r) => r.id);
    const [vectors, feedback] = await Promise.all([
      this.embeddings.storedVectors(this.database, liveIds),
      feedbackSums(this.database.db, liveIds, opts.owner),
    ]);
    let since = 0;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      // A large build yields now and then to other requests; this entry's queries wait for the whole refresh (use()).
      if (++since === YIELD_EVERY_ROWS) {
        since = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
      entry.taking?.metaChanging(row.id);
      entry.texts?.apply(row);
      if (row.deleted) {
        forgetWords(); // (its words leave this thread's cache of words as its terms leave the index)
        entry.index.remove(row.id);
        entry.meta.delete(row.id);
        entry.awaiting?.delete(row.id);
        continue;
      }
      if (this.embeddings.embedder && !vectors.has(row.id)) this.awaitVector(entry, row, projectId, opts);
      else entry.awaiting?.delete(row.id);
      const prepared = prepareRow(row);
      const { scan, createdAt } = prepared;
      entry.index.upsert(
        {
          id: row.id,
          text: row.text,
          sessionId: row.session_id,
          createdAt,
          importance: row.importance,
          feedback: feedback.get(row.id) ?? 0,
          speaker: row.speaker,
          tags: row.tags,
        },
        vectors.get(row.id),
        scan,
      );
      entry.meta.set(row.id, rowMeta(row, prepared));
    }
    this.embedSoon();
    return rows.length;
  }

  /** A memory without a stored vector is searchable by its words now and gets its vector in the background. */
  private awaitVector(
    entry: Entry,
    row: IndexedMemory,
    projectId: string,
    opts: { owner?: Owner; key?: string },
  ): void {
    (entry.awaiting ??= new Map()).set(row.id, row.text);
    this.toEmbed.push([
      { entry, key: opts.key ?? '', ...(opts.owner ? { owner: opts.owner } : {}), projectId, row, attempts: 0 },
    ]);
  }

  /** Memories waiting for a vector, a queue per project, taken a batch at a time (core/fair-queue.ts). */
  private readonly toEmbed = new FairQueue<ToEmbed>(
    EMBED_BATCH,
    (item) => item.entry.awaiting?.get(item.row.id) === item.row.text,
  );
  private embedding = false;
  private closed = false;
  /** The background embedding's pause after a failure, while it lasts. */
  private backoff?: NodeJS.Timeout;
  /** Background embedding: batches embedded (and stored), and failed tries (for /metrics and tests). */
  readonly embedded = { batches: 0, failures: 0 };

  /**
   * Embeds the memories waiting for a vector, a batch per provider call, one batch at a time, and gives each to the
   * cached index still waiting for it with that text (a memory changed or forgotten meanwhile is not). After a failed
   * call the loop pauses (EMBED_BACKOFF_MS, doubled by each failure in a row, at most EMBED_BACKOFF_MAX_MS) and the
   * batch goes back in its queue: tried again until it is stored, unless the provider refused it (EMBED_ATTEMPTS).
   * The loop never throws (a provider or database failure is counted; the memories keep their words meanwhile).
   */
  private embedSoon(): void {
    if (this.embedding || this.closed || this.toEmbed.empty) return;
    this.embedding = true;
    void (async () => {
      // A batch lives in embedNext's frame alone: nothing of a forgotten memory waits out a pause here.
      for (let pause = 0; !this.closed && !this.toEmbed.empty; ) {
        pause = await this.embedNext(pause);
        if (pause > 0) await new Promise<void>((resolve) => (this.backoff = setTimeout(resolve, pause)).unref());
      }
    })()
      // Whatever else fails here is counted, never left to reject: a background loop must not take the process down.
      .catch(() => void this.embedded.failures++)
      .finally(() => {
        this.embedding = false;
        this.embedSoon();
      });
  }

  /** Embeds the next batch; the pause to make before the next one (0 after a success). */
  private async embedNext(pause: number): Promise<number> {
    const next = this.toEmbed.next();
    if (!next || next.batch.length === 0) return 0;
    const { projectId, batch } = next;
    const vectors = new Map<number, Float32Array>();
    try {
      const rows = batch.map((b) => b.row);
      await this.embeddings.store(this.database, projectId, rows, vectors);
      this.embedded.batches++;
    } catch (error) {
      this.embedded.failures++;
      if (!refused(error)) this.toEmbed.push(batch);
      // A refused batch is sent again a memory a call, so that a text the provider refuses keeps no other from its vector.
      else if (batch.length > 1) this.toEmbed.push(batch.map((b) => Object.assign(b, { alone: true })));
      else if (++batch[0]!.attempts < EMBED_ATTEMPTS) this.toEmbed.push(batch);
      return Math.min(EMBED_BACKOFF_MAX_MS, pause === 0 ? this.embedBackoffMs : 2 * pause);
    }
    const done = new Set<Entry>();
    for (const { entry, row } of batch) {
      const vector = vectors.get(row.id);
      if (!vector || entry.awaiting?.get(row.id) !== row.text) continue;
      entry.index.setVector(row.id, vector);
      entry.awaiting.delete(row.id);
      done.add(entry);
    }
    for (const item of batch) {
      if (!done.has(item.entry)) continue;
      done.delete(item.entry);
      this.account(item.entry);
      if (
        item.owner &&
        this.snapshotMinMemories > 0 &&
        item.entry.awaiting?.size === 0 &&
        this.entries.get(item.key) === item.entry
      ) {
        this.maybeStore(item.key, item.owner, item.entry);
      }
    }
    return 0;
  }

  /** Stops the background embedding (the database is closing): what waits for a vector is dropped. */
  close(): void {
    this.closed = true;
    clearTimeout(this.backoff);
    this.toEmbed.clear();
  }

  private account(entry: Entry): void {
    const bytes =
      entry.index.approxBytes() +
      entry.meta.bytes +
      (entry.texts?.bytes ?? 0) +
      (entry.awaiting?.size ?? 0) * AWAITING_BYTES;
    this.totalBytes += bytes - entry.bytes;
    entry.bytes = bytes;
    for (const [key, oldest] of this.entries) {
      if (this.totalBytes <= this.maxBytes || oldest === entry) break;
      this.entries.delete(key);
      this.totalBytes -= oldest.bytes;
    }
  }

  async stats(): Promise<IndexCacheStats> {
    return {
      entries: this.entries.size,
      bytes: this.totalBytes,
      hits: this.hits,
      misses: this.misses,
      snapshots: { ...this.snapshots },
    };
  }
}
