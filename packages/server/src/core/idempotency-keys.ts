import { nowIso, type Executor } from '../store/database.js';

/** Idempotency keys are kept for this long; the HTTP plugin (http/idempotency.ts) claims and replays them. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Deletes keys past their window: a chore of the worker (and of `engram serve` running jobs in-process). */
export async function purgeExpiredIdempotencyKeys(db: Executor, now = nowIso()): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
