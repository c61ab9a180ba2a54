import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { buildApp } from '../app.js';
import { ConfigError, type Config } from '../config.js';
import { loadSecretKey } from '../core/secret.js';
import { bootstrap, type BootstrapResult } from '../modules/org/index.js';
import { buildServices } from '../services.js';
import { openDatabase, type Database } from '../store/database.js';
import { whileDatabaseUnavailable } from '../store/faults.js';
import { migrate } from '../store/migrate.js';
import { startBackground, type Background } from '../worker.js';

/**
 * `engram serve`, `worker`, `migrate` and `init`: the commands that load the whole service, imported
 * by main.ts only for them (an operator command starts without loading the HTTP app).
 */

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
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function prepare(config: Config) {
  const database = openDatabase(config.database);
  try {
    await migrate(database);
    const created = await bootstrap(database, config.bootstrap);
    if (created) printBootstrap(created);
  } catch (error) {
    await database.close().catch(() => {});
    throw error;
  }
  return database;
}

/** `prepare` for a long-running process: tried again while the database is unavailable (ENGRAM_DATABASE_WAIT_SECONDS). */
const prepareWhenAvailable = (config: Config) =>
  whileDatabaseUnavailable(() => prepare(config), config.databaseWaitSeconds, processLogger(config));

/**
 * Printed once `engram serve` accepts connections, to stdout (never through the logger, so at every
 * log level): the address it bound, the one place that names the port when ENGRAM_PORT=0 let the
 * operating system pick it.
 */
function printListening(address: string, port: number): void {
  process.stdout.write(`engram: listening on http://${address.includes(':') ? `[${address}]` : address}:${port}\n`);
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

/** How long a stop may take before the process exits regardless (a statement or a request that does not end). */
const STOP_LIMIT_MS = 10_000;

/** Stops `stop` (and closes the database) on SIGTERM or SIGINT, then exits: within STOP_LIMIT_MS whatever it waits for. */
function onSignals(
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void },
  stop: () => Promise<void>,
): void {
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down');
    const limit = setTimeout(() => {
      log.warn({ signal, limit_ms: STOP_LIMIT_MS }, 'shutdown did not finish in time; exiting');
      process.exit(0);
    }, STOP_LIMIT_MS);
    limit.unref();
    await stop().catch((error: unknown) => log.warn({ err: (error as Error).message }, 'shutdown failed; exiting'));
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * HTTP in this process (ENGRAM_HTTP_PROCESSES=1) or in that many cluster children sharing the
 * port; background work, unless ENGRAM_RUN_JOBS=false, in this process only.
 */
export async function serve(config: Config): Promise<void> {
  requireSharedSecret(config);
  if (cluster.isWorker) {
    // Whether a pooler stands in front of the database is known before the first request decides whether to LISTEN.
    const database = openDatabase(config.database);
    await whileDatabaseUnavailable(() => database.pooled(), config.databaseWaitSeconds, processLogger(config));
    return serveHttp(config, database, loadSecretKey(config), null);
  }
  const secretKey = loadSecretKey(config);
  const database = await prepareWhenAvailable(config);
  if (config.httpProcesses === 1) return serveHttp(config, database, secretKey, config.runJobs ? 'in-process' : null);
  const background = config.runJobs
    ? startBackground(buildServices({ config, database, secretKey }), processLogger(config))
    : null;
  if (!background) await database.close();
  return superviseHttpProcesses(config.httpProcesses, async () => {
    await background?.stop();
    if (background) await database.close();
  });
}

/** One HTTP server process: a standalone server, or one of several cluster children sharing the port. */
async function serveHttp(
  config: Config,
  database: Database,
  secretKey: Uint8Array,
  jobs: 'in-process' | null,
): Promise<void> {
  const services = buildServices({ config, database, secretKey });
  // The search thread loads beside the rest of the start, so that the first query does not wait for it.
  services.retrieval.start();
  const app = await buildApp({ services, logStream: process.stderr });
  const background: Background | null = jobs ? startBackground(services, app.log) : null;
  onSignals(app.log, async () => {
    await background?.stop();
    await app.close();
    await database.close();
  });
  await app.listen({ host: config.host, port: config.port });
  // Cluster children share the primary's port, which the primary announces (superviseHttpProcesses).
  if (cluster.isPrimary) {
    const { address, port } = app.server.address() as AddressInfo;
    printListening(address, port);
  }
}

/** `engram worker`: background jobs and chores on the service graph, with no HTTP server. */
export async function work(config: Config): Promise<void> {
  requireSharedSecret(config);
  const log = processLogger(config);
  const database = await whileDatabaseUnavailable(
    async () => {
      const opened = openDatabase(config.database);
      await migrate(opened).catch(async (error: unknown) => {
        await opened.close().catch(() => {});
        throw error;
      });
      return opened;
    },
    config.databaseWaitSeconds,
    log,
  );
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
  // Every child listens on the one port (with ENGRAM_PORT=0, the one the first child was given): it is
  // announced once, and again only if it changes (every child gone at once, the next given another).
  let announced = '';
  cluster.on('listening', (_worker, { address, port }) => {
    if (`${address}:${port}` !== announced) printListening(address, port);
    announced = `${address}:${port}`;
  });
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

/** `engram migrate`: applies pending migrations and exits. */
export async function migrateCommand(config: Config): Promise<void> {
  const database = openDatabase(config.database);
  const applied = await migrate(database);
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
  return database.close();
}

/** `engram init`: applies migrations and bootstraps an empty database, then exits. */
export async function initCommand(config: Config): Promise<void> {
  const database = await prepare(config);
  return database.close();
}
