import { sql } from 'kysely';
import type { Executor } from '../store/database.js';

/**
 * The credentials clock (migration 0021): one row whose generation moves, in the same transaction,
 * with every change to what an API key resolves to (keys, projects, organizations) or to who
 * receives events (event_subscriptions). On PostgreSQL a process holds resolved keys and
 * subscriptions in memory (store/listening-cache.ts); a held value is exact once the listening
 * connection has caught up after the request arrived (Watch.caughtUp), one round trip. A hot route
 * (RouteAuth.checksClock) skips that wait: it uses the key as held, with the generation the key was
 * read at (`heldAt`), and a statement of its own that began after the request arrived reads the
 * clock. If the clock is still at `heldAt`, nothing the key or the subscriptions depend on changed
 * between their read and that statement's snapshot, so they were exact then; if it moved, the
 * statement must not have acted (the grouped add keeps no row of such a request), CredentialsMoved
 * is thrown, and the route authenticates again by lookup and runs again (http/auth.ts). SQLite, with
 * no notifications, holds a key while a read of the clock still gives the generation it was read at
 * (modules/org/resolved-keys.ts).
 */

/** The clock now, as a column of a statement (read in that statement's snapshot). */
export const CLOCK_NOW_SQL = '(SELECT generation FROM credentials_clock)';
export const clockNow = sql.raw<number>(CLOCK_NOW_SQL);

/** A statement found the clock moved since the request's held key was read: authenticate again and rerun. */
export class CredentialsMoved extends Error {
  constructor() {
    super('The credentials clock moved since the key this request holds was read');
  }
}

/** Throws CredentialsMoved unless `clock`, read after the request arrived, is the one its held key was read at. */
export function checkHeld(heldAt: number | undefined, clock: number | undefined): void {
  if (heldAt !== undefined && clock !== heldAt) throw new CredentialsMoved();
}

/** For a request using a held key (`heldAt` set): a statement of its own that checks the clock. */
export async function verifyHeld(db: Executor, heldAt: number | undefined): Promise<void> {
  if (heldAt === undefined) return;
  const { generation } = await db.selectNoFrom(clockNow.as('generation')).executeTakeFirstOrThrow();
  checkHeld(heldAt, generation === null ? undefined : Number(generation));
}
