import pg from 'pg';
import type { BaseLogger } from 'pino';
import type { Database } from './database.js';

/**
 * Which process of a fleet on one PostgreSQL database runs the fleet's periodic work: the chores that
 * go through the whole database (audit sealing, purges, retention, expiry) and the idle polls that look
 * for work other processes committed (webhook outbox and due deliveries, queued jobs). Each process
 * running background work asks for a session advisory lock (LEADER_LOCK_CLASS) on a connection of its
 * own; the one holding it leads. The database releases the lock the moment the leader's connection
 * ends (the process stopped or was killed, or the connection was lost), and the others ask again every
 * CONTEST_MS, so the fleet has a leader again within about that long.
 *
 * Leading is an economy, not a guarantee of one runner: every chore and poll is safe in several
 * processes at once (they ran in every process before, taking turns by their own locks), so a
 * connection lost without the leader noticing at once (two leaders for a moment) costs only the
 * duplicate work. A process that does not lead still works on what it commits itself (its own commits
 * wake its delivery loop and job runner) and polls slowly (FOLLOWER_POLL_MS) in case the leader is stuck.
 * SQLite, and PostgreSQL behind a transaction-mode pooler with no direct URL (a session lock there
 * would be held by whichever client the pooler's server connection serves next): every process leads.
 */
export interface Leadership {
  /** Whether this process runs the fleet's chores and polls often now. */
  leads(): boolean;
  /** Calls `listener` each time this process comes to lead; returns the function that stops calling it. */
  onLead(listener: () => void): () => void;
  close(): Promise<void>;
}

/** The first key of the leader's advisory lock (migrations hold 724991, exports 724992, the audit sealer 724993, presence 724994). */
export const LEADER_LOCK_CLASS = 724_995;
/** application_name of the leadership connection. */
export const LEADER_APPLICATION_NAME = 'engram-leader';
/** A process not leading asks for the lock this often: after the leader dies, the fleet leads again within about this long. */
export const CONTEST_MS = 1_000;
/** How often a process not leading polls for work committed by other processes (the leader's polls find it first). */
export const FOLLOWER_POLL_MS = 5_000;
/** The leader's statement on its connection now and then, so a lost connection is noticed (and the lock known gone). */
const KEEPALIVE_MS = 5_000;
/** Failed attempts (the database unreachable) wait twice as long each time, up to this. */
const MAX_BACKOFF_MS = 30_000;

/** Every process leads: SQLite, or no session lock to be had (startLeadership). */
export const everyProcessLeads: Leadership = { leads: () => true, onLead: () => () => {}, close: async () => {} };

export function startLeadership(database: Database, log: Pick<BaseLogger, 'warn'>): Leadership {
  const { config } = database;
  if (config.dialect !== 'postgres') return everyProcessLeads;
  const direct = config.directUrl;
  const pooled = direct ? async () => false : database.pooled;
  let leading = false;
  let closed = false;
  let client: pg.Client | null = null;
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;
  const listeners = new Set<() => void>();

  const lead = (now: boolean) => {
    if (now === leading) return;
    leading = now;
    if (now) for (const listener of listeners) listener();
  };
  // The connection ended: its lock with it.
  const drop = (own: pg.Client) => {
    if (client !== own) return;
    client = null;
    lead(false);
    own.end().catch(() => {});
  };
  const step = async (): Promise<void> => {
    timer = undefined;
    try {
      if (!client) {
        if (await pooled()) return lead(true);
        const own = new pg.Client({
          connectionString: direct ?? config.url,
          application_name: LEADER_APPLICATION_NAME,
          query_timeout: 10_000,
        });
        own.on('error', () => drop(own));
        own.on('end', () => drop(own));
        client = own;
        await own.connect();
      }
      if (closed) return;
      if (leading) await client.query('SELECT 1');
      else
        lead(
          (await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${LEADER_LOCK_CLASS}, 0) AS ok`)).rows[0]!
            .ok,
        );
      failures = 0;
    } catch (error) {
      failures++;
      if (client) drop(client);
      log.warn(
        { err: error instanceof Error ? error.message : String(error), failures },
        'leadership: database error; asking again later',
      );
    }
    if (closed) return;
    const wait = failures
      ? Math.min(MAX_BACKOFF_MS, CONTEST_MS * 2 ** Math.min(failures, 5))
      : leading
        ? KEEPALIVE_MS
        : CONTEST_MS;
    (timer = setTimeout(() => void step(), wait)).unref();
  };
  void step();

  return {
    leads: () => leading,
    onLead: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: async () => {
      closed = true;
      clearTimeout(timer);
      leading = false;
      const own = client;
      client = null;
      await own?.end().catch(() => {});
    },
  };
}
