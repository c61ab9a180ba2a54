/**
 * The export job against another revision's, in one sitting (issue 51): fills a SQLite and a PostgreSQL database once
 * (`--total` memories, default 100,000, of 1,000 end users, through importMemories as bench/export.ts does), then for
 * `--rounds` rounds (default 3) exports each (jsonl) with the base build's job and with this checkout's, alternating
 * which goes first, and reports per export the rows per second, this process's CPU and the PostgreSQL backends' CPU,
 * and per round and side PostgreSQL's rate over SQLite's. Both sides run compiled code: this checkout's
 * packages/server/dist (`npm run build` first) and REV's, built by bench/lib/baseline.ts. Prints JSON.
 * `--profile DIR` writes each PostgreSQL export's CPU profile there.
 *   node --import tsx bench/export-pair.ts --postgres postgres://postgres@127.0.0.1:5432/postgres --base main [--total N] [--rounds N] [--profile DIR]
 */
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { option } from './lib/args.js';
import { profiled } from './lib/profile.js';
import { baselineMain, median } from './lib/baseline.js';
import { postgresCpuSeconds } from './lib/cpu.js';
import { freshDataDir, freshPostgres } from './lib/server.js';

const total = Number(option('--total') ?? 100_000);
const rounds = Number(option('--rounds') ?? 3);
const postgresUrl = option('--postgres');
const baseRev = option('--base');
const profileDir = option('--profile');
if (!postgresUrl || !baseRev) throw new Error('--postgres URL and --base REV are required');
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** One build's export job and what it needs, loaded from its compiled dist directory. */
async function buildAt(dist: string) {
  const load = (path: string) => import(pathToFileURL(join(dist, path)).href);
  const [exportsModule, service, memories, org, blobs, database, migrations] = await Promise.all([
    load('modules/exports/index.js'),
    load('modules/exports/service.js'),
    load('modules/memories/index.js'),
    load('modules/org/index.js'),
    load('store/blobs/open.js'),
    load('store/database.js'),
    load('store/migrate.js'),
  ]);
  return {
    exportJob: exportsModule.exportJob,
    createExport: service.createExport,
    importMemories: memories.importMemories,
    createOrganization: org.createOrganization,
    createProject: org.createProject,
    openBlobStore: blobs.openBlobStore,
    openDatabase: database.openDatabase,
    migrate: migrations.migrate,
  };
}

const current = await buildAt(join(repoRoot, 'packages/server/dist'));
const base = await buildAt(dirname(baselineMain(repoRoot, baseRev).main));

const fresh = await freshPostgres(postgresUrl);
const sqliteDir = freshDataDir();
const configs = {
  sqlite: { dialect: 'sqlite', path: join(sqliteDir, 'engram.db') },
  postgres: { dialect: 'postgres', url: fresh.url, poolSize: 5, preparedStatements: true },
} as const;
type DialectName = keyof typeof configs;

/** Fills a database through this checkout's code; answers the project to export. */
async function fill(dialect: DialectName) {
  const database = current.openDatabase(configs[dialect]);
  try {
    await current.migrate(database);
    const organization = await current.createOrganization(database.db, 'Bench');
    const project = await current.createProject(database.db, {
      organizationId: organization.id,
      name: 'Source',
      slug: 'source',
    });
    const ctx = { actor: { type: 'system', id: null }, organizationId: organization.id, projectId: project.id };
    for (let start = 0; start < total; start += 1000) {
      const batch = Array.from({ length: Math.min(1000, total - start) }, (_, i) => {
        const n = start + i;
        return {
          owner: { projectId: project.id, tenantId: '', endUserId: `user-${n % 1000}` },
          item: {
            text: `Benchmark memory ${n}: the user mentioned preference ${n % 97} while planning trip ${n}`,
            tags: [`t${n % 13}`],
            metadata: { n },
          },
        };
      });
      await current.importMemories(database, { ...ctx, requestId: null }, batch);
    }
    return ctx;
  } finally {
    await database.close();
  }
}

