import type { ApiKeyRecord } from '../../core/context.js';
import { clockNow } from '../../core/credentials-clock.js';
import { sha256Hex } from '../../core/crypto.js';
import { nowIso, type Database } from '../../store/database.js';
import { existingCache, ListeningCache, listeningCache } from '../../store/listening-cache.js';
import { prepared } from '../../store/prepared.js';
import { lastUseDue, resolveApiKey } from './service.js';

/**
 * API keys as resolved for requests, kept in memory on PostgreSQL, where looking a key up costs
 * every request a round trip of its own. Kept only while exact (store/listening-cache.ts): while
 * this process listens on engram_credentials, which the triggers of migration 0015 notify in the
 * transaction of every change to api_keys (but last use), projects or organizations; a change this
 * process makes forgets them once committed (credentialsChanged). A key found held is used only
 * after the listening connection has caught up (Watch.caughtUp), since a request sent on the heels
 * of a change made through another process could otherwise come before its notification: one round
 * trip on the listening connection, shared by the requests that arrive meanwhile, instead of a
 * lookup each on the pool; or, for a route whose own statement checks the credentials clock
 * (RouteAuth.checksClock), without that wait, the clock the key was read at going with the request
 * (core/credentials-clock.ts). Expiry is checked on every use; a key is kept only with the live project
 * it names (or none named and none locked), so a request naming a project that was not live is
 * looked up again.
 * SQLite has no notifications: a key is held with the credentials clock it was read at
 * (core/credentials-clock.ts, whose triggers move it in the transaction of every such change, by
 * any process on the file) and used while the clock reads the same, one read of a one-row table
 * instead of the key's lookup (a join, a digest compared and its scopes parsed).
 */
export const CREDENTIALS_CHANNEL = 'engram_credentials';

/** The keys one process holds (exported for resolved-keys-rules.test.ts). */
export class ResolvedKeys extends ListeningCache<ApiKeyRecord> {
  static readonly MAX_KEPT = 10_000;

  constructor() {
    super(ResolvedKeys.MAX_KEPT);
  }

  find(slot: string, now: string): ApiKeyRecord | undefined {
    const key = this.get(slot);
    if (key?.expiresAt != null && key.expiresAt <= now) {
      this.delete(slot);
      return undefined;
    }
    return key;
  }
}

/**
 * The live key matching a presented secret, with the live project the request names (or the key
 * is locked to): from memory when exact (above), from the database otherwise. `caughtUp`: the
 * listening connection caught up after the call began, so this process had heard every change
 * committed before it (WriteContext.caughtUp). `checksClock`: a key found held is returned at once
 * with `heldAt`, the clock it was read at, for the caller's statements to check (WriteContext.heldAt);
 * not when its last use is due to be recorded, a write that must not be made with a revoked key.
 */
export async function resolveKey(
  database: Database,
  presented: string,
  requestedProjectId?: string,
  checksClock = false,
): Promise<{ key: ApiKeyRecord; caughtUp: boolean; heldAt?: number } | undefined> {
  const state = listeningCache(database, CREDENTIALS_CHANNEL, () => new ResolvedKeys());
  if (!state) return resolveByClock(database, presented, requestedProjectId);
  const { cache: keys, watch } = state;
  const now = nowIso();
  const slot = keySlot(presented, requestedProjectId);
  const found = keys.find(slot, now);
  if (found && checksClock && !lastUseDue(found.lastUsedAt, new Date()))
    return { key: found, caughtUp: false, heldAt: found.clock };
  if (found) {
    const heldSince = keys.generation;
    await watch.caughtUp();
    // Nothing committed before this request changed any credential: what is held still holds.
    if (keys.generation === heldSince) return { key: found, caughtUp: true };
  }
  const generation = keys.generation;
  const key = await resolveApiKey(database.db, presented, requestedProjectId, now);
  if (key && key.liveProjectId === (requestedProjectId ?? key.projectId)) keys.keep(slot, generation, key);
  return key && { key, caughtUp: found !== undefined };
}

/** SQLite: the keys a process holds, each with the clock it was read at (ApiKeyRecord.clock). */
const clockedKeys = new WeakMap<Database, Map<string, ApiKeyRecord>>();

const clockReading = prepared(0, (db) => db.selectNoFrom(clockNow.as('generation')));

async function resolveByClock(database: Database, presented: string, requestedProjectId?: string) {
  let keys = clockedKeys.get(database);
  if (!keys) clockedKeys.set(database, (keys = new Map()));
  const now = nowIso();
  const slot = keySlot(presented, requestedProjectId);
  const held = keys.get(slot);
  if (held && (held.expiresAt === null || held.expiresAt > now)) {
    const [clock] = await clockReading(database.db);
    if (Number(clock!.generation) === held.clock) return { key: held, caughtUp: false };
  }
  keys.delete(slot);
  const key = await resolveApiKey(database.db, presented, requestedProjectId, now);
  if (key && key.liveProjectId === (requestedProjectId ?? key.projectId)) {
    if (keys.size >= ResolvedKeys.MAX_KEPT) keys.delete(keys.keys().next().value!);
    keys.set(slot, key);
  }
  return key && { key, caughtUp: false };
}

const keySlot = (presented: string, requestedProjectId: string | undefined) =>
  `${sha256Hex(presented)} ${requestedProjectId ?? ''}`;

/** A held key whose clock has moved (CredentialsMoved): the next resolution looks it up again, reading the clock anew. */
export function forgetKey(database: Database, presented: string, requestedProjectId?: string): void {
  existingCache(database, CREDENTIALS_CHANNEL)?.delete(keySlot(presented, requestedProjectId));
}

/** After this process committed a change to keys or projects: nothing resolved before it is used again. */
export function credentialsChanged(database: Database): void {
  existingCache(database, CREDENTIALS_CHANNEL)?.forgetAll();
}
