/**
 * Concurrent cold starts (issue 46.3, 46.4): 2 servers, or 2 servers and a worker, started at the same
 * moment on an empty database, on SQLite, on PostgreSQL directly and through PgBouncer in transaction
 * mode (a deploy starting N processes behind a managed database's pooler). A trial passes when every
 * process comes up (servers ready and writing, workers started) and `engram audit verify` passes.
 */
import { startTogether } from '../../packages/server/src/testing/cold-start.js';
import { pgbouncerInstalled, startPgBouncer } from '../../packages/server/src/testing/pgbouncer.js';
import type { StartScenario } from './scenario.js';

const KEY = `egm_bench_cold_${'k'.repeat(32)}`;
const shapes = [
  { servers: 2, workers: 0 },
  { servers: 2, workers: 1 },
];

function coldStart(servers: number, workers: number, via: 'direct' | 'pgbouncer'): StartScenario {
  const processes = servers + workers;
  return {
    name: `cold-start-${processes}${via === 'pgbouncer' ? '-pgbouncer' : ''}`,
    description: `${servers} servers${workers ? ` and ${workers} worker` : ''} started together on an empty database${via === 'pgbouncer' ? ' through PgBouncer (transaction mode)' : ''}`,
    databases: via === 'pgbouncer' ? ['postgres'] : ['sqlite', 'postgres'],
    unavailable: () => (via === 'pgbouncer' && !pgbouncerInstalled ? 'pgbouncer is not installed' : undefined),
    async run(trial) {
      const bouncer = via === 'pgbouncer' ? await startPgBouncer(trial.adminUrl!) : undefined;
      try {
        const url = trial.databaseUrl ? (bouncer ? bouncer.through(trial.databaseUrl) : trial.databaseUrl) : '';
        const env = {
          ENGRAM_BOOTSTRAP_API_KEY: KEY,
          ENGRAM_LOG_LEVEL: 'warn',
          ENGRAM_DATA_DIR: trial.dataDir,
          ENGRAM_DATABASE_URL: url,
        };
        const outcome = await startTogether(env, servers, workers, KEY);
        return {
          ok: outcome.cameUp === processes && outcome.failures.length === 0 && outcome.auditVerified,
          figures: {
            came_up: outcome.cameUp,
            processes,
            all_up_s: outcome.seconds,
            audit_verified: outcome.auditVerified,
            ...(outcome.failures.length ? { failures: outcome.failures.map((f) => f.slice(0, 400)) } : {}),
          },
        };
      } finally {
        await bouncer?.stop();
      }
    },
  };
}

export const startScenarios: StartScenario[] = [
  ...shapes.map((s) => coldStart(s.servers, s.workers, 'direct')),
  ...shapes.map((s) => coldStart(s.servers, s.workers, 'pgbouncer')),
];
