import type { Pseudonymize } from './pseudonyms.js';
import { nowIso, type Executor } from '../store/database.js';

/** Idempotency keys are kept for this long; the HTTP plugin (http/idempotency.ts) claims and replays keys. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** An end user as a subject of stored answers. */
export interface AnswerOwner {
  projectId: string;
  tenantId: string;
  endUserId: string;
}

/** What a stored answer names, as idempotency_answer_subjects keeps it: an end user by pseudonym, so the link table names no one. */
export const answerSubject = {
  memory: (id: number) => `memory:${id}`,
  endUser: (pseudonymize: Pseudonymize, owner: AnswerOwner) =>
    `end_user:${owner.tenantId}:${pseudonymize(owner.projectId, owner.endUserId)}`,
};

/** Deletes keys past their window: a chore of the worker (and of `engram serve` running jobs in-process). */
export async function purgeExpiredIdempotencyKeys(db: Executor, now = nowIso()): Promise<number> {
  await db.deleteFrom('idempotency_answer_subjects').where('expires_at', '<=', now).execute();
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Erases the stored answers (and the results a retry would be handed) that name any of `subjects`, in the
 * caller's transaction: the key stays claimed, marked erased, so a replay answers 410 gone instead of running
 * the request again. Found through the subjects' index, never by reading the answers.
 */
export async function eraseStoredAnswers(trx: Executor, subjects: string[], now: string): Promise<void> {
  for (let i = 0; i < subjects.length; i += 500) {
    const keys = await trx
      .selectFrom('idempotency_answer_subjects')
      .select(['principal', 'key_hash'])
      .where('subject', 'in', subjects.slice(i, i + 500))
      .execute();
    const unique = new Map(keys.map((k) => [`${k.principal}\u0000${k.key_hash}`, k]));
    for (const key of unique.values()) {
      await trx
        .updateTable('idempotency_keys')
        .set({ response: null, committed: null, committed_id: null, erased_at: now })
        .where('principal', '=', key.principal)
        .where('key_hash', '=', key.key_hash)
        .execute();
      await trx
        .deleteFrom('idempotency_answer_subjects')
        .where('principal', '=', key.principal)
        .where('key_hash', '=', key.key_hash)
        .execute();
    }
  }
}
