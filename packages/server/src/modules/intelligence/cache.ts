import { jsonBytes, MAP_ENTRY_BYTES, objectBytes, stringBytes } from '../../engine/index.js';
import type { LlmProvider } from '../../engine/llm/index.js';
import type { Extraction, Extractor, ModelFact } from '../../engine/nlp/index.js';
import type { Database } from '../../store/database.js';
import { liveMemoryCountOf, ownerChangesSince, revisionOf, type Owner } from '../memories/index.js';
import { clusterMemories, type Cluster } from './clusters.js';
import { ModelFactReader } from './model-reading.js';
import { deriveKnowledge, factIndex, type FactIndex, type Knowledge } from './knowledge.js';
import { ontologyRevision, type Extractors } from './ontology.js';

export interface Extracted {
  id: number;
  createdAt: string;
  supersededBy: number | null;
  isSummary: boolean;
  extraction: Extraction;
  /** Kept only to cluster; dropped with the memory. */
  text: string;
}

/** One end user's derived knowledge at one revision; the aggregate views are computed on first use. */
export class OwnerView {
  private knowledgeMemo?: Knowledge;
  private clustersMemo?: Cluster[];
  private factsMemo?: FactIndex;

  constructor(
    readonly owner: Owner,
    readonly revision: number,
    readonly items: ReadonlyMap<number, Extracted>,
  ) {}

  knowledge(): Knowledge {
    return (this.knowledgeMemo ??= deriveKnowledge([...this.items.values()], this.owner.endUserId));
  }

  facts(): FactIndex {
    return (this.factsMemo ??= factIndex(this.knowledge()));
  }

  clusters(): Cluster[] {
    return (this.clustersMemo ??= clusterMemories(
      [...this.items.values()]
        .filter((m) => !m.isSummary)
        .map((m) => ({ id: m.id, text: m.text, entities: m.extraction.entities.map((e) => e.name) })),
    ));
  }
}

/**
 * How old a read of a project's ontology revision the query path (forOwnerWithin) may use: an
 * ontology replaced meanwhile reorders answers by the old one's facts for at most this long (its
 * reclassification of the project's memories takes longer anyway); the graph views read it every time.
 */
export const ONTOLOGY_RECHECK_MS = 1_000;

/**
 * What one extracted memory holds (engine heap-bytes): its entries in the items map and in its
 * view's copy, the object, its text and time, its extraction. Measured on LoCoMo texts (2,000 a
 * user, heap after gc): this counts the items and the view's derived knowledge (a fifth more)
 * together within 5 % (jsonBytes counts an extraction's shared empty arrays as its own).
 */
function extractedBytes(e: Extracted): number {
  return (
    2 * MAP_ENTRY_BYTES + objectBytes(6) + stringBytes(e.text) + stringBytes(e.createdAt) + jsonBytes(e.extraction)
  );
}

const ownerKey = (owner: Owner) => `${owner.projectId}\u0000${owner.tenantId}\u0000${owner.endUserId}`;

interface Entry {
  /** What its items take (extractedBytes), its view's copy of the map and derived knowledge included. */
  bytes: number;
  revision: number;
  ontologyRevision: number;
  items: Map<number, Extracted>;
  view?: OwnerView;
  refreshing?: Promise<void>;
}

/**
 * Per end user: every live memory's extraction, validated against the database on every use like
 * the retrieval index cache (the end user's revision and the project's ontology revision are two
 * indexed reads, which the query path spares: forOwnerWithin); a stale entry re-extracts only the rows whose change sequence is newer, and a
 * forgotten memory leaves the entry, so nothing it alone supported survives. LRU-bounded by owners.
 */
export class IntelligenceCache {
  private readonly entries = new Map<string, Entry>();

  /** The chat model's reader of personal facts (model-reading.ts), when one is configured for it. */
  readonly reader: ModelFactReader | null;

  constructor(
    private readonly database: Database,
    private readonly extractors: Extractors,
    private readonly maxOwners: number,
    private readonly maxBytes = Number.POSITIVE_INFINITY,
    factModel: { llm: LlmProvider; backoffMs?: number } | null = null,
  ) {
    this.reader = factModel
      ? new ModelFactReader(
          database,
          factModel.llm,
          (owner, read) => void this.modelFactsRead(owner, read).catch(() => undefined),
          factModel.backoffMs,
        )
      : null;
  }

