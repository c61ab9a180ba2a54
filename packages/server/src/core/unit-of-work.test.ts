import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../testing/harness.js';
import { bookkeeping, CommitGroup } from './commit-group.js';
import { groupedStatement } from './grouped-statements.js';
import { write } from './unit-of-work.js';
import type { Executor } from '../store/database.js';

/**
 * Writes arriving together (on SQLite they share one group commit, each in its own savepoint):
 * one that fails midway leaves nothing behind and takes nothing of the others with it.
 */
forEachDialect('concurrent writes, one failing midway', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });

  it('commits every write but the failing one, whose memory, history, revision and audit row are gone', async () => {
    const db = t.database.db;
    // Fails the history insert of one text, after its memory row and revision bump were written.
    if (dialect === 'sqlite') {
      await sql`CREATE TRIGGER poison_history BEFORE INSERT ON memory_history WHEN NEW.changes LIKE '%poison%' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`.execute(
        db,
      );
    } else {
      await sql`CREATE FUNCTION poison_history() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.changes::text LIKE '%poison%' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$`.execute(
        db,
      );
      await sql`CREATE TRIGGER poison_history BEFORE INSERT ON memory_history FOR EACH ROW EXECUTE FUNCTION poison_history()`.execute(
        db,
      );
    }
    const texts = Array.from({ length: 12 }, (_, i) => (i === 5 ? 'poison pill' : `grouped write number ${i}`));
    const answers = await Promise.all(
      texts.map((text) => t.call('POST', '/memory/add', { endUser: 'grouped', body: { text } })),
    );
    expect(answers.map((a) => a.status)).toEqual(texts.map((_, i) => (i === 5 ? 500 : 201)));
    // A missing memory answers 404 from inside its write, beside writes that succeed.
    const patches = await Promise.all([
      t.call('PATCH', '/memory/999999', { endUser: 'grouped', body: { importance: 0.9 } }),
      t.call('PATCH', `/memory/${answers[0]!.body.id}`, { endUser: 'grouped', body: { importance: 0.9 } }),
    ]);
    expect(patches.map((p) => p.status)).toEqual([404, 200]);

    const stored = await db
      .selectFrom('memories')
      .select(['id', 'text', 'importance'])
      .where('end_user_id', '=', 'grouped')
      .orderBy('id')
      .execute();
    expect(stored.map((m) => m.text).sort()).toEqual(texts.filter((x) => x !== 'poison pill').sort());
    expect(stored.find((m) => m.id === answers[0]!.body.id)!.importance).toBe(0.9);
    const history = await db
      .selectFrom('memory_history')
      .select(['memory_id', 'action'])
      .where(
        'memory_id',
        'in',
        stored.map((m) => m.id),
      )
      .execute();
    expect(history).toHaveLength(12);
    // The update, the last change, stamped its memory with the owner's revision. On SQLite eleven adds
    // and the update bumped it once each, and the failed add's bump was rolled back with it; on
    // PostgreSQL the adds that shared a statement (core/grouped-statements.ts#groupedInsert) bumped it once.
    const owner = await db
      .selectFrom('end_users')
      .select('revision')
      .where('end_user_id', '=', 'grouped')
      .executeTakeFirstOrThrow();
    const seqs = await db.selectFrom('memories').select('seq').where('end_user_id', '=', 'grouped').execute();
    expect(Number(owner.revision)).toBe(Math.max(...seqs.map((m) => Number(m.seq))));
    if (dialect === 'sqlite') expect(Number(owner.revision)).toBe(12);
    else expect(Number(owner.revision)).toBeLessThanOrEqual(12);
    const audits = await db
      .selectFrom('audit_log')
      .select('action')
      .where('organization_id', '=', t.organizationId)
      .execute();
    expect(audits.filter((a) => a.action === 'memory.add')).toHaveLength(11);
    expect(audits.filter((a) => a.action === 'memory.update')).toHaveLength(1);
  });
});

/**
 * SQLite's group commit waits for writes while the event loop keeps bringing them, and no longer;
 * on PostgreSQL every write() has a transaction of its own.
 */
