import type { Selectable } from 'kysely';
import { write, type Effects, type WriteContext } from '../../core/unit-of-work.js';
import { AppError, invalid, notFound } from '../../core/errors.js';
import { decodeJson, encodeJson, type Database, type Executor } from '../../store/database.js';
import type { MemoryRelationsTable } from '../../store/schema.js';
import {
  clientRefsOf,
  getMemory,
  liveIdsByClientRef,
  MEMORY_LIMITS,
  memoriesHeld,
  recordHistory,
  type Owner,
} from '../memories/index.js';
import { SUMMARIZES, type RelationInput, type RelationView } from './schemas.js';

/** This module owns memory_relations: typed links between two memories of one end user. */

type RelationRow = Selectable<MemoryRelationsTable>;

const toRelation = (r: RelationRow): RelationView => ({
  id: r.id,
  source_id: r.source_id,
  target_id: r.target_id,
  type: r.type,
  metadata: decodeJson<Record<string, unknown>>(r.metadata),
  created_at: r.created_at,
});

const ownedRelations = (db: Executor, owner: Owner) =>
  db
    .selectFrom('memory_relations')
    .selectAll()
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId);

/** The part of a relation its memories' history records: no metadata, which may quote content. */
const linkOf = (r: RelationView) => ({ id: r.id, type: r.type, source_id: r.source_id, target_id: r.target_id });
/** Event payloads carry ids and the type, never metadata. */
const eventOf = (r: RelationView, owner: Owner) => ({
  relation_id: r.id,
  type: r.type,
  source_id: r.source_id,
  target_id: r.target_id,
  end_user_id: owner.endUserId,
});

/** A 404 that names the memory and the field that asked for it. */
export const memoryNotFound = (id: number, field: string) => new AppError('not_found', `Memory ${id} not found`, field);

/**
 * Inserts links (ignoring ones that exist) with a history entry on both memories; answers each
 * link, new or existing, in order. Runs inside the caller's transaction.
 */
export async function insertRelations(
  trx: Executor,
  ctx: WriteContext,
  effects: Effects,
  owner: Owner,
  links: Array<{
    source_id: number;
    target_id: number;
    type: string;
    metadata?: Record<string, unknown>;
    created_at?: string;
  }>,
): Promise<Array<{ relation: RelationView; created: boolean }>> {
  const out: Array<{ relation: RelationView; created: boolean }> = [];
  for (const link of links) {
    const inserted = await trx
      .insertInto('memory_relations')
      .values({
        project_id: owner.projectId,
        tenant_id: owner.tenantId,
        end_user_id: owner.endUserId,
        source_id: link.source_id,
        target_id: link.target_id,
        type: link.type,
        metadata: encodeJson(link.metadata ?? {}),
        created_at: link.created_at ?? effects.now,
      })
      .onConflict((oc) => oc.columns(['project_id', 'source_id', 'target_id', 'type']).doNothing())
      .returningAll()
      .executeTakeFirst();
    if (inserted) {
      out.push({ relation: toRelation(inserted), created: true });
      continue;
    }
    const existing = await ownedRelations(trx, owner)
      .where('source_id', '=', link.source_id)
      .where('target_id', '=', link.target_id)
      .where('type', '=', link.type)
      .executeTakeFirstOrThrow();
    out.push({ relation: toRelation(existing), created: false });
  }
  const created = out.filter((o) => o.created).map((o) => o.relation);
  await recordHistory(
    trx,
    ctx,
    created.flatMap((r) =>
      [r.source_id, r.target_id].map((memoryId) => ({
        memoryId,
        action: 'relate',
        changes: { relation: { before: null, after: linkOf(r) } },
      })),
    ),
    effects.now,
  );
  return out;
}

