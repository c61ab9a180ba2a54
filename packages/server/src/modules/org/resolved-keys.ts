import type { ApiKeyRecord } from '../../core/context.js';
import { sha256Hex } from '../../core/crypto.js';
import { nowIso, type ChannelWatcher, type Database, type Watch } from '../../store/database.js';
import { resolveApiKey } from './service.js';

/**
 * API keys as resolved for requests, kept in memory on PostgreSQL, where looking a key up costs
 * every request a round trip of its own. Kept only while exact:
 * - only while this process listens on engram_credentials, which the triggers of migration 0015
 *   notify in the transaction of every change to api_keys (but last use), projects or
 *   organizations, whichever process or session commits it; every notification forgets them all,
 *   and so does losing the connection (none is used until listening again);
 * - a change this process makes forgets them all once committed (credentialsChanged), without
 *   waiting for its own notification;
 * - a lookup that began before any of these is not kept (the generation moved);
 * - a key found held is used only after the listening connection has caught up (Watch.caughtUp):
 *   a notification arrives after the notifying commit has returned, so a request sent on the heels
 *   of a change made through another process could otherwise come first. That is one round trip
 *   on the listening connection, shared by the requests that arrive meanwhile, instead of a lookup
 *   each on the pool;
 * - expiry is checked on every use; a key is kept only with the live project it names (or none
 *   named and none locked), so a request naming a project that was not live is looked up again.
 * SQLite looks a key up on every request: in process it costs no round trip, and a change another
 * process commits to the same file is then seen at once without any notification.
 */
export const CREDENTIALS_CHANNEL = 'engram_credentials';

/** The keys one process holds (exported for resolved-keys-rules.test.ts). */
export class ResolvedKeys implements ChannelWatcher {
  static readonly MAX_KEPT = 10_000;
  private readonly kept = new Map<string, ApiKeyRecord>();
  private trusted = false;
  /** Moves whenever what was resolved before may no longer hold. */
  generation = 0;

  listening(): void {
    this.forgetAll();
    this.trusted = true;
  }

  notified(): void {
    this.forgetAll();
  }

  deaf(): void {
    this.trusted = false;
    this.forgetAll();
  }

  forgetAll(): void {
    this.generation++;
    this.kept.clear();
  }

  find(slot: string, now: string): ApiKeyRecord | undefined {
    if (!this.trusted) return undefined;
    const key = this.kept.get(slot);
    if (key?.expiresAt != null && key.expiresAt <= now) {
      this.kept.delete(slot);
      return undefined;
    }
    return key;
  }

  keep(slot: string, generation: number, key: ApiKeyRecord): void {
    if (!this.trusted || generation !== this.generation) return;
    if (this.kept.size >= ResolvedKeys.MAX_KEPT) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(slot, key);
  }
}

interface Held {
  keys: ResolvedKeys;
  watch: Watch;
}

const byDatabase = new WeakMap<Database, Held | null>();

function held(database: Database): Held | null {
  let found = byDatabase.get(database);
  if (found === undefined) {
    const keys = new ResolvedKeys();
    const watch = database.watch(CREDENTIALS_CHANNEL, keys);
    found = watch ? { keys, watch } : null;
    byDatabase.set(database, found);
  }
  return found;
}

/**
 * The live key matching a presented secret, with the live project the request names (or the key
 * is locked to): from memory when exact (above), from the database otherwise.
 */
export async function resolveKey(database: Database, presented: string, requestedProjectId?: string): Promise<ApiKeyRecord | undefined> {
  const state = held(database);
  if (!state) return resolveApiKey(database.db, presented, requestedProjectId);
  const { keys, watch } = state;
  const now = nowIso();
  const slot = `${sha256Hex(presented)} ${requestedProjectId ?? ''}`;
  const found = keys.find(slot, now);
  if (found) {
    const heldSince = keys.generation;
    await watch.caughtUp();
    // Nothing committed before this request changed any credential: what is held still holds.
    if (keys.generation === heldSince) return found;
  }
  const generation = keys.generation;
  const key = await resolveApiKey(database.db, presented, requestedProjectId, now);
  if (key && key.liveProjectId === (requestedProjectId ?? key.projectId)) keys.keep(slot, generation, key);
  return key;
}

/** After this process committed a change to keys or projects: nothing resolved before it is used again. */
export function credentialsChanged(database: Database): void {
  byDatabase.get(database)?.keys.forgetAll();
}
