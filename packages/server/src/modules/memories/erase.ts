import type { Pseudonymize } from '../../core/pseudonyms.js';
import { write, type Effects, type WriteContext } from '../../core/unit-of-work.js';
import { nowIso, type Database, type Executor } from '../../store/database.js';
import { owned, RETIRED_REVISIONS, toMemory, type Owner } from './feed.js';
import { countSelected, selectedIds, type Selection } from './list.js';
import { nextSeq } from './revisions.js';
import { recordHistory } from './rows.js';

/**
 * Forgetting: by id, by selection, by expiry and a whole end user (purge), erasing content down to a
 * tombstone and running the erase hooks other modules register for what they derived from memories.
 */

/** The forgetting transaction, for hooks that must change memories themselves (summaries of a forgotten source). */
export interface Erasure {
  ctx: WriteContext;
  effects: Effects;
  /** The change sequence of the forgetting transaction. */
  seq: number;
  /** Whose memories they are (one owner a transaction). */
  owner: Owner;
  /** The owner is being removed (purgeEndUser): what is held of them goes whole, not memory by memory. */
  purging: boolean;
  /** The hooks this erasure runs, for a hook that forgets further memories (forgetWithin). */
  hooks: EraseHooks;
  /**
   * Memories that live on with their content replaced because of this erasure (a summary rewritten
   * without a forgotten source): the hooks after the one that rewrote them erase their earlier
   * copies (events, deliveries, export artifacts) too. Filled by rewriteSummary.
   */
  rewritten: number[];
}

/**
 * Erases what a module keeps of an end user beyond their memories (file names, stored answers) in the purging
 * transaction, and renames to `pseudonym` (core/pseudonyms.ts) what must outlive them but named them by id.
 */
export type EndUserEraseHook = (
  trx: Executor,
  owner: Owner,
  pseudonym: string,
  now: string,
  effects: Effects,
) => Promise<void>;

/** Erases what a module derived from memories (vectors, feedback, relations, summaries) in the transaction that forgets them. */
export type EraseHook = (trx: Executor, ids: number[], erasure: Erasure) => Promise<void>;

/**
 * The erase hooks of modules that keep data derived from memories, registered explicitly by the
 * composition root (services.ts), so forgetting removes every copy without this module knowing
 * their tables.
 */
export class EraseHooks {
  private readonly hooks: EraseHook[] = [];
  private readonly endUserHooks: EndUserEraseHook[] = [];

  /** `pseudonymize`: how what outlives a removed end user names them (core/pseudonyms.ts). */
  constructor(readonly pseudonymize: Pseudonymize) {}

  register(hook: EraseHook): void {
    this.hooks.push(hook);
  }

  /** A hook run once when an end user is purged, after their memories' hooks: what names the end user rather than a memory. */
  registerEndUser(hook: EndUserEraseHook): void {
    this.endUserHooks.push(hook);
  }

  /** Runs every end-user hook in the order registered. */
  async runEndUser(trx: Executor, owner: Owner, pseudonym: string, effects: Effects): Promise<void> {
    for (const hook of this.endUserHooks) await hook(trx, owner, pseudonym, effects.now, effects);
  }

  /** Runs every hook in the order registered, sharing one Erasure (so a later hook sees what an earlier one rewrote). */
  async run(trx: Executor, ids: number[], erasure: Omit<Erasure, 'hooks' | 'rewritten'>): Promise<void> {
    const shared: Erasure = { ...erasure, hooks: this, rewritten: [] };
    for (const hook of this.hooks) await hook(trx, ids, shared);
  }
}

/**
 * Erases memories down to an id-and-time tombstone: text, tags, metadata and references are
 * blanked in the row and in every history row, so nothing of the content survives.
 */
async function eraseMemories(
  trx: Executor,
  ctx: WriteContext,
  effects: Effects,
  ids: number[],
  seq: number,
  erase: EraseHooks,
  owner: Owner,
  purging = false,
): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .updateTable('memories')
    .set({
      text: '',
      tags: '[]',
      metadata: '{}',
      source: null,
      client_ref: null,
      session_id: null,
      speaker: null,
      dedupe_hash: null,
      seq,
      updated_at: effects.now,
      deleted_at: effects.now,
    })
    .where('id', 'in', ids)
    .execute();
  // A memory its forgotten successor was kept over is superseded by nothing now: an update of it, recorded as the
  // resolution that set the mark was (its history entry and memory.updated; docs/api.md, "Resolve").
  const unmarked = await trx
    .selectFrom('memories')
    .select(['id', 'superseded_by'])
    .where('superseded_by', 'in', ids)
    .where('deleted_at', 'is', null)
    .execute();
  if (unmarked.length > 0) {
    await trx
      .updateTable('memories')
      .set({ superseded_by: null, seq, updated_at: effects.now })
      .where(
        'id',
        'in',
        unmarked.map((m) => m.id),
      )
      .execute();
  }
  await trx.updateTable('memory_history').set({ changes: null }).where('memory_id', 'in', ids).execute();
  await recordHistory(
    trx,
    ctx,
    [
      ...unmarked.map((m) => ({
        memoryId: m.id,
        action: 'supersede',
        changes: {
          superseded_by: { before: m.superseded_by, after: null },
          reason: { before: null, after: `Memory ${m.superseded_by} forgotten` },
        },
      })),
      ...ids.map((memoryId) => ({ memoryId, action: 'forget', changes: null })),
    ],
    effects.now,
  );
  for (const row of unmarked.length > 0
    ? await trx
        .selectFrom('memories')
        .selectAll()
        .where(
          'id',
          'in',
          unmarked.map((m) => m.id),
        )
        .execute()
    : []) {
    effects.emit('memory.updated', { memory: toMemory(row), fields: ['superseded_by'] });
  }
  await erase.run(trx, ids, { ctx, effects, seq, owner, purging });
}

