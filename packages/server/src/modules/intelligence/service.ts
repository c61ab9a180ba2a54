// The intelligence views of one end user, and the one write: resolving a decision.
import type { LlmProvider } from '../../engine/llm/index.js';
import type { Static } from '@sinclair/typebox';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { AppError, invalid, notFound } from '../../core/errors.js';
import type { Page } from '../../core/paging.js';
import { isUniqueViolation, type Database, type Executor } from '../../store/database.js';
import type { JobHandler } from '../../jobs/runner.js';
import type { Extractor } from '../../engine/nlp/index.js';
import { endUsersOf, liveMemoryIds, markSuperseded, nextSeq, type EraseHook, type Owner } from '../memories/index.js';
import { relationsOfOwner, type RelationView } from '../synthesis/index.js';
import { IntelligenceCache, type OwnerView } from './cache.js';
import { Extractors } from './ontology.js';
import { edgesAsOf, type Conflict, type GraphEdge, type GraphNode } from './knowledge.js';
import type { Decision, ResolveInput } from './schemas.js';

type DecisionView = Static<typeof Decision>;
type ResolutionRow = Awaited<ReturnType<typeof resolutionsOf>>[number];

const resolutionsOf = (db: Executor, owner: Owner) =>
  db
    .selectFrom('decision_resolutions')
    .selectAll()
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .execute();

const statusOf = (row: ResolutionRow | undefined): DecisionView['status'] =>
  !row ? 'open' : row.resolution === 'dismiss' ? 'dismissed' : 'resolved';

function toDecision(c: Conflict, row: ResolutionRow | undefined): DecisionView {
  const reason =
    c.kind === 'single_valued'
      ? `${c.attribute} holds one value at a time; the newer statement (memory ${c.newer}) replaces the older one`
      : `The newer statement (memory ${c.newer}) contradicts the older one (memory ${c.older})`;
  return {
    id: c.id,
    kind: c.kind,
    subject: c.subject,
    attribute: c.attribute,
    values: c.values,
    suggested_resolution: { resolution: 'keep_one', memory_id: c.newer, reason },
    status: statusOf(row),
    resolution: row
      ? {
          resolution: row.resolution as DecisionView['suggested_resolution']['resolution'],
          memory_id: row.kept_memory_id,
          note: row.note,
          actor: { type: row.actor_type, id: row.actor_id },
          resolved_at: row.created_at,
        }
      : null,
    detected_at: c.detected_at,
  };
}

export class Intelligence {
  constructor(
    private readonly database: Database,
    private readonly cache: IntelligenceCache,
  ) {}

  /** Bytes its cache holds (IntelligenceCache.bytes), for /metrics. */
  get cacheBytes(): number {
    return this.cache.bytes;
  }

  /** Memories the chat model read and stored, and its failed calls (model-reading.ts; zeros without one). */
  get modelReadings(): { read: number; failures: number } {
    return this.cache.reader?.counts ?? { read: 0, failures: 0 };
  }

  /** Stops background work (the model's reading) before the database closes. */
  close(): void {
    this.cache.close();
  }

  /** After an erasure of the owner's memories committed (IntelligenceCache.forgotten). */
  forgotten(owner: Owner, purged: boolean, ids?: ReadonlySet<number>): Promise<void> {
    return this.cache.forgotten(owner, purged, ids);
  }

  view(owner: Owner): Promise<OwnerView> {
    return this.cache.forOwner(owner);
  }

  /** The project's extractor as its ontology now stands. */
  extractorOf(projectId: string): Promise<Extractor> {
    return this.cache.extractorOf(projectId);
  }

  /** The view of an owner with at most `most` memories; null for a larger one (IntelligenceCache.forOwnerWithin). */
  viewWithin(owner: Owner, most: number, seenRevision?: number): Promise<OwnerView | null> {
    return this.cache.forOwnerWithin(owner, most, seenRevision);
  }

