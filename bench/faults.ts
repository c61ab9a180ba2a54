/**
 * Faults under load: for each scenario in bench/faults/ (a file exporting `scenario`, see
 * faults/scenario.ts) and each database it concerns, `--trials` times (default 5): a fresh server,
 * 8 clients adding memories back to back (each its own end user), the fault injected once the load
 * runs, then judged. Prints JSON per scenario and database: process alive, acknowledged writes lost
 * (must be 0), 5xx other than 503 (must be 0), unanswered requests, seconds from the end of the fault
 * to the first acknowledged write started after it (must be <= 5). Exit code 1 when a bound is broken.
 *
 *   npm run bench:faults [-- --trials 5] [--clients 8] [--postgres URL] [--only NAME,NAME]
 *
 * Without --postgres only the SQLite scenarios run. A dead server is restarted on the same data to
 * count lost writes.
 */
import { readdirSync, rmSync } from 'node:fs';
import { lostWrites } from '../packages/server/src/testing/durability.js';
import { option } from './lib/args.js';
import { freshDataDir, freshPostgres, startServer, type BenchServer } from './lib/server.js';
import type { Dialect, FaultScenario } from './faults/scenario.js';

const trials = Number(option('--trials') ?? 5);
const clients = Number(option('--clients') ?? 8);
const adminUrl = option('--postgres');
const only = option('--only')?.split(',');
const RECOVERY_BOUND_S = 5;
const RECOVERY_GIVE_UP_S = 30;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const dir = new URL('./faults/', import.meta.url);
const scenarios: FaultScenario[] = [];
for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts') && f !== 'scenario.ts').sort()) {
  const mod = (await import(new URL(file, dir).href)) as { scenario?: FaultScenario };
  if (mod.scenario && (!only || only.includes(mod.scenario.name))) scenarios.push(mod.scenario);
}

interface Answer { started: number; ended: number; status: number }

/** 8 writers until `stop()`; every answer recorded with its times (status 0: no answer). */
function writeLoad(server: BenchServer, trial: string) {
  const acknowledged = new Map<string, string[]>();
  const answers: Answer[] = [];
  let stopped = false;
  let acked = 0;
  const done = Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      const endUser = `fault-${trial}-c${client}`;
      const mine: string[] = [];
      acknowledged.set(endUser, mine);
      for (let n = 0; !stopped; n++) {
        const text = `fault fact ${n} of client ${client} in trial ${trial}`;
        const started = performance.now();
        let status = 0;
        try {
          const res = await fetch(`${server.url}/memory/add`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': server.key, 'x-end-user-id': endUser },
            body: JSON.stringify({ text }),
            signal: AbortSignal.timeout(20_000),
          });
          status = res.status;
          await res.arrayBuffer();
          if (status === 201) { mine.push(text); acked++; }
        } catch {
          /* no answer: the process is gone, or the request hung past the timeout */
        }
        answers.push({ started, ended: performance.now(), status });
        // A refused or failed write is retried soon, not after Retry-After: the figure is when the server can answer again.
        if (status !== 201) await sleep(50);
      }
    }),
  );
  return { acknowledged, answers, acked: () => acked, stop: async () => { stopped = true; await done; } };
}

const alive = (s: BenchServer) => s.process.exitCode === null && s.process.signalCode === null;

async function trial(scenario: FaultScenario, dialect: Dialect, n: number) {
  const dataDir = freshDataDir();
  const pg = dialect === 'postgres' ? await freshPostgres(adminUrl!) : undefined;
  const extra = scenario.server?.(dialect) ?? {};
  const start = () => startServer({ dataDir, ...(pg ? { databaseUrl: pg.url } : {}), ...(extra.env ? { env: extra.env } : {}), ...(extra.nodeArgs ? { nodeArgs: extra.nodeArgs } : {}) });
  let server = await start();
  const load = writeLoad(server, `${scenario.name}-${n}`);
  try {
    while (load.acked() < 50) await sleep(20);
    const faultStart = performance.now();
    const figures = (await scenario.inject({
      dialect, server, dataDir, ...(pg ? { databaseUrl: pg.url, adminUrl: adminUrl! } : {}),
      acknowledged: load.acked, sleep,
    })) ?? {};
    const faultEnd = performance.now();
    let recovered: number | null = null;
    while (recovered === null && performance.now() - faultEnd < RECOVERY_GIVE_UP_S * 1000 && alive(server)) {
      const ok = load.answers.find((a) => a.status === 201 && a.started >= faultEnd);
      if (ok) recovered = (ok.ended - faultEnd) / 1000;
      else await sleep(20);
    }
    await load.stop();
    const processAlive = alive(server);
    if (!processAlive) server = await start();
    const lost = await lostWrites(server.url, server.key, load);
    const statuses: Record<string, number> = {};
    for (const a of load.answers.filter((a) => a.ended >= faultStart)) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    return {
      trial: n,
      process_alive: processAlive,
      acknowledged: load.answers.filter((a) => a.status === 201).length,
      lost: lost.length,
      other_5xx: load.answers.filter((a) => a.status >= 500 && a.status !== 503).length,
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
  }
}

const report = [];
let broken = false;
for (const dialect of ['sqlite', 'postgres'] as const) {
  if (dialect === 'postgres' && !adminUrl) continue;
  for (const scenario of scenarios.filter((s) => s.databases.includes(dialect))) {
    const results = [];
    for (let n = 1; n <= trials; n++) results.push(await trial(scenario, dialect, n));
    const recoveries = results.map((r) => r.recovery_s);
    const summary = {
      scenario: scenario.name, database: dialect, description: scenario.description, trials,
      process_alive: results.filter((r) => r.process_alive).length,
      acknowledged: results.reduce((s, r) => s + r.acknowledged, 0),
      lost: results.reduce((s, r) => s + r.lost, 0),
      other_5xx: results.reduce((s, r) => s + r.other_5xx, 0),
      unanswered: results.reduce((s, r) => s + r.unanswered, 0),
      recovery_s_max: recoveries.includes(null) ? null : Math.max(...(recoveries as number[])),
      per_trial: results,
    };
    summary.recovery_s_max === null || summary.recovery_s_max > RECOVERY_BOUND_S || summary.process_alive < trials || summary.lost > 0 || summary.other_5xx > 0 ? (broken = true) : undefined;
    report.push(summary);
    console.error(`${scenario.name} on ${dialect}: alive ${summary.process_alive}/${trials}, lost ${summary.lost}, other 5xx ${summary.other_5xx}, recovery max ${summary.recovery_s_max} s`);
  }
}
console.log(JSON.stringify({ benchmark: 'faults', clients, trials, recovery_bound_s: RECOVERY_BOUND_S, scenarios: report }, null, 2));
if (broken) process.exitCode = 1;
