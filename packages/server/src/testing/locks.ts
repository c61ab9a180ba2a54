import { sql, type Transaction } from 'kysely';
import type { DB } from '../store/schema.js';
import type { TestApp } from './harness.js';
import { until } from './until.js';

/**
 * PostgreSQL interleavings without timing: a transaction of the test holds end users' revision
 * rows (the owner lock that nextSeq takes, forgetting included) until released, so writes started
 * meanwhile queue behind it, each waiting for the lock, and go on in the order they queued.
 */
export async function holdOwnerLocks(t: TestApp, endUserIds: string[]): Promise<{ release: () => Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked!: () => void;
  const taken = new Promise<void>((resolve) => (locked = resolve));
  const holder = t.database.db.transaction().execute(async (trx) => {
    const { rows } = await sql`SELECT revision FROM end_users WHERE project_id = ${t.projectId} AND tenant_id = ''
      AND end_user_id IN (${sql.join(endUserIds)}) FOR UPDATE`.execute(trx);
    if (rows.length !== endUserIds.length) throw new Error(`no revision row for some of ${endUserIds.join(', ')}`);
    locked();
    await released;
  });
  await Promise.race([taken, holder]);
  return held(release, holder);
}

/**
 * PostgreSQL: a transaction of the test makes `write` and holds it uncommitted until released, then
 * commits it (`commit`) or rolls it back; a request's write of the same rows meanwhile waits for it.
 * Waiters get a row in the order they queued only while its holder merely locked it: once a holder that
 * updated the row commits, its waiter re-reads the new row version unlocked, and a statement issued
 * just then can reach that version first (webhooks.test.ts, the resume raced with a disable).
 */
export async function holdUncommitted(
  t: TestApp,
  write: (trx: Transaction<DB>) => Promise<unknown>,
  { commit = false } = {},
): Promise<{ release: () => Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let written!: () => void;
  const made = new Promise<void>((resolve) => (written = resolve));
  const holder = t.database.db
    .transaction()
    .execute(async (trx) => {
      await write(trx);
      written();
      await released;
      if (!commit) throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
  await Promise.race([made, holder]);
  return held(release, holder);
}

class RolledBack extends Error {}

/** Holds not released yet: a test that fails while holding one must not leave its app waiting at shutdown. */
const unreleased = new Set<() => Promise<void>>();

function held(release: () => void, holder: Promise<unknown>): { release: () => Promise<void> } {
  const released = async () => {
    unreleased.delete(released);
    release();
    await holder;
  };
  unreleased.add(released);
  return { release: released };
}

/** Releases what a test still holds (testing/file-setup.ts runs it after each test). */
export async function releaseHeldLocks(): Promise<void> {
  await Promise.allSettled([...unreleased].map((release) => release()));
}

/** PostgreSQL: how many backends of the test's database wait for a lock. */
export async function lockWaiterCount(t: TestApp): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(t.database.db);
  return rows[0]!.n;
}

/** PostgreSQL: waits until at least `count` backends of the test's database wait for a lock. */
export async function lockWaiters(t: TestApp, count: number, what: string): Promise<void> {
  await until(async () => (await lockWaiterCount(t)) >= count, what, 10_000);
}

/**
 * PostgreSQL: every other backend of the test's database, what it waits for, who blocks it and what it runs: what a
 * test waiting for an interleaving prints when the interleaving did not come.
 */
export async function lockReport(t: TestApp): Promise<string> {
  const { rows } = await sql<{
    pid: number;
    state: string | null;
    wait: string | null;
    blocked_by: number[];
    query: string;
  }>`
    SELECT pid, state, wait_event_type || ':' || wait_event AS wait, pg_blocking_pids(pid) AS blocked_by, left(query, 160) AS query
    FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY pid`.execute(
    t.database.db,
  );
  return rows
    .map((r) => `${r.pid} ${r.state} ${r.wait ?? '-'} blocked by [${r.blocked_by.join(',')}]: ${r.query}`)
    .join('\n');
}

/** `until`, whose failure also names every backend of the test's database and the locks it waits for (PostgreSQL). */
export async function untilLocked<T>(
  t: TestApp,
  check: () => Promise<T | undefined | null | false>,
  what: string,
  limitMs = 30_000,
): Promise<T> {
  try {
    return await until(check, what, limitMs);
  } catch (error) {
    throw new Error(`${(error as Error).message}; backends:\n${await lockReport(t)}`);
  }
}