  async graph(owner: Owner, query: { entity?: string; type?: string; as_of?: string; limit: number }) {
    const view = await this.view(owner);
    const { nodes, edges: all } = view.knowledge();
    const asOf = query.as_of === undefined ? undefined : new Date(query.as_of).toISOString();
    let edges = edgesAsOf(all, asOf);
    let candidates: GraphNode[];
    if (query.entity !== undefined) {
      const wanted = query.entity.toLowerCase();
      const focus = [...nodes.values()].find(
        (n) =>
          n.id === query.entity || n.name.toLowerCase() === wanted || n.aliases.some((a) => a.toLowerCase() === wanted),
      );
      if (!focus) return { nodes: [], edges: [], memory_relations: [], as_of: asOf ?? null, revision: view.revision };
      edges = edges.filter((e) => e.source === focus.id || e.target === focus.id);
      candidates = [focus, ...edges.map((e) => nodes.get(e.source === focus.id ? e.target : e.source)!)];
    } else {
      const linked = new Set(edges.flatMap((e) => [e.source, e.target]));
      // As of a time, an entity counts if a fact then touched it or a memory by then mentioned it.
      candidates = [...nodes.values()].filter(
        (n) => asOf === undefined || linked.has(n.id) || view.items.get(n.memory_ids[0]!)!.createdAt <= asOf,
      );
    }
    if (query.type !== undefined) {
      const typed = new Set(candidates.filter((n) => n.type === query.type).map((n) => n.id));
      edges = edges.filter((e) => typed.has(e.source) || typed.has(e.target));
      const ends = new Set(edges.flatMap((e) => [e.source, e.target]));
      candidates = candidates.filter((n) => typed.has(n.id) || ends.has(n.id));
    }
    const unique = [...new Map(candidates.map((n) => [n.id, n])).values()];
    const kept = unique
      .sort((a, b) => b.memory_ids.length - a.memory_ids.length || (a.id < b.id ? -1 : 1))
      .slice(0, query.limit);
    const keptIds = new Set(kept.map((n) => n.id));
    const keptEdges = edges.filter((e) => keptIds.has(e.source) && keptIds.has(e.target));
    const filtered = query.entity !== undefined || query.type !== undefined;
    const shown = filtered ? new Set([...kept, ...keptEdges].flatMap((x) => x.memory_ids)) : undefined;
    return {
      nodes: kept,
      edges: keptEdges,
      memory_relations: await this.memoryRelations(owner, { asOf, touching: shown, limit: query.limit }),
      as_of: asOf ?? null,
      revision: view.revision,
    };
  }

  /**
   * The typed links between the owner's memories (POST /memory/relations, summaries' `summarizes`),
   * read from the synthesis module on every call: they do not move the end user's revision, so the
   * cached view cannot hold them. Those made by `asOf`, touching the shown memories when filtered;
   * the `limit` newest, oldest first.
   */
  private async memoryRelations(
    owner: Owner,
    { asOf, touching, limit }: { asOf?: string; touching?: Set<number>; limit: number },
  ): Promise<RelationView[]> {
    const all = await relationsOfOwner(this.database.db, owner);
    const wanted = all.filter(
      (r) =>
        (asOf === undefined || r.created_at <= asOf) &&
        (touching === undefined || touching.has(r.source_id) || touching.has(r.target_id)),
    );
    return wanted.slice(-limit);
  }

  async clusters(owner: Owner, limit: number) {
    const view = await this.view(owner);
    const all = view.clusters();
    return { items: all.slice(0, limit), total: all.length, revision: view.revision };
  }

  private async decisionsOf(owner: Owner): Promise<DecisionView[]> {
    const [view, rows] = await Promise.all([this.view(owner), resolutionsOf(this.database.db, owner)]);
    const byDecision = new Map(rows.map((r) => [r.decision_id, r]));
    return view
      .knowledge()
      .conflicts.map((c) => toDecision(c, byDecision.get(c.id)))
      .sort((a, b) => (a.detected_at < b.detected_at ? 1 : a.detected_at > b.detected_at ? -1 : b.id - a.id));
  }

  async decisions(
    owner: Owner,
    query: { status?: DecisionView['status']; offset: number; limit: number },
  ): Promise<Page<DecisionView>> {
    const all = (await this.decisionsOf(owner)).filter((d) => query.status === undefined || d.status === query.status);
    const items = all.slice(query.offset, query.offset + query.limit);
    return {
      items,
      total: all.length,
      offset: query.offset,
      limit: query.limit,
      has_next: query.offset + items.length < all.length,
    };
  }

