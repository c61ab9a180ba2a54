import { decodeJson, nowIso, type Executor } from '../../store/database.js';
import { lastUseDue } from '../org/index.js';
import type { AccessClaims } from './tokens.js';

export interface LiveSession {
  id: number;
  userId: number;
  scopes: string[];
  lastUsedAt: string | null;
}

/** The session an access token names, if it is still live: not revoked, not expired. */
export async function liveSession(
  db: Executor,
  claims: AccessClaims,
  now = nowIso(),
): Promise<LiveSession | undefined> {
  const row = await db
    .selectFrom('sessions')
    .select(['id', 'user_id', 'scopes', 'last_used_at'])
    .where('id', '=', claims.sessionId)
    .where('user_id', '=', claims.userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return (
    row && { id: row.id, userId: row.user_id, scopes: decodeJson<string[]>(row.scopes), lastUsedAt: row.last_used_at }
  );
}

export async function touchSession(db: Executor, session: LiveSession, now = new Date()): Promise<void> {
  if (!lastUseDue(session.lastUsedAt, now)) return;
  await db.updateTable('sessions').set({ last_used_at: now.toISOString() }).where('id', '=', session.id).execute();
}

/** Ends every live session of a person (but `except`, the caller's own): password changes, resets, removal. */
export async function endSessions(
  db: Executor,
  userId: number,
  reason: string,
  except: number | null = null,
  now = nowIso(),
): Promise<number> {
  const result = await db
    .updateTable('sessions')
    .set({ revoked_at: now, revoked_reason: reason })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .$if(except !== null, (qb) => qb.where('id', '!=', except!))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** When each of these people last signed in (their newest session), if ever. */
export async function lastSignIns(db: Executor, userIds: number[]): Promise<Map<number, string>> {
  if (userIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('sessions')
    .select(['user_id', (eb) => eb.fn.max('created_at').as('last')])
    .where('user_id', 'in', userIds)
    .groupBy('user_id')
    .execute();
  return new Map(rows.map((r) => [r.user_id, String(r.last)]));
}