/**
 * Forgets the owner's live memories among `ids` inside a transaction already under way: a hook
 * forgetting further memories (a summary whose every source was forgotten) passes its erasure's
 * `seq`; a module replacing memories (a new version of a file) leaves it out, and a change
 * sequence is taken when something is forgotten. Returns the ids forgotten.
 */
export async function forgetWithin(
  trx: Executor,
  erasure: Omit<Erasure, 'seq' | 'rewritten' | 'owner' | 'purging'> & { seq?: number },
  owner: Owner,
  ids: number[],
): Promise<number[]> {
  let found = (await liveMemoryIds(trx, owner, [...new Set(ids)])).sort((a, b) => a - b);
  if (found.length === 0) return found;
  let seq = erasure.seq;
  if (seq === undefined) {
    // Read again under the owner lock: a forget of the same memories that committed meanwhile forgot them
    // (and said so); forgetting them again would announce memory.deleted twice.
    seq = await nextSeq(trx, owner, erasure.effects.now);
    found = await liveMemoryIds(trx, owner, found);
    if (found.length === 0) return found;
  }
  for (let i = 0; i < found.length; i += 500)
    await eraseMemories(trx, erasure.ctx, erasure.effects, found.slice(i, i + 500), seq, erasure.hooks, owner);
  for (const id of found) erasure.effects.emit('memory.deleted', { memory_id: id, end_user_id: owner.endUserId });
  return found;
}

/** Those of `ids` that are live memories of the owner. */
export async function liveMemoryIds(db: Executor, owner: Owner, ids: number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const live: number[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    live.push(
      ...(
        await owned(owner)(db)
          .clearSelect()
          .select('id')
          .where('id', 'in', ids.slice(i, i + 500))
          .execute()
      ).map((r) => r.id),
    );
  }
  return live;
}

export async function forget(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  ids: number[],
  erase: EraseHooks,
): Promise<number[]> {
  return write(database, ctx, async (trx, effects) => {
    const found = await forgetWithin(trx, { ctx, effects, hooks: erase }, owner, ids);
    effects.audit('memory.forget', { type: 'memory', id: found.join(',') || null });
    return found;
  });
}

/** What forgetting by scope answers (DELETE /memory/forget with filters or session_id). */
export interface ScopeForgotten {
  dry_run: boolean;
  ids: number[];
  matched: number;
  has_more: boolean;
}

/**
 * Forgets up to `limit` of the owner's live memories the selection matches, oldest first, as forgetting by id
 * does (the same erasure, events and history). Selected under the owner's lock, so a memory added or forgotten
 * meanwhile is seen. A dry run only reads: what would be forgotten now.
 */
export async function forgetSelected(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  selection: Selection,
  options: { limit: number; dryRun: boolean },
  erase: EraseHooks,
): Promise<ScopeForgotten> {
  const answer = async (db: Executor, forgotten: (ids: number[]) => Promise<number[]>): Promise<ScopeForgotten> => {
    const matched = await countSelected(db, database.dialect, owner, selection);
    const ids = await forgotten(await selectedIds(db, database.dialect, owner, selection, options.limit));
    return { dry_run: options.dryRun, ids, matched, has_more: matched > ids.length };
  };
  if (options.dryRun) return answer(database.db, async (ids) => ids);
  return write(database, ctx, async (trx, effects) => {
    const seq = await nextSeq(trx, owner, effects.now);
    const result = await answer(trx, (ids) => forgetWithin(trx, { ctx, effects, hooks: erase, seq }, owner, ids));
    effects.audit('memory.forget', { type: 'memory', id: result.ids.join(',') || null });
    return result;
  });
}

/**
 * The expiry sweep (a chore, services.ts): erases up to `batch` expired memories, oldest expiry first, as
 * forgetting does (the same erasure and hooks, memory.deleted, history), one owner's in one transaction under
 * their lock, audited as `memory.expire` by the system. `organizationOf` names a live project's organization
 * (a deleted project's memories are tombstoned with it). A database error ends the run; the schedule logs it
 * and runs again at the next interval. Returns how many were erased.
 */
