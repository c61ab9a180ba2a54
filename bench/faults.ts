/**
 * Faults under load: for each scenario in bench/faults/ (a file exporting `scenario`, see
 * faults/scenario.ts) and each database it concerns, `--trials` times (default 5): a fresh server,
 * 8 clients adding memories back to back (each its own end user), the fault injected once 50 writes
 * are acknowledged, then judged. Prints JSON per scenario and database: process alive, acknowledged
 * writes lost (must be 0), 5xx other than 503 and the scenario's designed answers (must be 0),
 * unanswered requests, seconds from the end of the fault to the first acknowledged write started
 * after it (must be <= 5), and for hostile uploads the RSS peak over the baseline (must be < 512 MB).
 * Exit code 1 when a bound is broken.
 *
 *   npm run bench:faults [-- --trials 5] [--clients 8] [--postgres URL] [--only NAME,NAME]
 *   npm run bench:faults -- --trials 10 --postgres URL --only cold-start-2,cold-start-3,cold-start-2-pgbouncer,cold-start-3-pgbouncer
 *
 * Without --postgres only the SQLite scenarios run. A dead server is restarted on the same data to
 * count lost writes. Start-up scenarios (faults/cold-start.ts: N processes started together on an empty
 * database, directly and through PgBouncer) run without load: per trial, whether every process came
 * up and the audit chains verify (must be every trial).
 */
import { readdirSync, rmSync } from 'node:fs';
import { lostWrites } from '../packages/server/src/testing/durability.js';
import { firstAcknowledgedAfter, untilAcknowledged, writeLoad } from '../packages/server/src/testing/faults.js';
import { option } from './lib/args.js';
import { freshDataDir, freshPostgres, startServer, type BenchServer } from './lib/server.js';
import type { Dialect, FaultScenario, StartScenario } from './faults/scenario.js';

if (process.argv.includes('--help')) {
  process.stdout.write(`npm run bench:faults -- [--trials 5] [--clients 8] [--postgres ADMIN_URL] [--only NAME,NAME]
  scenarios: every file of bench/faults/ (--only takes their names: pg-terminate-backends, pg-unreachable, pg-role-nologin,
  sqlite-write-lock, sqlite-full-disk, hostile-uploads, cold-start-2, cold-start-3, cold-start-2-pgbouncer, cold-start-3-pgbouncer);
  without --postgres only SQLite's. JSON on stdout, one line per scenario on stderr; exit 1 when a bound is broken.
`);
  process.exit(0);
}
const trials = Number(option('--trials') ?? 5);
const clients = Number(option('--clients') ?? 8);
const adminUrl = option('--postgres');
const only = option('--only')?.split(',');
const RECOVERY_BOUND_S = 5;
const RECOVERY_GIVE_UP_S = 30;
/** RSS a scenario reporting `rss_peak_mb` (over its baseline: hostile uploads) may reach. */
const RSS_BOUND_MB = 512;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const dir = new URL('./faults/', import.meta.url);
const scenarios: FaultScenario[] = [];
const startScenarios: StartScenario[] = [];
for (const file of readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && f !== 'scenario.ts')
  .sort()) {
  const mod = (await import(new URL(file, dir).href)) as { scenario?: FaultScenario; startScenarios?: StartScenario[] };
  if (mod.scenario && (!only || only.includes(mod.scenario.name))) scenarios.push(mod.scenario);
  for (const start of mod.startScenarios ?? []) if (!only || only.includes(start.name)) startScenarios.push(start);
}
// The processes a start-up scenario starts run the build (testing/process.ts), not the source under tsx.
process.env.ENGRAM_TEST_PROGRAM ??= new URL('../packages/server/dist/main.js', import.meta.url).pathname;

const alive = (s: BenchServer) => s.process.exitCode === null && s.process.signalCode === null;

async function trial(scenario: FaultScenario, dialect: Dialect, n: number) {
  const dataDir = freshDataDir();
  const pg = dialect === 'postgres' ? await freshPostgres(adminUrl!) : undefined;
  const setup =
    (await scenario.setup?.({ dialect, dataDir, ...(pg ? { databaseUrl: pg.url, adminUrl: adminUrl! } : {}) })) ?? {};
  const served = setup.databaseUrl ?? pg?.url;
  const start = () =>
    startServer({
      dataDir,
      ...(served ? { databaseUrl: served } : {}),
      ...(setup.env ? { env: setup.env } : {}),
      ...(setup.nodeArgs ? { nodeArgs: setup.nodeArgs } : {}),
    });
  let server = await start();
  let exit: string | undefined;
  server.process.once('exit', (code, signal) => (exit = signal ?? `code ${code}`));
  const load = writeLoad(server, `${scenario.name}-${n}`, clients);
  try {
    await untilAcknowledged(load, 50);
    const faultStart = performance.now();
    const figures =
      (await scenario.inject({
        dialect,
        server,
        dataDir,
        ...(pg ? { databaseUrl: pg.url, adminUrl: adminUrl! } : {}),
        acknowledged: load.acked,
        sleep,
      })) ?? {};
    const faultEnd = performance.now();
    let recovered: number | null = null;
    while (recovered === null && performance.now() - faultEnd < RECOVERY_GIVE_UP_S * 1000 && alive(server)) {
      const ok = firstAcknowledgedAfter(load, faultEnd);
      if (ok) recovered = (ok.ended - faultEnd) / 1000;
      else await sleep(20);
    }
    await load.stop();
    const processAlive = alive(server);
    if (!processAlive) server = await start();
    const lost = await lostWrites(server.url, server.key, { acknowledged: load.acknowledged, unanswered: 0 });
    const statuses: Record<string, number> = {};
    for (const a of load.answers.filter((a) => a.ended >= faultStart))
      statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    const designed = new Set([503, ...(scenario.allowedStatuses ?? [])]);
    return {
      trial: n,
      process_alive: processAlive,
      ...(exit ? { exit } : {}),
      acknowledged: load.answers.filter((a) => a.status === 201).length,
      lost: lost.length,
      other_5xx: load.answers.filter((a) => a.status >= 500 && !designed.has(a.status)).length,
      unanswered: load.answers.filter((a) => a.status === 0).length,
      fault_s: Math.round(faultEnd - faultStart) / 1000,
      recovery_s: recovered === null ? null : Math.round(recovered * 1000) / 1000,
      statuses_from_fault_start: statuses,
      ...figures,
    };
  } finally {
    await load.stop();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    await pg?.drop();
    await setup.cleanup?.();
  }
}

