import type { Extraction } from '../../engine/nlp/index.js';
import type { Database } from '../../store/database.js';
import { changesSince, liveMemoryCountOf, revisionOf, type Owner } from '../memories/index.js';
import { clusterMemories, type Cluster } from './clusters.js';
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

  constructor(readonly owner: Owner, readonly revision: number, readonly items: ReadonlyMap<number, Extracted>) {}

  knowledge(): Knowledge {
    return (this.knowledgeMemo ??= deriveKnowledge([...this.items.values()], this.owner.endUserId));
  }

  facts(): FactIndex {
    return (this.factsMemo ??= factIndex(this.knowledge()));
  }

  clusters(): Cluster[] {
    return (this.clustersMemo ??= clusterMemories(
      [...this.items.values()].filter((m) => !m.isSummary).map((m) => ({ id: m.id, text: m.text, entities: m.extraction.entities.map((e) => e.name) })),
    ));
  }
}

interface Entry {
  revision: number;
  ontologyRevision: number;
  items: Map<number, Extracted>;
  view?: OwnerView;
  refreshing?: Promise<void>;
}

/**
 * Per end user: every live memory's extraction, validated against the database on every use like
 * the retrieval index cache (the end user's revision and the project's ontology revision are two
 * indexed reads); a stale entry re-extracts only the rows whose change sequence is newer, and a
 * forgotten memory leaves the entry, so nothing it alone supported survives. LRU-bounded by owners.
 */
export class IntelligenceCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly database: Database, private readonly extractors: Extractors, private readonly maxOwners: number) {}

  /** End users found to have more memories than a caller of forOwnerWithin allowed (not counted again by this process). */
  private readonly tooLarge = new Set<string>();

  /**
   * The owner's view, unless the owner has more than `most` memories (null then, and nothing is
   * extracted): for a caller that may go without it (the current fact first) rather than pay the
   * first extraction and each revision's replay of a large end user.
   */
  async forOwnerWithin(owner: Owner, most: number): Promise<OwnerView | null> {
    const key = `${owner.projectId}\u0000${owner.tenantId}\u0000${owner.endUserId}`;
    if (this.tooLarge.has(key)) return null;
    const entry = this.entries.get(key);
    const size = entry?.view ? entry.items.size : await liveMemoryCountOf(this.database.db, owner);
    if (size > most) {
      if (this.tooLarge.size >= this.maxOwners) this.tooLarge.clear();
      this.tooLarge.add(key);
      return null;
    }
    return this.forOwner(owner);
  }

  async forOwner(owner: Owner): Promise<OwnerView> {
    const key = `${owner.projectId}\u0000${owner.tenantId}\u0000${owner.endUserId}`;
    let entry = this.entries.get(key);
    if (entry) this.entries.delete(key);
    entry ??= { revision: 0, ontologyRevision: 0, items: new Map() };
    this.entries.set(key, entry);
    for (const [oldest] of this.entries) {
      if (this.entries.size <= this.maxOwners) break;
      this.entries.delete(oldest);
    }
    for (;;) {
      const [revision, ontology] = await Promise.all([revisionOf(this.database.db, owner), ontologyRevision(this.database.db, owner.projectId)]);
      if (revision === entry.revision && ontology === entry.ontologyRevision && entry.view) return entry.view;
      if (entry.refreshing) {
        await entry.refreshing.catch(() => undefined);
        continue;
      }
      const current = entry;
      current.refreshing = this.refresh(current, owner, revision, ontology).finally(() => {
        current.refreshing = undefined;
      });
      try {
        await current.refreshing;
      } catch (error) {
        // A half-applied refresh must not be trusted: start from scratch next time.
        this.entries.delete(key);
        throw error;
      }
      return current.view!;
    }
  }

  private async refresh(entry: Entry, owner: Owner, revision: number, ontology: number): Promise<void> {
    if (ontology !== entry.ontologyRevision) {
      entry.items.clear();
      entry.revision = 0;
    }
    const extractor = await this.extractors.forProject(owner.projectId, ontology);
    const rows = await changesSince(this.database.db, owner, entry.revision);
    for (const row of rows) {
      if (row.deleted) {
        entry.items.delete(row.id);
        continue;
      }
      entry.items.set(row.id, {
        id: row.id, createdAt: row.created_at, supersededBy: row.superseded_by, isSummary: row.is_summary, text: row.text,
        extraction: extractor.extract(row.text, row.speaker),
      });
    }
    // changesSince read at least up to `revision`; a write committed meanwhile is picked up next time.
    entry.revision = revision;
    entry.ontologyRevision = ontology;
    entry.view = new OwnerView(owner, revision, new Map(entry.items));
  }
}
