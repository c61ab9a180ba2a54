/**
 * Export and import at scale: fills a project with `--total` memories (default 1,000,000) through
 * the memories module (importMemories, batches of 1,000 across 1,000 end users; no raw SQL), then
 * runs the real export job (jsonl, plain and gzip) and the real import job into an empty project.
 * Reports rows per second, peak RSS growth of this process during each run, and artifact sizes; the
 * ceiling is the fill's rows as bare 1,000-row INSERTs into an unindexed copy of the table, same run.
 * With `--http`, the same file goes through `engram import` (the CLI's code: upload, then the job in a
 * server's worker, polled) into a fresh server of the same dialect, reported beside the job's rate (after a warm-up
 * import of the file's first tenth into another project: the job it is compared with runs warm).
 * SQLite by default; PostgreSQL with `--postgres URL`. Prints JSON. `--profile DIR` writes the import and export
 * jobs' CPU profiles there, and with `--http` the server's (`--cpu-prof`) for the time of `engram import`. The import
 * reports its CPU seconds (Node, and PostgreSQL's backends), and with `--import ./bench/lib/count-statements.mjs` and
 * ENGRAM_BENCH_STATEMENT_LOG=FILE the statements and round trips it sent.
 *   npm run bench:export -- [--total N] [--postgres postgres://postgres@127.0.0.1:5432/postgres] [--http] [--profile DIR] [--batch N]
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { join } from 'node:path';
import { postgresCpuSeconds } from './lib/cpu.js';
import { profiled } from './lib/profile.js';
import { freshDataDir, freshPostgres, startServer } from './lib/server.js';
import { importCommand } from '../packages/server/src/cli/transfer.js';
import type { JobContext } from '../packages/server/src/jobs/runner.js';
import { exportJob, importJob } from '../packages/server/src/modules/exports/index.js';
import { createImport } from '../packages/server/src/modules/exports/imports.js';
import { createExport } from '../packages/server/src/modules/exports/service.js';
import { importMemories } from '../packages/server/src/modules/memories/index.js';
import { createOrganization, createProject } from '../packages/server/src/modules/org/index.js';
import { openBlobStore } from '../packages/server/src/store/blobs/open.js';
import { openDatabase, type Database } from '../packages/server/src/store/database.js';
import { migrate } from '../packages/server/src/store/migrate.js';
import { loadConfig } from '../packages/server/src/config.js';

const args = process.argv.slice(2);
const option = (name: string) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : undefined);
const total = Number(option('--total') ?? 1_000_000);
const postgresUrl = option('--postgres');
const profileDir = option('--profile');
const overHttp = args.includes('--http');
// Records per import transaction: the server's default (ENGRAM_IMPORT_BATCH) unless given.
const importBatch = Number(option('--batch') ?? loadConfig({}).importBatch);

async function open(): Promise<{ database: Database; drop: () => Promise<void>; databaseCpu: () => number }> {
  if (postgresUrl) {
    const fresh = await freshPostgres(postgresUrl);
    return {
      database: openDatabase({ dialect: 'postgres', url: fresh.url, poolSize: 5, preparedStatements: true }),
      drop: fresh.drop,
      databaseCpu: () => postgresCpuSeconds(fresh.url),
    };
  }
  const dir = freshDataDir();
  return {
    database: openDatabase({ dialect: 'sqlite', path: join(dir, 'engram.db') }),
    drop: async () => rmSync(dir, { recursive: true, force: true }),
    databaseCpu: () => 0, // SQLite runs in this process: its CPU is the process's
  };
}

/** Runs `work`, sampling this process's RSS; answers seconds taken and the peak growth over the start, in MB. */
async function measured<T>(
  work: () => Promise<T>,
): Promise<{ result: T; seconds: number; peak_rss_growth_mb: number }> {
  (globalThis as { gc?: () => void }).gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const start = performance.now();
  const result = await work();
  const seconds = (performance.now() - start) / 1000;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { result, seconds, peak_rss_growth_mb: Math.round(((peak - base) / 1024 / 1024) * 10) / 10 };
}

const job = (id: number, projectId: string, payload: Record<string, unknown>): JobContext => ({
  id,
  projectId,
  payload,
  attempt: 1,
  finalAttempt: true,
  progress: async () => {},
});