  /** Bytes the cached views hold (counted: extractedBytes), summed afresh (at most maxOwners entries). */
  get bytes(): number {
    let bytes = 0;
    for (const entry of this.entries.values()) bytes += entry.bytes;
    return bytes;
  }

  /** Least recently used entries dropped until at most maxOwners and maxBytes are held (`keep` stays). */
  private evict(keep: Entry): void {
    let bytes = this.bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxOwners && bytes <= this.maxBytes) break;
      if (entry === keep) continue;
      this.entries.delete(oldest);
      bytes -= entry.bytes;
    }
  }

  /** End users found to have more memories than a caller of forOwnerWithin allowed (not counted again by this process). */
  private readonly tooLarge = new Set<string>();

  /**
   * The owner's view, unless the owner has more than `most` memories (null then, and nothing is
   * extracted): for a caller that may go without it (the current fact first) rather than pay the
   * first extraction and each revision's replay of a large end user. `seenRevision`: the owner's
   * revision as the caller just read it from the database (a query ranked on it); a view of that
   * revision or a later one is used without reading it again, and the project's ontology revision
   * is read at most once per ONTOLOGY_RECHECK_MS, so a steady query costs no statement here.
   */
  async forOwnerWithin(owner: Owner, most: number, seenRevision?: number): Promise<OwnerView | null> {
    const key = ownerKey(owner);
    if (this.tooLarge.has(key)) return null;
    const entry = this.entries.get(key);
    const size = entry?.view ? entry.items.size : await liveMemoryCountOf(this.database.db, owner, most + 1);
    if (size > most) {
      if (this.tooLarge.size >= this.maxOwners) this.tooLarge.clear();
      this.tooLarge.add(key);
      return null;
    }
    return this.forOwner(owner, { revision: seenRevision, ontologyRecheckMs: ONTOLOGY_RECHECK_MS });
  }

  /**
   * The owner's view at its current revision. `known.revision`: the owner's revision as just read
   * by the caller (not read again; a view already past it is current enough); `known.ontologyRecheckMs`:
   * how old a read of the project's ontology revision may be (read on every call without it).
   */
  async forOwner(owner: Owner, known: { revision?: number; ontologyRecheckMs?: number } = {}): Promise<OwnerView> {
    const key = ownerKey(owner);
    let entry = this.entries.get(key);
    if (entry) this.entries.delete(key);
    entry ??= { bytes: 0, revision: 0, ontologyRevision: 0, items: new Map() };
    this.entries.set(key, entry);
    this.evict(entry);
    for (let first = true; ; first = false) {
      // A revision the caller read is used once: after waiting for a refresh, read the current one.
      const seen = first ? known.revision : undefined;
      const [revision, ontology] = await Promise.all([
        seen ?? revisionOf(this.database.db, owner),
        this.ontologyRevisionOf(owner.projectId, known.ontologyRecheckMs ?? 0),
      ]);
      const current = seen !== undefined ? entry.revision >= revision : entry.revision === revision;
      if (current && ontology === entry.ontologyRevision && entry.view) return entry.view;
      if (entry.refreshing) {
        await entry.refreshing.catch(() => undefined);
        continue;
      }
      const refreshed = entry;
      refreshed.refreshing = this.refresh(refreshed, owner, revision, ontology).finally(() => {
        refreshed.refreshing = undefined;
      });
      try {
        await refreshed.refreshing;
      } catch (error) {
        // A half-applied refresh must not be trusted: start from scratch next time.
        this.entries.delete(key);
        throw error;
      }
      this.evict(refreshed);
      return refreshed.view!;
    }
  }

  /**
   * After an erasure of the owner's memories committed: their view lets them go now, not at its next use, and a
   * removed owner's goes whole (docs/api.md, What forgetting removes).
   */
  async forgotten(owner: Owner, purged: boolean, ids: ReadonlySet<number> = new Set()): Promise<void> {
    this.reader?.forget(owner, purged ? 'all' : ids);
    const key = ownerKey(owner);
    const entry = this.entries.get(key);
    await entry?.refreshing?.catch(() => undefined);
    if (purged) {
      this.tooLarge.delete(key);
      if (this.entries.get(key) === entry) this.entries.delete(key);
    } else if (entry && this.entries.get(key) === entry)
      // Not applied (the database failed): the view goes whole rather than hold the forgotten until its next use.
      await this.forOwner(owner).catch(() => this.entries.get(key) === entry && this.entries.delete(key));
  }

  /** The project's extractor as its ontology now stands (to read new statements as its memories are read). */
  async extractorOf(projectId: string): Promise<Extractor> {
    return this.extractors.forProject(projectId, await this.ontologyRevisionOf(projectId, 0));
  }

  /** Per project: its ontology revision and when it was read (LRU-bounded like the entries). */
  private readonly ontologyReads = new Map<string, { revision: number; at: number }>();

  private async ontologyRevisionOf(projectId: string, recheckMs: number): Promise<number> {
    const held = this.ontologyReads.get(projectId);
    if (held && recheckMs > 0 && performance.now() - held.at < recheckMs) return held.revision;
    const at = performance.now();
    const revision = await ontologyRevision(this.database.db, projectId);
    this.ontologyReads.delete(projectId);
    this.ontologyReads.set(projectId, { revision, at });
    for (const [oldest] of this.ontologyReads) {
      if (this.ontologyReads.size <= this.maxOwners) break;
      this.ontologyReads.delete(oldest);
    }
    return revision;
  }

  private async refresh(entry: Entry, owner: Owner, revision: number, ontology: number): Promise<void> {
    if (ontology !== entry.ontologyRevision) {
      entry.items.clear();
      entry.bytes = 0;
      entry.revision = 0;
    }
    const extractor = await this.extractors.forProject(owner.projectId, ontology);
    const { restart, rows } = await ownerChangesSince(this.database.db, owner, entry.revision);
    if (restart) {
      entry.items.clear();
      entry.bytes = 0;
    }
    const live = rows.filter((r) => !r.deleted);
    const byModel = this.reader ? await this.reader.stored(live) : undefined;
    const unread = [];
    for (const row of rows) {
      const old = entry.items.get(row.id);
      if (old) entry.bytes -= extractedBytes(old);
      if (row.deleted) {
        entry.items.delete(row.id);
        continue;
      }
      const read = byModel?.get(row.id);
      if (byModel && !read) unread.push(row);
      const rules = extractor.extract(row.text, row.speaker);
      const extracted: Extracted = {
        id: row.id,
        createdAt: row.created_at,
        supersededBy: row.superseded_by,
        isSummary: row.is_summary,
        text: row.text,
        extraction: read ? extractor.withFacts(rules, read) : rules,
      };
      entry.items.set(row.id, extracted);
      entry.bytes += extractedBytes(extracted);
    }
    // Read by the model in the background; their rules' facts count meanwhile (modelFactsRead adds the model's).
    if (unread.length > 0) this.reader!.want(owner, unread);
    // changesSince read at least up to `revision`; a write committed meanwhile is picked up next time.
    entry.revision = revision;
    entry.ontologyRevision = ontology;
    entry.view = new OwnerView(owner, revision, new Map(entry.items));
  }

  /**
   * Readings the model gave for memories of an owner whose view is held: added to those memories' extractions
   * (still of the text read), and the view rebuilt at the same revision. An owner not held reads them from the
   * table when next viewed.
   */
  private async modelFactsRead(owner: Owner, read: Map<number, { text: string; facts: ModelFact[] }>): Promise<void> {
    const entry = this.entries.get(ownerKey(owner));
    if (!entry) return;
    const ontology = entry.ontologyRevision;
    const extractor = await this.extractors.forProject(owner.projectId, ontology);
    await entry.refreshing?.catch(() => undefined);
    // From here to the end nothing awaits: no refresh interleaves. A refresh to another ontology read them itself.
    if (this.entries.get(ownerKey(owner)) !== entry || !entry.view || entry.ontologyRevision !== ontology) return;
    let changed = false;
    for (const [id, { text, facts }] of read) {
      const item = entry.items.get(id);
      if (!item || item.text !== text) continue;
      const updated = { ...item, extraction: extractor.withFacts(item.extraction, facts) };
      entry.bytes += extractedBytes(updated) - extractedBytes(item);
      entry.items.set(id, updated);
      changed = true;
    }
    if (changed) entry.view = new OwnerView(owner, entry.revision, new Map(entry.items));
  }

  /** Stops the model's background reading (the database is closing). */
  close(): void {
    this.reader?.close();
  }
}
