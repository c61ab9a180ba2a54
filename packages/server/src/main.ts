#!/usr/bin/env node
import cluster from 'node:cluster';
import { pino } from 'pino';
import { buildApp, VERSION } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { loadSecretKey } from './core/secret.js';
import { AppError } from './core/errors.js';
import { verifyAuditChains } from './modules/audit/index.js';
import { setPlan } from './modules/billing/index.js';
import { bootstrap, type BootstrapResult } from './modules/org/index.js';
import { buildServices } from './services.js';
import { CliError, exportCommand, importCommand } from './cli/transfer.js';
import { openDatabase, type Database } from './store/database.js';
import { migrate } from './store/migrate.js';
import { startBackground, type Background } from './worker.js';

const USAGE = `engram ${VERSION}: memory service for AI applications

Usage: engram <command>

Commands:
  serve     apply migrations, bootstrap an empty database, and serve HTTP (default); also runs
            background jobs and chores unless ENGRAM_RUN_JOBS=false
  worker    apply migrations and run background jobs and chores, with no HTTP server
  migrate   apply pending database migrations and exit
  init      apply migrations and bootstrap an empty database, then exit
  audit verify [organization_id]
            walk each organization's audit hash chain; name the first broken row (exit 1)
  org set-plan <organization_id> <plan>
            set an organization's billing plan (self_hosted, free, starter, pro, enterprise)
  export [--format jsonl|json|csv] [--gzip] [--end-user ID] [--tenant ID] [--include history,feedback] [-o FILE]
            export a project from a running server and download it (checks its SHA-256)
  import FILE [--format auto|engram|mem0]
            import an Engram or Mem0 export file into a project of a running server
            (both: --url/ENGRAM_URL, --token/ENGRAM_TOKEN (bearer), --project/ENGRAM_PROJECT_ID)

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

function requireSharedSecret(config: Config): void {
  if (config.database.dialect === 'postgres' && !config.secretKey) {
    // Processes sharing a PostgreSQL database must sign and check tokens with one key.
    throw new ConfigError('ENGRAM_SECRET_KEY must be set when ENGRAM_DATABASE_URL is PostgreSQL');
  }
}

function processLogger(config: Config) {
  return pino({ level: config.logLevel }, process.stderr);
}

/** Stops `stop` (and closes the database) on SIGTERM or SIGINT, then exits. */
function onSignals(log: { info(obj: object, msg: string): void }, stop: () => Promise<void>): void {
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down');
    await stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * HTTP in this process (ENGRAM_HTTP_PROCESSES=1) or in that many cluster children sharing the
 * port; background work, unless ENGRAM_RUN_JOBS=false, in this process only.
 */
async function serve(config: Config): Promise<void> {
  requireSharedSecret(config);
  if (cluster.isWorker) return serveHttp(config, openDatabase(config.database), loadSecretKey(config), null);
  const secretKey = loadSecretKey(config);
  const database = await prepare(config);
  if (config.httpProcesses === 1) return serveHttp(config, database, secretKey, config.runJobs ? 'in-process' : null);
  const background = config.runJobs ? startBackground(buildServices({ config, database, secretKey }), processLogger(config)) : null;
  if (!background) await database.close();
  return superviseHttpProcesses(config.httpProcesses, async () => {
    await background?.stop();
    if (background) await database.close();
  });
}

/** One HTTP server process: a standalone server, or one of several cluster children sharing the port. */
async function serveHttp(config: Config, database: Database, secretKey: Uint8Array, jobs: 'in-process' | null): Promise<void> {
  const services = buildServices({ config, database, secretKey });
  const app = await buildApp({ services, logStream: process.stderr });
  const background: Background | null = jobs ? startBackground(services, app.log) : null;
  onSignals(app.log, async () => {
    await background?.stop();
    await app.close();
    await database.close();
  });
  await app.listen({ host: config.host, port: config.port });
}

/** `engram worker`: background jobs and chores on the service graph, with no HTTP server. */
async function work(config: Config): Promise<void> {
  requireSharedSecret(config);
  const database = openDatabase(config.database);
  await migrate(database);
  const log = processLogger(config);
  const background = startBackground(buildServices({ config, database, secretKey: loadSecretKey(config) }), log);
  log.info({ jobs: true }, 'worker started');
  onSignals(log, async () => {
    await background.stop();
    await database.close();
  });
}

/**
 * ENGRAM_HTTP_PROCESSES > 1: the primary has migrated and bootstrapped; it forks that many HTTP
 * processes that share the listening port, replaces any that die, and passes a stop signal on to
 * all of them. Each checks its indexes against the database on every query, so they never disagree.
 */
async function superviseHttpProcesses(count: number, afterAll: () => Promise<void>): Promise<void> {
  let stopping = false;
  for (let i = 0; i < count; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) void afterAll().finally(() => process.exit(0));
      return;
    }
    process.stderr.write(`engram: HTTP process ${worker.process.pid} exited (${signal ?? code}); starting another\n`);
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
  if (command === 'export') return exportCommand(argv.slice(1));
  if (command === 'import') return importCommand(argv.slice(1));
  const config = loadConfig();
  if (cluster.isPrimary) for (const warning of config.warnings) process.stderr.write(`engram: warning: ${warning}\n`);
  switch (command) {
    case 'serve':
      return serve(config);
    case 'worker':
      return work(config);
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
  const known = error instanceof ConfigError || error instanceof AppError || error instanceof CliError;
  process.stderr.write(`engram: ${known ? (error as Error).message : (error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