  /**
   * Records a resolution once (a second is 409). keep_one marks the other memory superseded by the
   * kept one, which then ranks below it in retrieval and says why in its history.
   */
  async resolve(ctx: WriteContext, owner: Owner, decisionId: number, input: ResolveInput): Promise<DecisionView> {
    const view = await this.view(owner);
    const conflict = view.knowledge().conflicts.find((c) => c.id === decisionId);
    if (!conflict) throw notFound('Decision');
    const members = [conflict.older, conflict.newer];
    if (input.resolution === 'keep_one') {
      if (input.memory_id === undefined) throw invalid('memory_id', 'keep_one needs memory_id: the memory to keep');
      if (!members.includes(input.memory_id))
        throw invalid('memory_id', `memory_id must be one of the decision's memories (${members.join(', ')})`);
    } else if (input.memory_id !== undefined) {
      throw invalid('memory_id', `memory_id is only for keep_one`);
    }
    const resolved = new AppError('conflict', 'The decision is already resolved');
    try {
      const row = await write(this.database, ctx, async (trx, effects) => {
        // The owner's lock first, as forgetting takes it: a memory of the decision forgotten meanwhile
        // (which took the decision with it) is seen here, and none is forgotten before this commits.
        await nextSeq(trx, owner, effects.now);
        if ((await liveMemoryIds(trx, owner, members)).length < members.length) throw notFound('Decision');
        const existing = await trx
          .selectFrom('decision_resolutions')
          .select('id')
          .where('project_id', '=', owner.projectId)
          .where('tenant_id', '=', owner.tenantId)
          .where('end_user_id', '=', owner.endUserId)
          .where('decision_id', '=', decisionId)
          .executeTakeFirst();
        if (existing) throw resolved;
        const inserted = await trx
          .insertInto('decision_resolutions')
          .values({
            project_id: owner.projectId,
            tenant_id: owner.tenantId,
            end_user_id: owner.endUserId,
            decision_id: decisionId,
            older_memory_id: conflict.older,
            newer_memory_id: conflict.newer,
            resolution: input.resolution,
            kept_memory_id: input.memory_id ?? null,
            note: input.note ?? null,
            actor_type: ctx.actor.type,
            actor_id: ctx.actor.id,
            created_at: effects.now,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        if (input.resolution === 'keep_one') {
          const dropped = members.find((m) => m !== input.memory_id)!;
          const reason = `Decision ${decisionId} (${conflict.kind}, ${conflict.attribute}) resolved: memory ${input.memory_id} kept`;
          await markSuperseded(trx, ctx, effects, owner, dropped, input.memory_id!, reason);
        }
        effects.audit('decision.resolve', { type: 'decision', id: decisionId });
        effects.emit('decision.resolved', {
          decision_id: decisionId,
          end_user_id: owner.endUserId,
          resolution: input.resolution,
          kept_memory_id: input.memory_id ?? null,
          memory_ids: members,
        });
        return inserted;
      });
      return toDecision(conflict, row);
    } catch (error) {
      if (isUniqueViolation(error)) throw resolved;
      throw error;
    }
  }

  async report(owner: Owner) {
    const view = await this.view(owner);
    const { nodes, edges } = view.knowledge();
    const top = [...nodes.values()]
      .filter((n) => !n.is_end_user && n.type !== 'concept')
      .sort((a, b) => b.memory_ids.length - a.memory_ids.length || (a.id < b.id ? -1 : 1))
      .slice(0, 10)
      .map((n) => ({ id: n.id, name: n.name, type: n.type, mentions: n.memory_ids.length }));
    const changedAt = (e: GraphEdge) =>
      e.invalid_at !== null && e.invalid_at > e.valid_at ? e.invalid_at : e.valid_at;
    const recent = [...edges]
      .sort((a, b) => (changedAt(a) < changedAt(b) ? 1 : changedAt(a) > changedAt(b) ? -1 : a.id < b.id ? -1 : 1))
      .slice(0, 10);
    const open = (await this.decisionsOf(owner)).filter((d) => d.status === 'open').slice(0, 10);
    return {
      top_entities: top,
      recent_changes: recent,
      clusters: view.clusters().slice(0, 5),
      open_decisions: open,
      revision: view.revision,
    };
  }

  async stats(owner: Owner) {
    const view = await this.view(owner);
    const { nodes, edges } = view.knowledge();
    const count = (keys: string[]) => {
      const out: Record<string, number> = {};
      for (const k of keys.sort()) out[k] = (out[k] ?? 0) + 1;
      return out;
    };
    const decisions = await this.decisionsOf(owner);
    const items = [...view.items.values()];
    return {
      memories: items.length,
      summaries: items.filter((m) => m.isSummary).length,
      entities: nodes.size,
      entities_by_type: count([...nodes.values()].map((n) => n.type)),
      relations: edges.length,
      relations_by_type: count(edges.map((e) => e.type)),
      current_relations: edges.filter((e) => e.invalid_at === null).length,
      clusters: view.clusters().length,
      decisions: {
        open: decisions.filter((d) => d.status === 'open').length,
        resolved: decisions.filter((d) => d.status === 'resolved').length,
        dismissed: decisions.filter((d) => d.status === 'dismissed').length,
      },
      categories: count(items.flatMap((m) => m.extraction.categories)),
      revision: view.revision,
    };
  }
}

/**
 * The intelligence views of a process, over one cache of derived knowledge bounded by end users; with `factModel`,
 * a chat model also reads each memory's personal facts (model-reading.ts).
 */
export function createIntelligence(
  database: Database,
  cacheOwners: number,
  cacheBytes?: number,
  factModel: { llm: LlmProvider; backoffMs?: number } | null = null,
): Intelligence {
  return new Intelligence(
    database,
    new IntelligenceCache(database, new Extractors(database), cacheOwners, cacheBytes, factModel),
  );
}

/** Reclassification after an ontology change: brings every end user's view of the project up to the new ontology. */
export function reclassifyJob(database: Database, intelligence: Intelligence): JobHandler {
  return async (job) => {
    const owners = await endUsersOf(database.db, job.projectId!);
    let memories = 0;
    for (const [i, owner] of owners.entries()) {
      memories += (await intelligence.view(owner)).items.size;
      await job.progress((i + 1) / owners.length);
    }
    return { end_users: owners.length, memories };
  };
}

/** Forgetting a memory drops the resolutions that named it (their decisions no longer exist). Registered in services.ts. */
export const eraseResolutions: EraseHook = async (trx, ids) => {
  await trx
    .deleteFrom('decision_resolutions')
    .where((eb) => eb.or([eb('older_memory_id', 'in', ids), eb('newer_memory_id', 'in', ids)]))
    .execute();
};
