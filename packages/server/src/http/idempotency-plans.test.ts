import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { addStatement } from '../modules/memories/add.js';
import { forEachDialect, useTestApp } from '../testing/harness.js';
import { claimTogether, INSERTED_RECORD, storeTogether } from './idempotency.js';

/**
 * The grouped statements that claim, hold, record and answer Idempotency-Keys on PostgreSQL reach each claim through
 * the primary key's index, in the plan a connection keeps (generic, made at its first execution) whether it was made
 * on an empty table, on 30,000 claims without statistics or after ANALYZE. A plan made on a small table that
 * hash-joined the statement's input to a scan of every claim took 13-15 ms a statement at 30,000 claims.
 */
type PlanNode = { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] };

forEachDialect('Idempotency-Key statement plans', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });
  const at = '2026-01-01T00:00:00.000Z';
  const key = { principal: 'api_key:1', key_hash: 'a'.repeat(64), created_at: at };
  const statements: Record<string, { text: string; given: Record<string, unknown> }> = {
    'a journaled add': {
      text: addStatement.textFor(INSERTED_RECORD),
      given: {
        ctx_organization_id: 'org',
        ctx_project_id: 'project',
        ctx_actor_type: 'api_key',
        ctx_actor_id: 1,
        ctx_now: at,
        journal_principal: key.principal,
        journal_key_hash: key.key_hash,
        journal_created_at: at,
        journal_committed: 'sealed',
      },
    },
    'the claims': { text: claimTogether.text, given: { ...key, fingerprint: 'f', locked_until: at, expires_at: at } },
    'the answers': { text: storeTogether.text, given: { ...key, status: 201, response: 'r', subjects: '[]' } },
  };
  /** How each statement's plan reads idempotency_keys: the kinds of its nodes on the table. */
  const readsOfClaims = async (suffix: string) => {
    const reads: Record<string, string[]> = {};
    await t.database.db.connection().execute(async (db) => {
      await sql`SET plan_cache_mode = force_generic_plan`.execute(db);
      try {
        for (const [name, { text, given }] of Object.entries(statements)) {
          const prepared = `plans_${name.replace(/\W/g, '_')}_${suffix}`;
          await sql.raw(`PREPARE ${prepared} AS ${text}`).execute(db);
          const literal = `'${JSON.stringify([{ ord: 0, ...given }])}'`;
          const [row] = (
            await sql
              .raw<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) EXECUTE ${prepared}(${literal})`)
              .execute(db)
          ).rows;
          await sql.raw(`DEALLOCATE ${prepared}`).execute(db);
          const nodes: string[] = [];
          const walk = (node: PlanNode): void => {
            if (node['Relation Name'] === 'idempotency_keys') nodes.push(node['Node Type']);
            node.Plans?.forEach(walk);
          };
          walk(row!['QUERY PLAN'][0].Plan);
          reads[name] = nodes;
        }
      } finally {
        await sql`RESET plan_cache_mode`.execute(db);
      }
    });
    return reads;
  };
  const expectLookups = (reads: Record<string, string[]>) => {
    for (const [name, nodes] of Object.entries(reads))
      expect(
        nodes.filter((node) => node !== 'ModifyTable' && !node.startsWith('Index') && !node.startsWith('Bitmap')),
        name,
      ).toEqual([]);
    // The journaled add's lock and the answers' lock look their claims up; the claims' insert meets them through ON CONFLICT.
    for (const name of ['a journaled add', 'the answers'])
      expect(
        reads[name]!.some((node) => node.startsWith('Index') || node.startsWith('Bitmap')),
        name,
      ).toBe(true);
  };

  it.runIf(dialect === 'postgres')(
    'on an empty table, on 30,000 claims, and after ANALYZE',
    async () => {
      expectLookups(await readsOfClaims('empty'));
      // Claims committed (this file's database is its own), with no statistics yet, as autovacuum off or not yet run.
      await sql`insert into idempotency_keys (principal, key_hash, fingerprint, status, response, created_at, locked_until, expires_at, committed)
      select 'api_key:1', md5(g::text) || md5((g + 1)::text), md5(g::text), 201, repeat('r', 600), now(), now(), now() + interval '1 day', repeat('c', 300)
      from generate_series(1, 30000) g`.execute(t.database.db);
      expectLookups(await readsOfClaims('unanalysed'));
      await sql`analyze idempotency_keys`.execute(t.database.db);
      expectLookups(await readsOfClaims('analysed'));
    },
    60_000,
  );
});
