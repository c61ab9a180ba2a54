import { MemoryIndex, SNAPSHOT_FORMAT } from '../../engine/index.js';
import { nowIso, type Database, type Executor } from '../../store/database.js';
import { forgottenSince, ownersOfMemories, type Owner } from '../memories/index.js';

/**
 * Stored indexes of large end users (this module owns index_snapshots): building an index reads
 * and analyses every memory (seconds at 100,000), restoring one copies arrays. A snapshot is the
 * index and its filter metadata as of a revision; whoever loads it catches up from the changes
 * after that revision, so a stale snapshot is never wrong, only slower. It is a copy of memory
 * text (as terms), so forgetting any of the end user's memories deletes it in the same transaction
 * (eraseIndexSnapshots), and a snapshot is stored only if nothing was forgotten since its revision
 * (forgottenSince, under the lock that orders it with forgetting).
 */

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

export interface Snapshot {
  index: MemoryIndex;
  meta: Map<number, DocMeta>;
  revision: number;
}

// A doc's filter metadata as stored: [id, tags, source, createdAt, metadata, isSummary, sessionId, eventFrom?, eventTo?].
type StoredMeta = [number, string[], string | null, number, Record<string, unknown>, boolean, string | null, number?, number?];

function encodeMeta(meta: Map<number, DocMeta>): Buffer {
  const rows: StoredMeta[] = [];
  for (const [id, m] of meta) {
    const row: StoredMeta = [id, m.tags, m.source, m.createdAt, m.metadata, m.isSummary, m.sessionId];
    if (m.event) row.push(m.event.from, m.event.to);
    rows.push(row);
  }
  return Buffer.from(JSON.stringify(rows), 'utf8');
}

function decodeMeta(bytes: Uint8Array): Map<number, DocMeta> {
  const rows = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as StoredMeta[];
  const meta = new Map<number, DocMeta>();
  for (const [id, tags, source, createdAt, metadata, isSummary, sessionId, from, to] of rows) {
    meta.set(id, { tags, source, createdAt, metadata, isSummary, sessionId, ...(from !== undefined ? { event: { from, to: to! } } : {}) });
  }
  return meta;
}

const ownerIs = (owner: Owner) => ({ project_id: owner.projectId, tenant_id: owner.tenantId, end_user_id: owner.endUserId });

/** The owner's stored index built with this embedder, or null (none, another embedder or format, unreadable). */
export async function loadSnapshot(db: Executor, owner: Owner, embedder: string): Promise<Snapshot | null> {
  const row = await db.selectFrom('index_snapshots').select(['revision', 'index_data', 'doc_meta'])
    .where('project_id', '=', owner.projectId).where('tenant_id', '=', owner.tenantId).where('end_user_id', '=', owner.endUserId)
    .where('embedder', '=', embedder).where('format', '=', SNAPSHOT_FORMAT)
    .executeTakeFirst();
  if (!row) return null;
  try {
    return { index: MemoryIndex.restore(row.index_data, { embedder: null }), meta: decodeMeta(row.doc_meta), revision: Number(row.revision) };
  } catch {
    // Unreadable (written by another version): the caller builds, and the next store replaces it.
    return null;
  }
}

/**
 * Stores an index taken at `revision` unless something of the owner was forgotten since then (its
 * text would survive in the snapshot) or a snapshot as new is already stored. Returns whether it did.
 */
export async function storeSnapshot(
  database: Database, owner: Owner, embedder: string, taken: { index: Uint8Array; meta: Map<number, DocMeta>; revision: number; memories: number },
): Promise<boolean> {
  const docMeta = encodeMeta(taken.meta);
  return database.db.transaction().execute(async (trx) => {
    if (await forgottenSince(database, trx, owner, taken.revision)) return false;
    const result = await trx.insertInto('index_snapshots')
      .values({
        ...ownerIs(owner), revision: taken.revision, embedder, format: SNAPSHOT_FORMAT, memories: taken.memories,
        index_data: Buffer.from(taken.index.buffer, taken.index.byteOffset, taken.index.byteLength), doc_meta: docMeta, created_at: nowIso(),
      })
      .onConflict((oc) => oc.columns(['project_id', 'tenant_id', 'end_user_id']).doUpdateSet((eb) => ({
        revision: eb.ref('excluded.revision'), embedder: eb.ref('excluded.embedder'), format: eb.ref('excluded.format'),
        memories: eb.ref('excluded.memories'), index_data: eb.ref('excluded.index_data'), doc_meta: eb.ref('excluded.doc_meta'),
        created_at: eb.ref('excluded.created_at'),
      })).where('index_snapshots.revision', '<', taken.revision))
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  });
}

/** Erase hook: forgetting memories deletes their owners' snapshots. */
export async function eraseIndexSnapshots(trx: Executor, memoryIds: number[]): Promise<void> {
  const owners = new Map<string, Owner>();
  for (const row of await ownersOfMemories(trx, memoryIds)) {
    owners.set(JSON.stringify([row.project_id, row.tenant_id, row.end_user_id]), { projectId: row.project_id, tenantId: row.tenant_id, endUserId: row.end_user_id });
  }
  for (const owner of owners.values()) {
    await trx.deleteFrom('index_snapshots')
      .where('project_id', '=', owner.projectId).where('tenant_id', '=', owner.tenantId).where('end_user_id', '=', owner.endUserId)
      .execute();
  }
}
