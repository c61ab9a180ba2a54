import { sql } from 'kysely';
import { afterAll, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../testing/harness.js';
import { startWorkerProcess, type BackgroundProcess } from '../testing/process.js';
import { until } from '../testing/until.js';
import type { Database } from './database.js';
import { CONTEST_MS, LEADER_APPLICATION_NAME, LEADER_LOCK_CLASS, startLeadership } from './leadership.js';

const quiet = { warn() {} };

/** The backends holding the leader's lock in the test database (at most one while the database is up). */
async function leaderBackends(database: Database): Promise<number[]> {
  const { rows } = await sql<{ pid: number }>`SELECT a.pid FROM pg_locks l JOIN pg_stat_activity a USING (pid)
    WHERE l.locktype = 'advisory' AND l.classid::int8 = ${LEADER_LOCK_CLASS} AND l.granted
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND a.application_name = ${LEADER_APPLICATION_NAME}`.execute(database.db);
  return rows.map((row) => row.pid);
}

forEachDialect('the fleet leader', (dialect) => {
  // Background work runs only where a test starts it, never in the test app.
  const t = useTestApp(dialect, { runJobs: false });
  const owner = useOwner(t);
  const workers: BackgroundProcess[] = [];
  afterAll(() => Promise.all(workers.map((w) => w.stop('SIGKILL'))));
  const worker = () => {
    const w = startWorkerProcess({ ENGRAM_DATABASE_URL: t.databaseUrl, ENGRAM_LOG_LEVEL: 'warn' });
    workers.push(w);
    return w;
  };
  /** Whether the audit row of the memory added with `text` is sealed, as the API lists it. */
  const sealed = async (text: string) => {
    const added = await t.call('POST', '/memory/add', { body: { text } });
    expect(added.status).toBe(201);
    return async () => {
      const res = await t.call('GET', `/admin/team/audit-logs?action=memory.add&limit=100`, { token: owner.token });
      const row = res.body.items.find((e: { target_id: string }) => e.target_id === String(added.body.id));
      return row?.sealed === true;
    };
  };

  it('one process of several leads; another takes over within a bound when the leader is killed', async () => {
    const first = worker();
    if (dialect === 'postgres') await until(async () => (await leaderBackends(t.database)).length === 1, 'a leader');
    worker();
    // The chores run in the fleet: the leader seals what any process wrote.
    await until(await sealed('before the kill'), 'a row sealed by the leader', 20_000);
    if (dialect === 'postgres') {
      const [leader] = await leaderBackends(t.database);
      // The second worker asked and was refused: still the first's connection.
      await new Promise((resolve) => setTimeout(resolve, 2 * CONTEST_MS));
      expect(await leaderBackends(t.database)).toEqual([leader]);
    }
    expect(await first.stop('SIGKILL')).toBe(null);
    if (dialect === 'postgres')
      await until(async () => (await leaderBackends(t.database)).length === 1, 'a new leader', 5 * CONTEST_MS);
    await until(await sealed('after the kill'), 'a row sealed by the new leader', 20_000);
  });

  it('leads at once on SQLite; on PostgreSQL exactly one of two leads, and the other after it closes', async () => {
    const a = startLeadership(t.database, quiet);
    const b = startLeadership(t.database, quiet);
    try {
      if (dialect === 'sqlite') {
        expect([a.leads(), b.leads()]).toEqual([true, true]);
        return;
      }
      // The workers of the test above are gone (killed) or still leading: this test's pair waits for its turn.
      await Promise.all(workers.map((w) => w.stop('SIGKILL')));
      const leader = await until(() => (a.leads() ? a : b.leads() ? b : null), 'one of two to lead', 5 * CONTEST_MS);
      const other = leader === a ? b : a;
      let cameToLead = false;
      other.onLead(() => (cameToLead = true));
      await new Promise((resolve) => setTimeout(resolve, 2 * CONTEST_MS));
      expect(other.leads()).toBe(false);
      await leader.close();
      await until(() => other.leads(), 'the other to lead', 5 * CONTEST_MS);
      expect(cameToLead).toBe(true);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('keeps asking, more slowly each time, while the database cannot be reached, and never throws', async () => {
    if (dialect === 'sqlite') return;
    const unreachable = 'postgres://postgres@127.0.0.1:1/nowhere';
    const warnings: Array<{ failures: number }> = [];
    const database = {
      config: { dialect: 'postgres', url: unreachable, directUrl: unreachable },
      pooled: async () => false,
    } as unknown as Database;
    const leadership = startLeadership(database, { warn: (fields: { failures: number }) => warnings.push(fields) });
    try {
      await until(() => warnings.length >= 2, 'two failed attempts', 10_000);
      expect(warnings.map((w) => w.failures).slice(0, 2)).toEqual([1, 2]);
      expect(leadership.leads()).toBe(false);
    } finally {
      await leadership.close();
    }
  });
});