/** Relates two live memories of the owner; an equal link that exists is answered instead of a second one. */
export async function createRelation(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  input: RelationInput,
): Promise<{ relation: RelationView; created: boolean }> {
  if (input.source_id === input.target_id) throw invalid('target_id', 'a memory cannot be related to itself');
  if (input.metadata && Buffer.byteLength(encodeJson(input.metadata)) > MEMORY_LIMITS.metadataBytes) {
    throw invalid('metadata', `metadata must serialise to at most ${MEMORY_LIMITS.metadataBytes} bytes`);
  }
  return write(database, ctx, async (trx, effects) => {
    // Kept live until this commits: forgetting either one then finds the link and deletes it.
    const live = new Set(
      (await memoriesHeld(database, trx, owner, [input.source_id, input.target_id])).map((m) => m.id),
    );
    for (const field of ['source_id', 'target_id'] as const)
      if (!live.has(input[field])) throw memoryNotFound(input[field], field);
    const [outcome] = await insertRelations(trx, ctx, effects, owner, [input]);
    const { relation, created } = outcome!;
    if (created) {
      effects.emit('relation.created', eventOf(relation, owner));
    }
    effects.audit('relation.create', { type: 'relation', id: relation.id }, created ? 'success' : 'existing');
    return outcome!;
  });
}

/** Both directions: links from and to the memory, oldest first. */
export async function listRelations(
  db: Executor,
  owner: Owner,
  memoryId: number,
): Promise<{ memory_id: number; items: RelationView[] }> {
  await getMemory(db, owner, memoryId);
  const rows = await ownedRelations(db, owner)
    .where((eb) => eb.or([eb('source_id', '=', memoryId), eb('target_id', '=', memoryId)]))
    .orderBy('id')
    .execute();
  return { memory_id: memoryId, items: rows.map(toRelation) };
}

/** A relation as an export carries it, on its source memory: the target by id and by client_ref, which an import finds it by. */
export interface PortableRelation {
  id: number;
  type: string;
  target_id: number;
  target_client_ref: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
}

/** The links from these memories (of one project; of one type when given), grouped by source, oldest first. */
export async function relationsFromMemories(
  db: Executor,
  projectId: string,
  sourceIds: number[],
  type?: string,
): Promise<Map<number, PortableRelation[]>> {
  const bySource = new Map<number, PortableRelation[]>();
  if (sourceIds.length === 0) return bySource;
  const rows = await db
    .selectFrom('memory_relations')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('source_id', 'in', sourceIds)
    .$if(type !== undefined, (qb) => qb.where('type', '=', type!))
    .orderBy('id')
    .execute();
  const refs = await clientRefsOf(db, projectId, [...new Set(rows.map((r) => r.target_id))]);
  for (const r of rows) {
    const list = bySource.get(r.source_id) ?? [];
    list.push({
      id: r.id,
      type: r.type,
      target_id: r.target_id,
      target_client_ref: refs.get(r.target_id) ?? null,
      metadata: decodeJson<Record<string, unknown>>(r.metadata),
      created_at: r.created_at,
    });
    bySource.set(r.source_id, list);
  }
  return bySource;
}

/** A link an import restores: both memories by the client_ref they were imported with. */
export interface ImportedRelation {
  owner: Owner;
  source_ref: string;
  target_ref: string;
  type: string;
  metadata: Record<string, unknown>;
  created_at?: string;
}

/**
 * Restores links between memories an import brought in, in one transaction; answers each link's
 * outcome in order: `unresolved` where a memory at either end is not a live one of the owner's (yet),
 * or a `summarizes` link's source is no summary.
 */