/** Each build's connection to each database, opened once (a job meets a pool already warm). */
const opened = new Map<string, { database: any; blobs: any }>();
function databaseOf(build: typeof current, dialect: DialectName) {
  const key = `${build === base ? 'base' : 'current'}-${dialect}`;
  let entry = opened.get(key);
  if (!entry) {
    const database = build.openDatabase(configs[dialect]);
    opened.set(key, (entry = { database, blobs: build.openBlobStore({ kind: 'database' }, database) }));
  }
  return entry;
}

/** One jsonl export by `build` of `dialect`'s database: rows/s, this process's CPU and the database's, in ms. */
async function exportOnce(
  build: typeof current,
  dialect: DialectName,
  ctx: Awaited<ReturnType<typeof fill>>,
  name: string,
) {
  const { database, blobs } = databaseOf(build, dialect);
  const record = await build.createExport(
    database,
    { ...ctx, requestId: null },
    { format: 'jsonl', gzip: false },
    86_400,
  );
  const job = {
    id: record.id,
    projectId: ctx.projectId,
    payload: { exportId: record.id },
    attempt: 1,
    finalAttempt: true,
    progress: async () => {},
  };
  (globalThis as { gc?: () => void }).gc?.();
  const databaseCpu = dialect === 'postgres' ? postgresCpuSeconds(configs.postgres.url) : 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  const result = await profiled(profileDir, name, () => build.exportJob(database, blobs)(job));
  const seconds = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  if (result.rows !== total) throw new Error(`${name}: ${JSON.stringify(result)}`);
  // The artifact is not kept: each export writes 40 MB into the same database.
  await blobs.delete(
    (await database.db.selectFrom('exports').select('blob_key').where('id', '=', record.id).executeTakeFirstOrThrow())
      .blob_key,
  );
  return {
    rows_per_second: Math.round(total / seconds),
    node_cpu_ms: Math.round((used.user + used.system) / 1000),
    ...(dialect === 'postgres' && {
      postgres_cpu_ms: Math.round((postgresCpuSeconds(configs.postgres.url) - databaseCpu) * 1000),
    }),
  };
}

try {
  const projects = { sqlite: await fill('sqlite'), postgres: await fill('postgres') };
  const runs: Record<string, unknown>[] = [];
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (['base', 'current'] as const) : (['current', 'base'] as const);
    for (const side of order) {
      const build = side === 'base' ? base : current;
      const load_before = loadavg()[0]!.toFixed(1);
      const sqlite = await exportOnce(build, 'sqlite', projects.sqlite, `${side}-sqlite-${round}`);
      const postgres = await exportOnce(build, 'postgres', projects.postgres, `${side}-postgres-${round}`);
      const ratio = Math.round((postgres.rows_per_second / sqlite.rows_per_second) * 100) / 100;
      runs.push({
        round,
        side,
        load: `${load_before}-${loadavg()[0]!.toFixed(1)}`,
        sqlite,
        postgres,
        pg_over_sqlite: ratio,
      });
    }
  }
  const summary = (side: string) => {
    const of = runs.filter((r) => r.side === side) as {
      pg_over_sqlite: number;
      postgres: { rows_per_second: number; node_cpu_ms: number; postgres_cpu_ms: number };
    }[];
    return {
      pg_over_sqlite_median: median(of.map((r) => r.pg_over_sqlite)),
      postgres_rows_per_second_median: median(of.map((r) => r.postgres.rows_per_second)),
      postgres_node_cpu_ms_median: median(of.map((r) => r.postgres.node_cpu_ms)),
      postgres_database_cpu_ms_median: median(of.map((r) => r.postgres.postgres_cpu_ms)),
    };
  };
  process.stdout.write(
    `${JSON.stringify({ benchmark: 'export-pair', base: baseRev, memories: total, runs, base_summary: summary('base'), current_summary: summary('current') }, null, 2)}\n`,
  );
} finally {
  for (const { database } of opened.values()) await database.close();
  rmSync(sqliteDir, { recursive: true, force: true });
  await fresh.drop();
}