forEachDialect('group commit over quiet turns', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });
  const ctx = () => ({
    actor: { type: 'system' as const, id: null },
    organizationId: t.organizationId,
    projectId: t.projectId,
    requestId: null,
  });
  const transactionOf = () => write(t.database, ctx(), async (trx) => trx);
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  it('joins writes submitted over consecutive turns in one transaction (SQLite), up to its cap, and commits after a quiet turn', async () => {
    // One write per turn: on SQLite the first GROUP_TURNS share a transaction, the next starts another.
    const submitted: Promise<unknown>[] = [];
    for (let turn = 0; turn <= CommitGroup.GROUP_TURNS; turn++) {
      submitted.push(transactionOf());
      await nextTurn();
    }
    const transactions = await Promise.all(submitted);
    expect(new Set(transactions.slice(0, CommitGroup.GROUP_TURNS)).size).toBe(
      dialect === 'sqlite' ? 1 : CommitGroup.GROUP_TURNS,
    );
    expect(transactions[CommitGroup.GROUP_TURNS]).not.toBe(transactions[0]);

    // A write after a turn that brought nothing is in the next group.
    const first = transactionOf();
    await nextTurn();
    await nextTurn();
    await nextTurn();
    expect(await transactionOf()).not.toBe(await first);
  });
});

/**
 * PostgreSQL bookkeeping statements for many writes at once (groupedStatement: the Idempotency-Key claims and
 * stored answers): writes submitted together share a statement unless they share an exclusive key, and a write
 * PostgreSQL refuses fails alone.
 */
forEachDialect('grouped statements', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });

  it.runIf(dialect === 'postgres')(
    'shares a statement among writes submitted together, but not between two of one exclusive key',
    async () => {
      // Each write's row says which transaction (so which statement) ran it; a divisor of 0 makes PostgreSQL refuse it.
      const probe = groupedStatement(
        [['divisor', 'integer']],
        'SELECT given.ord, txid_current()::text AS statement, 1 / given.divisor AS one FROM given',
      );
      const writes = [
        { key: 'a', divisor: 1 },
        { key: 'a', divisor: 1 },
        { key: 'b', divisor: 1 },
        { key: 'c', divisor: 1 },
      ];
      const rows = await Promise.all(writes.map((w) => probe<{ statement: string }>(t.database, [w.divisor], [w.key])));
      expect(rows.map((r) => r.length)).toEqual([1, 1, 1, 1]);
      const [first, second, b, c] = rows.map((r) => r[0]!.statement);
      expect(second).not.toBe(first);
      expect([b, c]).toEqual([first, first]);

      const refused = await Promise.allSettled(
        [1, 0, 1].map((divisor, i) => probe<{ statement: string }>(t.database, [divisor], [`k${i}`])),
      );
      expect(refused.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((refused[1] as PromiseRejectedResult).reason.code).toBe('22012');
    },
  );
});

forEachDialect('bookkeeping on SQLite', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });

  it.runIf(dialect === 'sqlite')(
    'commits a group of bookkeeping alone without its own fsync, and every group with a write at FULL',
    async () => {
      const level = async (db: Executor) =>
        Number(Object.values((await sql<Record<string, unknown>>`PRAGMA synchronous`.execute(db)).rows[0]!)[0]);
      const ctx = {
        actor: { type: 'system' as const, id: null },
        organizationId: t.organizationId,
        projectId: null,
        requestId: null,
      };
      // Submitted together: one group, which holds a write, so it commits at FULL (2).
      const together = await Promise.all([
        bookkeeping(t.database, level),
        write(t.database, ctx, (trx) => level(trx)),
        bookkeeping(t.database, level),
      ]);
      expect(together).toEqual([2, 2, 2]);
      // Bookkeeping alone commits at NORMAL (1); the connection is back at FULL after it, for every other commit.
      expect(await Promise.all([bookkeeping(t.database, level), bookkeeping(t.database, level)])).toEqual([1, 1]);
      expect(await level(t.database.db)).toBe(2);
      expect(await write(t.database, ctx, (trx) => level(trx))).toBe(2);
      // A bookkeeping group that fails still leaves the connection at FULL.
      await expect(
        bookkeeping(t.database, async (db) => sql`SELECT * FROM no_such_table`.execute(db)),
      ).rejects.toThrow();
      expect(await level(t.database.db)).toBe(2);
    },
  );
});
