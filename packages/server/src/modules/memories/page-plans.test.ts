import { CompiledQuery, sql, type Compilable, type Kysely } from 'kysely';
import { beforeAll, expect, it } from 'vitest';
import { readKeysetPage } from '../../core/paging.js';
import type { Executor } from '../../store/database.js';
import type { DB } from '../../store/schema.js';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { watchSocketWrites } from '../../testing/socket-writes.js';
import { exportPageQuery } from './export.js';
import { liveProjectPageQuery } from './feed.js';

/**
 * The plans of the keyset pages that walk a project's memories (the export job, GET /memory/export, the
 * retrieval index's load), on a table PostgreSQL has no statistics for, as right after a large fill or
 * import: read through readKeysetPage, a walk of a whole project is a scan in id order that stops at the
 * page's end, and a walk of one end user reads that end user's rows through an owner's index, never the
 * table's other rows.
 */
type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] };

forEachDialect('keyset page plans', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });
  let middle = 0;

  beforeAll(async () => {
    if (dialect !== 'postgres') return;
    // Rows of many owners, committed, then the table's statistics removed (this file's database is its own).
    await sql`insert into memories (project_id, tenant_id, end_user_id, text, tags, importance, metadata, seq, created_at, updated_at)
      select ${t.projectId}, case when g % 2 = 0 then 'acme' else '' end, 'filler-' || (g % 200), 'filler ' || g,
        '[]', 0.5, '{}', g, now(), now()
      from generate_series(1, 20000) g`.execute(t.database.db);
    await sql`delete from pg_statistic where starelid = 'memories'::regclass`.execute(t.database.db);
    const ids = await t.database.db.selectFrom('memories').select('id').orderBy('id').execute();
    middle = ids[Math.floor(ids.length / 2)]!.id;
  }, 60_000);

  type Explained = { 'QUERY PLAN': [{ Plan: PlanNode }] };
  /** The statement that explains `query`. */
  const explain = (query: Compilable): Compilable<Explained> => ({
    compile: () => {
      const compiled = query.compile();
      return CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${compiled.sql}`, [
        ...compiled.parameters,
      ]) as CompiledQuery<Explained>;
    },
  });
  /** The plan's nodes, outermost first, with the relation each scans. */
  const nodesOf = (rows: Explained[]) => {
    const nodes: string[] = [];
    const walk = (node: PlanNode): void => {
      nodes.push(
        [node['Node Type'], node['Relation Name'], node['Index Name']].filter((part) => part !== undefined).join(' '),
      );
      node.Plans?.forEach(walk);
    };
    walk(rows[0]!['QUERY PLAN'][0].Plan);
    return nodes;
  };
  const planOf = async (db: Executor, query: Compilable) => nodesOf((await db.executeQuery(explain(query))).rows);
  const asRead = async (db: Kysely<DB>, query: (executor: Executor) => Compilable, wholeProject: boolean) =>
    nodesOf(await readKeysetPage(db, (executor) => explain(query(executor)), wholeProject));

  const pages: Record<string, (executor: Executor) => Compilable> = {
    'the export job, a project': (e) => exportPageQuery(e, 'postgres', { projectId: t.projectId }, middle, 1000),
    'the export job, a tenant': (e) =>
      exportPageQuery(e, 'postgres', { projectId: t.projectId, tenantId: 'acme' }, middle, 1000),
    'GET /memory/export, a project': (e) =>
      exportPageQuery(e, 'postgres', { projectId: t.projectId, tenantId: null, endUserId: null }, middle, 500),
    'the retrieval index, a project': (e) => liveProjectPageQuery(e, t.projectId, null, middle, 1000),
    'the retrieval index, a tenant': (e) => liveProjectPageQuery(e, t.projectId, 'acme', middle, 1000),
  };
  const endUserPage = (e: Executor) =>
    exportPageQuery(e, 'postgres', { projectId: t.projectId, tenantId: '', endUserId: 'filler-7' }, middle, 500);

  it.runIf(dialect === 'postgres')(
    'planned as they come, a walk of a whole project sorts what lies past its cursor',
    async () => {
      // What the setting is for: O(n) a page, O(n²) a walk.
      for (const name of [
        'the export job, a project',
        'GET /memory/export, a project',
        'the retrieval index, a project',
      ])
        expect(await planOf(t.database.db, pages[name]!(t.database.db)), name).toContain('Sort');
    },
  );

  it.runIf(dialect === 'postgres')(
    'read as pages, a walk of a project is a scan in id order that stops at the page end',
    async () => {
      for (const [name, query] of Object.entries(pages))
        expect(await asRead(t.database.db, query, true), name).toEqual([
          'Limit',
          'Index Scan memories memories_project_id',
        ]);
    },
  );

  it.runIf(dialect === 'postgres')(
    "a walk of one end user reads that end user's rows through an owner's index, not the table past its cursor",
    async () => {
      const plan = await asRead(t.database.db, endUserPage, false);
      expect(plan.join(' / ')).toMatch(/memories_owner_/);
      expect(plan.join(' / ')).not.toMatch(/memories_pkey|memories_project_id|Seq Scan/);
    },
  );

  it.runIf(dialect === 'postgres')(
    "a page of a project is one socket write: the BEGIN, the setting, the page's statement and the COMMIT",
    async () => {
      const port = Number(new URL(process.env.ENGRAM_TEST_DATABASE_URL!).port || 5432);
      const page = (e: Executor) => exportPageQuery(e, 'postgres', { projectId: t.projectId }, middle, 1000);
      await readKeysetPage(t.database.db, page, true); // the statement prepared
      const { written, stop } = watchSocketWrites(port);
      try {
        expect(await readKeysetPage(t.database.db, page, true)).toHaveLength(1000);
      } finally {
        stop();
      }
      // The page's statement is not held back until the setting is answered.
      expect(written).toHaveLength(1);
    },
  );
});
