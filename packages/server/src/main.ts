#!/usr/bin/env node
import cluster from 'node:cluster';
import { buildApp, VERSION } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { loadSecretKey } from './core/secret.js';
import { AppError } from './http/errors.js';
import { verifyAuditChains } from './modules/audit/service.js';
import { setPlan } from './modules/billing/service.js';
import { bootstrap, type BootstrapResult } from './modules/org/service.js';
import { openDatabase, type Database } from './store/database.js';
import { migrate } from './store/migrate.js';

const USAGE = `engram ${VERSION}: memory service for AI applications

Usage: engram <command>

Commands:
  serve     apply migrations, bootstrap an empty database, and serve HTTP (default)
  migrate   apply pending database migrations and exit
  init      apply migrations and bootstrap an empty database, then exit
  audit verify [organization_id]
            walk each organization's audit hash chain; name the first broken row (exit 1)
  org set-plan <organization_id> <plan>
            set an organization's billing plan (self_hosted, free, starter, pro, enterprise)

Configuration comes from ENGRAM_* environment variables; see the README.`;

/** Printed once, to stdout and never through the logger (which writes to stderr). */
function printBootstrap(result: BootstrapResult): void {
  const lines = [
    'Engram created a default organization, project, owner account and API key.',
    `  project id: ${result.projectId}`,
    `  owner:      ${result.email}`,
  ];
  if (result.generatedPassword) lines.push(`  password:   ${result.generatedPassword}`);
  if (result.generatedApiKey) lines.push(`  API key:    ${result.generatedApiKey}`);
  else lines.push('  API key:    the one in ENGRAM_BOOTSTRAP_API_KEY');
  lines.push('Store them now: they are not shown again.', '');
  process.stdout.write(lines.join('\n') + '\n');
}

async function prepare(config: Config) {
  const database = openDatabase(config.database);
  await migrate(database);
  const created = await bootstrap(database, config.bootstrap);
  if (created) printBootstrap(created);
  return database;
}

async function serve(config: Config): Promise<void> {
  if (config.database.dialect === 'postgres' && !config.secretKey) {
    // Processes sharing a PostgreSQL database must sign and check tokens with one key.
    throw new ConfigError('ENGRAM_SECRET_KEY must be set when ENGRAM_DATABASE_URL is PostgreSQL');
  }
  if (cluster.isWorker) return serveHttp(config, openDatabase(config.database));
  const secretKey = loadSecretKey(config);
  const database = await prepare(config);
  if (config.workers === 1) return serveHttp(config, database, secretKey);
  await database.close();
  return superviseWorkers(config.workers);
}

/** One HTTP server process: a standalone server, or one of several cluster workers sharing the port. */
async function serveHttp(config: Config, database: Database, secretKey = loadSecretKey(config)): Promise<void> {
  const app = await buildApp({ config, database, secretKey, logStream: process.stderr });
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    await app.close();
    await database.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  await app.listen({ host: config.host, port: config.port });
}

/**
 * ENGRAM_WORKERS > 1: the primary has migrated and bootstrapped; it forks that many workers that
 * share the listening port, replaces any that die, and passes a stop signal on to all of them.
 * Every worker checks its indexes against the database on each query, so they never disagree.
 */
async function superviseWorkers(count: number): Promise<void> {
  let stopping = false;
  for (let i = 0; i < count; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    process.stderr.write(`engram: worker ${worker.process.pid} exited (${signal ?? code}); starting another\n`);
    cluster.fork();
  });
  const stop = (signal: NodeJS.Signals) => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function main(argv: string[]): Promise<void> {
  const command = argv[0] ?? 'serve';
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE + '\n');
    return;
  }
  if (command === '--version') {
    process.stdout.write(VERSION + '\n');
    return;
  }
  const config = loadConfig();
  switch (command) {
    case 'serve':
      return serve(config);
    case 'migrate': {
      const database = openDatabase(config.database);
      const applied = await migrate(database);
      process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
      return database.close();
    }
    case 'init': {
      const database = await prepare(config);
      return database.close();
    }
    case 'audit':
      if (argv[1] !== 'verify') return usageError(`unknown audit command: ${argv[1] ?? '(none)'}`);
      return withDatabase(config, async (database) => {
        const reports = await verifyAuditChains(database.db, argv[2]);
        if (reports.length === 0) process.stdout.write('no audit chains to verify\n');
        for (const r of reports) {
          process.stdout.write(
            r.broken
              ? `${r.organizationId}: BROKEN at ${r.broken.id === null ? 'the chain head' : `row ${r.broken.id}`}: ${r.broken.reason} (${r.rows} rows verified before it)\n`
              : `${r.organizationId}: ok (${r.rows} rows)\n`,
          );
        }
        if (reports.some((r) => !r.ok)) process.exitCode = 1;
      });
    case 'org':
      if (argv[1] !== 'set-plan' || !argv[2] || !argv[3]) return usageError('usage: engram org set-plan <organization_id> <plan>');
      return withDatabase(config, async (database) => {
        await setPlan(database, argv[2]!, argv[3]!);
        process.stdout.write(`${argv[2]}: plan set to ${argv[3]}\n`);
      });
    default:
      return usageError(`unknown command: ${command}`);
  }
}

function usageError(message: string): void {
  process.stderr.write(`${message}\n\n${USAGE}\n`);
  process.exitCode = 2;
}

/** A command on a migrated database, closed afterwards. */
async function withDatabase(config: Config, run: (database: ReturnType<typeof openDatabase>) => Promise<void>): Promise<void> {
  const database = openDatabase(config.database);
  try {
    await migrate(database);
    await run(database);
  } finally {
    await database.close();
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const known = error instanceof ConfigError || error instanceof AppError;
  process.stderr.write(`engram: ${known ? (error as Error).message : (error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