export async function importRelations(
  database: Database,
  ctx: WriteContext,
  links: ImportedRelation[],
): Promise<Array<'created' | 'existing' | 'unresolved'>> {
  const outcomes: Array<'created' | 'existing' | 'unresolved'> = links.map(() => 'unresolved');
  if (links.length === 0) return outcomes;
  const byOwner = new Map<string, { owner: Owner; indexes: number[] }>();
  links.forEach((link, index) => {
    const key = JSON.stringify([link.owner.tenantId, link.owner.endUserId]);
    const group = byOwner.get(key) ?? { owner: link.owner, indexes: [] };
    group.indexes.push(index);
    byOwner.set(key, group);
  });
  return write(database, ctx, async (trx, effects) => {
    const resolved: Array<{ index: number; owner: Owner; source_id: number; target_id: number }> = [];
    for (const { owner, indexes } of byOwner.values()) {
      const ids = await liveIdsByClientRef(trx, owner, [
        ...new Set(indexes.flatMap((i) => [links[i]!.source_ref, links[i]!.target_ref])),
      ]);
      for (const index of indexes) {
        const [sourceId, targetId] = [ids.get(links[index]!.source_ref), ids.get(links[index]!.target_ref)];
        if (sourceId !== undefined && targetId !== undefined && sourceId !== targetId)
          resolved.push({ index, owner, source_id: sourceId, target_id: targetId });
      }
    }
    // Kept live until this commits, as createRelation's: forgetting either one then finds the link and deletes it.
    const projectId = links[0]!.owner.projectId;
    const live = new Map(
      (
        await memoriesHeld(database, trx, { projectId }, [
          ...new Set(resolved.flatMap((r) => [r.source_id, r.target_id])),
        ])
      ).map((m) => [m.id, m]),
    );
    for (const { owner } of byOwner.values()) {
      const insertable = resolved.filter(
        (r) =>
          r.owner === owner &&
          live.has(r.source_id) &&
          live.has(r.target_id) &&
          (links[r.index]!.type !== SUMMARIZES || live.get(r.source_id)!.is_summary),
      );
      const inserted = await insertRelations(
        trx,
        ctx,
        effects,
        owner,
        insertable.map((r) => ({
          source_id: r.source_id,
          target_id: r.target_id,
          type: links[r.index]!.type,
          metadata: links[r.index]!.metadata,
          created_at: links[r.index]!.created_at,
        })),
      );
      inserted.forEach((outcome, i) => {
        outcomes[insertable[i]!.index] = outcome.created ? 'created' : 'existing';
        if (outcome.created) effects.emit('relation.created', eventOf(outcome.relation, owner));
      });
    }
    const created = outcomes.filter((o) => o === 'created').length;
    effects.audit('relation.import', { type: 'relation', id: null }, created === links.length ? 'success' : 'partial');
    return outcomes;
  });
}

/** Every link of the owner, for the graph. */
export async function relationsOfOwner(db: Executor, owner: Owner): Promise<RelationView[]> {
  return (await ownedRelations(db, owner).orderBy('id').execute()).map(toRelation);
}

export async function deleteRelation(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  relationId: number,
): Promise<RelationView> {
  return write(database, ctx, async (trx, effects) => {
    const row = await ownedRelations(trx, owner).where('id', '=', relationId).executeTakeFirst();
    if (!row) throw notFound('Relation');
    const relation = toRelation(row);
    if (relation.type === SUMMARIZES) {
      throw new AppError(
        'conflict',
        'A summary keeps its links to its sources; forget the summary to remove them',
        'relation_id',
      );
    }
    await trx.deleteFrom('memory_relations').where('id', '=', relationId).execute();
    await recordHistory(
      trx,
      ctx,
      [relation.source_id, relation.target_id].map((memoryId) => ({
        memoryId,
        action: 'unrelate',
        changes: { relation: { before: linkOf(relation), after: null } },
      })),
      effects.now,
    );
    effects.emit('relation.deleted', eventOf(relation, owner));
    effects.audit('relation.delete', { type: 'relation', id: relation.id });
    return relation;
  });
}

/** Summaries (with their owners) built from any of these memories. */
export async function summariesOf(
  trx: Executor,
  projectId: string,
  sourceIds: number[],
): Promise<Array<{ id: number; owner: Owner }>> {
  const rows = await trx
    .selectFrom('memory_relations')
    .select(['source_id', 'tenant_id', 'end_user_id'])
    .where('project_id', '=', projectId)
    .where('type', '=', SUMMARIZES)
    .where('target_id', 'in', sourceIds)
    .execute();
  const byId = new Map(
    rows.map((r) => [
      r.source_id,
      { id: r.source_id, owner: { projectId, tenantId: r.tenant_id, endUserId: r.end_user_id } },
    ]),
  );
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

/** The sources a summary links to. */
export async function sourcesOf(trx: Executor, projectId: string, summaryId: number): Promise<number[]> {
  const rows = await trx
    .selectFrom('memory_relations')
    .select('target_id')
    .where('project_id', '=', projectId)
    .where('type', '=', SUMMARIZES)
    .where('source_id', '=', summaryId)
    .orderBy('target_id')
    .execute();
  return rows.map((r) => r.target_id);
}

/** Links from or to these memories go with them. */
export async function deleteRelationsOf(trx: Executor, projectId: string, ids: number[]): Promise<void> {
  await trx
    .deleteFrom('memory_relations')
    .where('project_id', '=', projectId)
    .where((eb) => eb.or([eb('source_id', 'in', ids), eb('target_id', 'in', ids)]))
    .execute();
}