export async function forgetExpired(
  database: Database,
  erase: EraseHooks,
  organizationOf: (projectId: string) => Promise<string | undefined>,
  batch = 500,
): Promise<number> {
  const due = await database.db
    .selectFrom('memories')
    .select(['id', 'project_id', 'tenant_id', 'end_user_id'])
    .where('expires_at', 'is not', null)
    .where('deleted_at', 'is', null)
    .where('expires_at', '<=', nowIso())
    .orderBy('expires_at')
    .limit(batch)
    .execute();
  const byOwner = new Map<string, { owner: Owner; ids: number[] }>();
  for (const row of due) {
    const key = JSON.stringify([row.project_id, row.tenant_id, row.end_user_id]);
    const entry = byOwner.get(key) ?? {
      owner: { projectId: row.project_id, tenantId: row.tenant_id, endUserId: row.end_user_id },
      ids: [],
    };
    entry.ids.push(row.id);
    byOwner.set(key, entry);
  }
  let erased = 0;
  for (const { owner, ids } of byOwner.values()) {
    const organizationId = await organizationOf(owner.projectId);
    if (organizationId === undefined) continue;
    const ctx: WriteContext = {
      actor: { type: 'system', id: null },
      organizationId,
      projectId: owner.projectId,
      requestId: null,
    };
    erased += await write(database, ctx, async (trx, effects) => {
      const seq = await nextSeq(trx, owner, effects.now);
      // Read again under the owner's lock: one forgotten or given a later expiry meanwhile is left as it now is.
      const still = (
        await trx
          .selectFrom('memories')
          .select('id')
          .where('id', 'in', ids)
          .where('deleted_at', 'is', null)
          .where('expires_at', '<=', effects.now)
          .orderBy('id')
          .execute()
      ).map((r) => r.id);
      for (let i = 0; i < still.length; i += 500)
        await eraseMemories(trx, ctx, effects, still.slice(i, i + 500), seq, erase, owner);
      for (const id of still) effects.emit('memory.deleted', { memory_id: id, end_user_id: owner.endUserId });
      if (still.length > 0) effects.audit('memory.expire', { type: 'memory', id: still.join(',') });
      return still.length;
    });
  }
  return erased;
}

export async function purgeEndUser(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  erase: EraseHooks,
): Promise<number> {
  return write(database, ctx, async (trx, effects) => {
    // The owner's lock before the read: a memory committed meanwhile is seen, and purged.
    const seq = await nextSeq(trx, owner, effects.now);
    const live = await owned(owner)(trx).clearSelect().select('id').execute();
    const ids = live.map((r) => r.id);
    for (let i = 0; i < ids.length; i += 500)
      await eraseMemories(trx, ctx, effects, ids.slice(i, i + 500), seq, erase, owner, true);
    const pseudonym = erase.pseudonymize(owner.projectId, owner.endUserId);
    await erase.runEndUser(trx, owner, pseudonym, effects);
    await retireOwner(trx, owner, pseudonym);
    // What outlives the end user names them by pseudonym only: the event (stored in the outbox and in deliveries)
    // and the hash-chained audit row.
    effects.emit('end_user.purged', { end_user_id: pseudonym, deleted: ids.length });
    effects.audit('memory.purge_end_user', { type: 'end_user', id: pseudonym });
    return ids.length;
  });
}

/**
 * The last of a purge: the end user's tombstones are filed under their pseudonym, and their end_users row goes, its
 * revision added to the row of retired revisions (RETIRED_REVISIONS), from which the revisions of an end user
 * written to later start. So the id is in neither table, the project's revision (their sum) still only grows, and
 * an index kept of the earlier life finds no row of the owner at or before its revision and starts over
 * (ownerChangesSince). The owner's row is locked (nextSeq) by the purge, so no write of theirs runs meanwhile;
 * one waiting on the lock inserts a new row when the purge commits.
 */
async function retireOwner(trx: Executor, owner: Owner, pseudonym: string): Promise<void> {
  await trx
    .updateTable('memories')
    .set({ end_user_id: pseudonym })
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .execute();
  const retired = await trx
    .deleteFrom('end_users')
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .returning('revision')
    .executeTakeFirst();
  if (!retired) return;
  await trx
    .insertInto('end_users')
    .values({
      project_id: owner.projectId,
      tenant_id: owner.tenantId,
      end_user_id: RETIRED_REVISIONS,
      revision: retired.revision,
      created_at: nowIso(),
      updated_at: nowIso(),
    })
    .onConflict((oc) =>
      oc.columns(['project_id', 'tenant_id', 'end_user_id']).doUpdateSet((eb) => ({
        revision: eb('end_users.revision', '+', retired.revision),
        updated_at: nowIso(),
      })),
    )
    .execute();
}
