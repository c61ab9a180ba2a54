import pg from 'pg';
import { randomBytes } from 'node:crypto';

/** PostgreSQL LISTEN over one connection of the database's own, shared by every channel watched (Database.watch). */

/** A PostgreSQL LISTEN under way (Database.watch). */
export interface Watch {
  /**
   * Resolves once every notification committed before the call has been reported to the watcher
   * (or the watcher was told it is deaf). A notification reaches a listener asynchronously, after
   * the notifying commit has returned: a request that arrives on the heels of a change made
   * elsewhere can come before it. This is one round trip (an empty statement) on the listening
   * connection, begun after the call (calls made meanwhile share the next one): PostgreSQL (14
   * and later) sends a listener every notification already committed before the ReadyForQuery
   * that ends a statement.
   */
  caughtUp(): Promise<void>;
  stop(): void;
}

/** What a PostgreSQL LISTEN tells its watcher. */
export interface ChannelWatcher {
  /** Listening (again): every transaction that notifies from now on is reported. */
  listening(): void;
  /** A notification arrived: some transaction committed a change. */
  notified(): void;
  /** No longer listening (connection lost, or stopped): notifications may go unreported until listening() again. */
  deaf(): void;
}

const RELISTEN_AFTER_MS = 1_000;
/** application_name of the connections that LISTEN. */
export const LISTENER_APPLICATION_NAME = 'engram-listener';
/** How the payload of a listening connection's probe begins (a test can tell one pass by). */
export const LISTENER_PROBE_PREFIX = 'probe ';
const LISTENER_TIMEOUT_MS = 5_000;

/**
 * The database's listening connection: every watched channel is LISTENed on over it, so that a
 * catch-up, one empty statement, covers every channel at once.
 */
export function listener(url: string, probe: (channel: string, payload: string) => Promise<unknown>) {
  const watchers = new Map<string, Set<ChannelWatcher>>();
  const everyWatcher = () => [...watchers.values()].flatMap((set) => [...set]);
  let current: { client: pg.Client; lose: () => void; ready: boolean; probePayload: string } | undefined;
  let retry: NodeJS.Timeout | undefined;
  // LISTEN, then a probe through the pool: once it comes back here, the channel's watchers hear every later commit.
  const listen = (connection: NonNullable<typeof current>, channel: string) =>
    connection.client
      .query(`LISTEN ${pg.escapeIdentifier(channel)}`)
      .then(() => probe(channel, connection.probePayload))
      .catch(connection.lose);
  const connect = () => {
    retry = undefined;
    // Named, so that an operator (and a test) can tell it from the pool's connections. A statement
    // unanswered for LISTENER_TIMEOUT_MS loses the connection (a network that went silent), so that
    // requests waiting to catch up fall back to looking their key up instead of waiting on it.
    const own = new pg.Client({
      connectionString: url,
      application_name: LISTENER_APPLICATION_NAME,
      query_timeout: LISTENER_TIMEOUT_MS,
    });
    let lost = false;
    const lose = () => {
      if (lost) return;
      lost = true;
      own.end().catch(() => {});
      // A connection ended because nothing is watched any more is no one's loss.
      if (current?.client !== own) return;
      current = undefined;
      for (const watcher of everyWatcher()) watcher.deaf();
      if (watchers.size > 0) (retry = setTimeout(connect, RELISTEN_AFTER_MS)).unref();
    };
    const connection = {
      client: own,
      lose,
      ready: false,
      probePayload: `${LISTENER_PROBE_PREFIX}${randomBytes(12).toString('hex')}`,
    };
    current = connection;
    own.on('error', lose);
    own.on('end', lose);
    own.on('notification', (message) => {
      if (lost) return;
      for (const watcher of watchers.get(message.channel) ?? []) {
        if (message.payload === connection.probePayload) watcher.listening();
        else watcher.notified();
      }
    });
    own
      .connect()
      .then(() => {
        connection.ready = true;
        for (const channel of watchers.keys()) void listen(connection, channel);
      })
      .catch(lose);
  };

  // The round trip under way, and the one that callers arriving meanwhile wait for.
  let inFlight: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const roundTrip = async (): Promise<void> => {
    const listening = current;
    if (!listening?.ready) return; // deaf: the watchers forgot everything when told so
    // An empty statement: nothing to parse or plan, and still a ReadyForQuery after it. A failed
    // round trip may not end the connection by itself: it is lost, and the watchers told.
    await listening.client.query('').catch(listening.lose);
  };
  const caughtUp = (): Promise<void> => {
    if (!inFlight) return (inFlight = roundTrip().finally(() => (inFlight = undefined)));
    return (next ??= inFlight.then(() => {
      next = undefined;
      return caughtUp();
    }));
  };
  const unwatch = (channel: string, watcher: ChannelWatcher) => {
    const set = watchers.get(channel);
    if (!set?.delete(watcher)) return;
    if (set.size === 0) watchers.delete(channel);
    watcher.deaf();
    if (watchers.size > 0) return;
    // Nothing left to listen for.
    clearTimeout(retry);
    retry = undefined;
    const listening = current;
    current = undefined;
    listening?.client.end().catch(() => {});
  };
  return {
    watch: (channel: string, watcher: ChannelWatcher): Watch => {
      let set = watchers.get(channel);
      if (!set) watchers.set(channel, (set = new Set()));
      set.add(watcher);
      if (current?.ready) void listen(current, channel);
      else if (!current && !retry) connect();
      return { caughtUp, stop: () => unwatch(channel, watcher) };
    },
    stopAll: () => {
      for (const [channel, set] of [...watchers]) for (const watcher of [...set]) unwatch(channel, watcher);
    },
  };
}
