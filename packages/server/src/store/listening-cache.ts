import type { Database } from './database.js';
import type { ChannelWatcher, Watch } from './listener.js';

/**
 * Values read from PostgreSQL and kept in this process's memory only while exact: only while the
 * process listens on a channel that triggers notify in the transaction of every change to what the
 * values were read from, whichever process or session commits it (Database.watch). Everything is
 * forgotten on each notification, on losing the connection, on listening again, and when this
 * process committed such a change itself (forgetAll), without waiting for its own notification;
 * a read that began before any of these is not kept (the generation moved); nothing is kept or
 * found while not listening. A notification arrives after the notifying commit has returned to its
 * author, so a value found kept answers for a moment only once the listening connection has caught
 * up after it (Watch.caughtUp). Used for resolved API keys (modules/org/resolved-keys.ts) and event
 * subscriptions (core/event-subscriptions.ts).
 */
export class ListeningCache<V> implements ChannelWatcher {
  private readonly kept = new Map<string, V>();
  private trusted = false;
  /** Moves whenever what was read before may no longer hold. */
  generation = 0;

  constructor(private readonly maxKept: number) {}

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

  /** Whether values are kept at all (listening). */
  get listens(): boolean {
    return this.trusted;
  }

  get(key: string): V | undefined {
    return this.trusted ? this.kept.get(key) : undefined;
  }

  delete(key: string): void {
    this.kept.delete(key);
  }

  /** Keeps a value read since `generation` was current, if nothing changed meanwhile; the oldest goes past maxKept. */
  keep(key: string, generation: number, value: V): void {
    if (!this.trusted || generation !== this.generation) return;
    if (this.kept.size >= this.maxKept) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(key, value);
  }
}

const byDatabase = new WeakMap<Database, Map<string, { cache: ListeningCache<unknown>; watch: Watch } | null>>();

/** The cache that `channel` keeps exact for this database, watched from its first use; null on SQLite. */
export function listeningCache<C extends ListeningCache<unknown>>(
  database: Database,
  channel: string,
  create: () => C,
): { cache: C; watch: Watch } | null {
  let channels = byDatabase.get(database);
  if (!channels) byDatabase.set(database, (channels = new Map()));
  let found = channels.get(channel);
  if (found === undefined) {
    const cache = create();
    const watch = database.watch(channel, cache);
    found = watch ? { cache, watch } : null;
    channels.set(channel, found);
  }
  return found as { cache: C; watch: Watch } | null;
}

/** The cache of `channel` if this database has one in use (to forget what it holds). */
export function existingCache(database: Database, channel: string): ListeningCache<unknown> | undefined {
  return byDatabase.get(database)?.get(channel)?.cache;
}