/** Seconds `engram import FILE` takes against a fresh server of this run's dialect, from the upload to the completed import. */
async function importOverHttp(bytes: Buffer): Promise<number> {
  const [email, password] = ['bench@engram.local', 'bench-password-123'];
  const server = await startServer({
    ...(postgresUrl ? { postgresUrl } : {}),
    ...(profileDir
      ? { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', 'server.cpuprofile'] }
      : {}),
    env: {
      ENGRAM_BOOTSTRAP_EMAIL: email,
      ENGRAM_BOOTSTRAP_PASSWORD: password,
      ENGRAM_IMPORT_BATCH: String(importBatch),
    },
  });
  const dir = freshDataDir();
  try {
    const json = async (path: string, init: RequestInit) => (await fetch(`${server.url}${path}`, init)).json();
    const login = await json('/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    const auth = { authorization: `Bearer ${login.access_token}` };
    const projects = await json('/org/projects', { headers: auth });
    const path = join(dir, 'export.jsonl.gz');
    writeFileSync(path, bytes);
    const env = (projectId: string) => ({
      ENGRAM_URL: server.url,
      ENGRAM_TOKEN: login.access_token,
      ENGRAM_PROJECT_ID: projectId,
    });
    // The CLI's progress and summary lines are not this benchmark's JSON.
    const quietly = async (work: () => Promise<void>) => {
      const [out, err] = [process.stdout.write, process.stderr.write];
      process.stdout.write = process.stderr.write = () => true;
      try {
        await work();
      } finally {
        [process.stdout.write, process.stderr.write] = [out, err];
      }
    };
    // The job it is compared with runs warm (the fill ran the same code in its process), so the server imports the
    // first tenth of the file into a project of its own first: a server that has imported before, as one in service
    // has, rather than its first batches' compilation and heap growth (bench/README.md, "Imports round 4").
    const warm = await json('/org/projects', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Warm-up' }),
    });
    const lines = gunzipSync(bytes).toString('utf8').split('\n');
    const warmPath = join(dir, 'warm-up.jsonl');
    writeFileSync(warmPath, lines.slice(0, Math.ceil(lines.length / 10)).join('\n'));
    await quietly(() => importCommand([warmPath], env(warm.id)));
    const start = performance.now();
    await quietly(() => importCommand([path], env(projects.items[0].id)));
    return (performance.now() - start) / 1000;
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const { database, drop, databaseCpu } = await open();
try {
  await migrate(database);
  const blobs = openBlobStore({ kind: 'database' }, database);
  const org = await createOrganization(database.db, 'Bench');
  const source = await createProject(database.db, { organizationId: org.id, name: 'Source', slug: 'source' });
  const target = await createProject(database.db, { organizationId: org.id, name: 'Target', slug: 'target' });
  const ctx = {
    actor: { type: 'system' as const, id: null },
    organizationId: org.id,
    projectId: source.id,
    requestId: null,
  };

  const fillStart = performance.now();
  for (let start = 0; start < total; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, total - start) }, (_, i) => {
      const n = start + i;
      return {
        owner: { projectId: source.id, tenantId: '', endUserId: `user-${n % 1000}` },
        item: {
          text: `Benchmark memory ${n}: the user mentioned preference ${n % 97} while planning trip ${n}`,
          tags: [`t${n % 13}`],
          metadata: { n },
        },
      };
    });
    await importMemories(database, ctx, batch);
  }
  const fillSeconds = (performance.now() - fillStart) / 1000;

  const runExport = async (gzip: boolean) => {
    const record = await createExport(database, { ...ctx, projectId: source.id }, { format: 'jsonl', gzip }, 86_400);
    const run = await measured(() =>
      profiled(profileDir, gzip ? 'export-gzip' : 'export', () =>
        exportJob(database, blobs)(job(record.id, source.id, { exportId: record.id })),
      ),
    );
    const row = await database.db
      .selectFrom('exports')
      .select(['status', 'size', 'rows_done', 'blob_key'])
      .where('id', '=', record.id)
      .executeTakeFirstOrThrow();
    if (row.status !== 'completed' || row.rows_done !== total)
      throw new Error(`export ${record.id} ended ${row.status} with ${row.rows_done} rows`);
    return { ...run, size: row.size!, key: row.blob_key!, rows_per_second: Math.round(total / run.seconds) };
  };
  const plain = await runExport(false);
  const gzipped = await runExport(true);

  // Import the gzip artifact (the smaller upload) into the empty project.
  const upload = (await blobs.get(gzipped.key))!;
  const file = (await blobs.get(gzipped.key))!;
  const record = await createImport(database, blobs, { ...ctx, projectId: target.id }, 'auto', upload);
  // With bench/lib/count-statements.mjs preloaded (ENGRAM_BENCH_STATEMENT_LOG), the job's statements are the log's lines from here.
  const statementLog = process.env.ENGRAM_BENCH_STATEMENT_LOG;
  const logged = () => (statementLog && existsSync(statementLog) ? readFileSync(statementLog, 'utf8') : '');
  const logBefore = logged().length;
  // CPU seconds of each side during the job: on 2 shared cores, what a row costs Node and the database.
  const [nodeCpuBefore, databaseCpuBefore] = [process.cpuUsage(), databaseCpu()];
  const imported = await measured(() =>
    profiled(profileDir, 'import', () =>
      importJob(database, blobs, importBatch)(job(record.id, target.id, { importId: record.id })),
    ),
  );
  const nodeCpu = process.cpuUsage(nodeCpuBefore);
  const jobStatements = logged()
    .slice(logBefore)
    .split('\n')
    .filter((line) => line !== '');
  const importCpu = {
    node_cpu_seconds: Math.round((nodeCpu.user + nodeCpu.system) / 1e4) / 100,
    ...(postgresUrl && { database_cpu_seconds: Math.round((databaseCpu() - databaseCpuBefore) * 100) / 100 }),
    ...(statementLog && {
      statements: jobStatements.length,
      round_trips: jobStatements.filter((line) => !line.startsWith('+ ')).length,
    }),
  };
  const row = await database.db
    .selectFrom('imports')
    .select(['status', 'rows_created'])
    .where('id', '=', record.id)
    .executeTakeFirstOrThrow();
  if (row.status !== 'completed' || row.rows_created !== total)
    throw new Error(`import ended ${row.status} with ${row.rows_created} created`);

  // `engram import` of the same file into a fresh server: upload, the job in the server's worker, polls.
  const viaHttp = overHttp ? await importOverHttp(Buffer.concat(await file.toArray())) : undefined;

  // The ceiling: the fill's rows as bare multi-row INSERTs of 1,000 into a copy of the table without
  // its indexes, constraints, history or events, in the same run.
  const bare = await measured(async () => {
    await sql`CREATE TABLE bench_bare_memories AS SELECT * FROM memories WHERE 1 = 0`.execute(database.db);
    const columns = [
      'project_id',
      'tenant_id',
      'end_user_id',
      'text',
      'tags',
      'metadata',
      'importance',
      'seq',
      'created_at',
      'updated_at',
      'dedupe_hash',
    ] as const;
    const now = new Date().toISOString();
    for (let start = 0; start < total; start += 1000) {
      const rows = Array.from({ length: Math.min(1000, total - start) }, (_, i) => {
        const n = start + i;
        return [
          source.id,
          '',
          `user-${n % 1000}`,
          `Benchmark memory ${n}: the user mentioned preference ${n % 97} while planning trip ${n}`,
          JSON.stringify([`t${n % 13}`]),
          JSON.stringify({ n }),
          0.5,
          1,
          now,
          now,
          `h${n}`,
        ];
      });
      await sql`INSERT INTO bench_bare_memories (${sql.join(columns.map((c) => sql.ref(c)))}) VALUES ${sql.join(rows.map((r) => sql`(${sql.join(r)})`))}`.execute(
        database.db,
      );
    }
  });

  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'export',
        node: process.version,
        dialect: database.dialect,
        memories: total,
        fill: {
          seconds: Math.round(fillSeconds * 10) / 10,
          rows_per_second: Math.round(total / fillSeconds),
          of_ceiling: Math.round((bare.seconds / fillSeconds) * 100) / 100,
        },
        ceiling_bare_insert: {
          seconds: Math.round(bare.seconds * 10) / 10,
          rows_per_second: Math.round(total / bare.seconds),
        },
        export_jsonl: {
          seconds: Math.round(plain.seconds * 10) / 10,
          rows_per_second: plain.rows_per_second,
          peak_rss_growth_mb: plain.peak_rss_growth_mb,
          artifact_bytes: plain.size,
        },
        export_jsonl_gzip: {
          seconds: Math.round(gzipped.seconds * 10) / 10,
          rows_per_second: gzipped.rows_per_second,
          peak_rss_growth_mb: gzipped.peak_rss_growth_mb,
          artifact_bytes: gzipped.size,
        },
        import: {
          seconds: Math.round(imported.seconds * 10) / 10,
          rows_per_second: Math.round(total / imported.seconds),
          of_ceiling: Math.round((bare.seconds / imported.seconds) * 100) / 100,
          peak_rss_growth_mb: imported.peak_rss_growth_mb,
          ...importCpu,
        },
        ...(viaHttp && {
          import_http: {
            seconds: Math.round(viaHttp * 10) / 10,
            rows_per_second: Math.round(total / viaHttp),
            of_ceiling: Math.round((bare.seconds / viaHttp) * 100) / 100,
            of_job: Math.round((imported.seconds / viaHttp) * 100) / 100,
          },
        }),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await database.close();
  await drop();
}