async function startTrial(scenario: StartScenario, dialect: Dialect, n: number) {
  const dataDir = freshDataDir();
  const pg = dialect === 'postgres' ? await freshPostgres(adminUrl!) : undefined;
  try {
    const { ok, figures } = await scenario.run({
      dialect,
      dataDir,
      ...(pg ? { databaseUrl: pg.url, adminUrl: adminUrl! } : {}),
    });
    return { trial: n, ok, ...figures };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await pg?.drop();
  }
}

const report: object[] = [];
let broken = false;
for (const dialect of ['sqlite', 'postgres'] as const) {
  if (dialect === 'postgres' && !adminUrl) continue;
  for (const scenario of scenarios.filter((s) => s.databases.includes(dialect))) {
    const results = [];
    for (let n = 1; n <= trials; n++) results.push(await trial(scenario, dialect, n));
    const recoveries = results.map((r) => r.recovery_s);
    const rssPeaks = results.flatMap((r) => ('rss_peak_mb' in r ? [Number(r.rss_peak_mb)] : []));
    const summary = {
      scenario: scenario.name,
      database: dialect,
      description: scenario.description,
      trials,
      designed_statuses: [503, ...(scenario.allowedStatuses ?? [])],
      process_alive: results.filter((r) => r.process_alive).length,
      acknowledged: results.reduce((s, r) => s + r.acknowledged, 0),
      lost: results.reduce((s, r) => s + r.lost, 0),
      other_5xx: results.reduce((s, r) => s + r.other_5xx, 0),
      unanswered: results.reduce((s, r) => s + r.unanswered, 0),
      recovery_s_max: recoveries.includes(null) ? null : Math.max(...(recoveries as number[])),
      ...(rssPeaks.length ? { rss_peak_mb_max: Math.max(...rssPeaks) } : {}),
      per_trial: results,
    };
    if (
      summary.recovery_s_max === null ||
      summary.recovery_s_max > RECOVERY_BOUND_S ||
      summary.process_alive < trials ||
      summary.lost > 0 ||
      summary.other_5xx > 0 ||
      rssPeaks.some((mb) => mb >= RSS_BOUND_MB)
    )
      broken = true;
    report.push(summary);
    console.error(
      `${scenario.name} on ${dialect}: alive ${summary.process_alive}/${trials}, lost ${summary.lost}, other 5xx ${summary.other_5xx}, recovery max ${summary.recovery_s_max} s${rssPeaks.length ? `, RSS peak +${Math.max(...rssPeaks)} MB` : ''}`,
    );
  }
}
for (const dialect of ['sqlite', 'postgres'] as const) {
  if (dialect === 'postgres' && !adminUrl) continue;
  for (const scenario of startScenarios.filter((s) => s.databases.includes(dialect))) {
    const unavailable = scenario.unavailable?.();
    if (unavailable) {
      console.error(`${scenario.name} on ${dialect}: skipped (${unavailable})`);
      report.push({
        scenario: scenario.name,
        database: dialect,
        description: scenario.description,
        skipped: unavailable,
      });
      continue;
    }
    const results = [];
    for (let n = 1; n <= trials; n++) results.push(await startTrial(scenario, dialect, n));
    const passed = results.filter((r) => r.ok).length;
    if (passed < trials) broken = true;
    const upTimes = results.map((r) => Number(r.all_up_s)).filter((t) => Number.isFinite(t));
    report.push({
      scenario: scenario.name,
      database: dialect,
      description: scenario.description,
      trials,
      all_came_up_and_verified: passed,
      all_up_s_max: upTimes.length ? Math.max(...upTimes) : null,
      per_trial: results,
    });
    console.error(`${scenario.name} on ${dialect}: ${passed}/${trials} trials came up and verified`);
  }
}
console.log(
  JSON.stringify(
    { benchmark: 'faults', clients, trials, recovery_bound_s: RECOVERY_BOUND_S, scenarios: report },
    null,
    2,
  ),
);
if (broken) process.exitCode = 1;
