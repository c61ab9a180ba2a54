#!/usr/bin/env node
import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { buildApp, VERSION } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { loadSecretKey } from './core/secret.js';
import { AppError } from './core/errors.js';
import { verifyAuditChains } from './modules/audit/index.js';
import { setPlan } from './modules/billing/index.js';
import {
  bootstrap,
  createKeyAsOperator,
  listUsers,
  revokeKeyAsOperator,
  type BootstrapResult,
} from './modules/org/index.js';
import { lastSignIns } from './modules/auth/index.js';
import { createUserAsOperator, resetPasswordAsOperator } from './modules/people/index.js';
import { outboxBacklog } from './core/events.js';
import { jobCounts } from './jobs/runner.js';
import { listen } from './modules/webhooks/index.js';
import { buildServices } from './services.js';
import { CliError, exportCommand, importCommand } from './cli/transfer.js';
import { openDatabase, type Database } from './store/database.js';
import { whileDatabaseUnavailable } from './store/faults.js';
import { migrate, migrationStatus } from './store/migrate.js';
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
  webhooks listen --port N [--secret whsec_...]
            a local webhook receiver on 127.0.0.1:N (0: a free port, named when listening) that
            prints deliveries and verifies their signatures (answers 401 to a bad one), for
            debugging an integration
  export [--format jsonl|json|csv] [--gzip] [--end-user ID] [--tenant ID] [--include history,feedback,relations] [-o FILE]
            export a project from a running server and download it (checks its SHA-256)
  import FILE [--format auto|engram|mem0]
            import an Engram or Mem0 export file into a project of a running server
            (both: --url/ENGRAM_URL, --token/ENGRAM_TOKEN (bearer), --project/ENGRAM_PROJECT_ID)
  user create <email> [--org <organization_id>] [--role <role>]
            create an account (a member of the organization when given, role default member);
            prints its generated password once
  user reset-password <email>
            set a new generated password (printed once) and end every session of the account
  user list list accounts with their organizations, roles and last sign-in
  key create --project <project_id> [--scopes a,b] [--name <name>]
            create an API key locked to the project; prints the secret once
  key revoke <key_id>
            revoke an API key
  status    database, migrations, jobs queued and failed, outbox backlog (exit 1 when the
            database does not answer)

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
async function serve(config: Config): Promise<void> {
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
async function work(config: Config): Promise<void> {
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

async function main(argv: string[]): Promise<void> {
  const command = argv[0] ?? 'serve';
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command === '--version') {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  if (command === 'webhooks') return webhooksCommand(argv.slice(1));
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
        const reports = await verifyAuditChains(database, argv[2]);
        if (reports.length === 0) process.stdout.write('no audit chains to verify\n');
        for (const r of reports) {
          process.stdout.write(
            r.broken
              ? `${r.organizationId}: BROKEN at ${r.broken.id === null ? 'the chain head' : `row ${r.broken.id}`}: ${r.broken.reason} (${r.rows} rows verified before it${r.unsealed ? `; ${r.unsealed} not sealed yet` : ''})\n`
              : `${r.organizationId}: ok (${r.rows} rows${r.unsealed ? `; ${r.unsealed} not sealed yet` : ''})\n`,
          );
        }
        if (reports.some((r) => !r.ok)) process.exitCode = 1;
      });
    case 'org':
      if (argv[1] !== 'set-plan' || !argv[2] || !argv[3])
        return usageError('usage: engram org set-plan <organization_id> <plan>');
      return withDatabase(config, async (database) => {
        await setPlan(database, argv[2]!, argv[3]!);
        process.stdout.write(`${argv[2]}: plan set to ${argv[3]}\n`);
      });
    case 'user':
      return userCommand(config, argv.slice(1));
    case 'key':
      return keyCommand(config, argv.slice(1));
    case 'status':
      return status(config);
    default:
      return usageError(`unknown command: ${command}`);
  }
}

/** Options and positionals of a subcommand; an unknown option is a usage error. */
function options(
  args: string[],
  names: string[],
): { values: Record<string, string | undefined>; positionals: string[] } | undefined {
  try {
    const parsed = parseArgs({
      args,
      allowPositionals: true,
      options: Object.fromEntries(names.map((n) => [n, { type: 'string' as const }])),
    });
    return { values: parsed.values as Record<string, string | undefined>, positionals: parsed.positionals };
  } catch (error) {
    usageError((error as Error).message);
    return undefined;
  }
}

/** Secrets go to stdout once, never through the logger. */
async function userCommand(config: Config, args: string[]): Promise<void> {
  const parsed = options(args.slice(1), ['org', 'role']);
  if (!parsed) return;
  const [email] = parsed.positionals;
  switch (args[0]) {
    case 'create':
      if (!email) return usageError('usage: engram user create <email> [--org <organization_id>] [--role <role>]');
      return withDatabase(config, async (database) => {
        const created = await createUserAsOperator(database, {
          email,
          organizationId: parsed.values.org,
          role: parsed.values.role,
        });
        const where = parsed.values.org ? ` in ${parsed.values.org} as ${parsed.values.role ?? 'member'}` : '';
        process.stdout.write(
          `created user ${created.userId} ${email.toLowerCase()}${where}\n  password: ${created.password}\nStore it now: it is not shown again.\n`,
        );
      });
    case 'reset-password':
      if (!email) return usageError('usage: engram user reset-password <email>');
      return withDatabase(config, async (database) => {
        const reset = await resetPasswordAsOperator(database, email);
        process.stdout.write(
          `user ${reset.userId}: new password set, ${reset.sessionsEnded} session(s) ended\n  password: ${reset.password}\nStore it now: it is not shown again.\n`,
        );
      });
    case 'list':
      return withDatabase(config, async (database) => {
        const users = await listUsers(database.db);
        const signIns = await lastSignIns(
          database.db,
          users.map((u) => u.id),
        );
        for (const u of users) {
          const orgs = u.memberships.map((m) => `${m.organizationId}:${m.role}`).join(',') || '-';
          process.stdout.write(`${u.id}\t${u.email}\t${orgs}\tlast sign-in ${signIns.get(u.id) ?? 'never'}\n`);
        }
      });
    default:
      return usageError(`unknown user command: ${args[0] ?? '(none)'}`);
  }
}

async function keyCommand(config: Config, args: string[]): Promise<void> {
  const parsed = options(args.slice(1), ['project', 'scopes', 'name']);
  if (!parsed) return;
  switch (args[0]) {
    case 'create': {
      const { project, scopes, name } = parsed.values;
      if (!project) return usageError('usage: engram key create --project <project_id> [--scopes a,b] [--name <name>]');
      return withDatabase(config, async (database) => {
        const key = await createKeyAsOperator(database, {
          projectId: project,
          ...(scopes
            ? {
                scopes: scopes
                  .split(',')
                  .map((s) => s.trim())
                  .filter(Boolean),
              }
            : {}),
          ...(name ? { name } : {}),
        });
        process.stdout.write(
          `created API key ${key.id} for ${project} (${key.organizationId})\n  key: ${key.key}\nStore it now: it is not shown again.\n`,
        );
      });
    }
    case 'revoke': {
      const id = Number(parsed.positionals[0]);
      if (!Number.isInteger(id) || id < 1) return usageError('usage: engram key revoke <key_id>');
      return withDatabase(config, async (database) => {
        const outcome = await revokeKeyAsOperator(database, id);
        process.stdout.write(`API key ${id}: ${outcome.replace('_', ' ')}\n`);
        if (outcome === 'not_found') process.exitCode = 1;
      });
    }
    default:
      return usageError(`unknown key command: ${args[0] ?? '(none)'}`);
  }
}

/** What an operator checks first: does the database answer, is it migrated, is background work keeping up. Applies nothing. */
async function status(config: Config): Promise<void> {
  const where =
    config.database.dialect === 'sqlite'
      ? `sqlite ${config.database.path}`
      : `postgres ${new URL(config.database.url).host}`;
  let database: Database | undefined;
  try {
    try {
      database = openDatabase(config.database);
      await database.ping();
    } catch (error) {
      process.stdout.write(`database:   ${where}: not answering (${(error as Error).message})\n`);
      process.exitCode = 1;
      return;
    }
    const migrations = await migrationStatus(database);
    process.stdout.write(`database:   ${where}: ok\n`);
    process.stdout.write(
      `migrations: ${migrations.applied.length} applied, ${migrations.pending.length} pending${migrations.pending.length ? ` (${migrations.pending.join(', ')}; run engram migrate)` : ''}\n`,
    );
    if (migrations.applied.length === 0) return;
    const jobs = await jobCounts(database.db);
    process.stdout.write(
      `jobs:       ${jobs.queued} queued, ${jobs.running} running, ${jobs.failed} failed, ${jobs.succeeded} succeeded\n`,
    );
    const outbox = await outboxBacklog(database.db);
    process.stdout.write(`outbox:     ${outbox.pending} pending${outbox.oldest ? ` (oldest ${outbox.oldest})` : ''}\n`);
  } finally {
    await database?.close();
  }
}

/** `engram webhooks listen --port N [--secret whsec_…]`: needs no configuration or database. */
async function webhooksCommand(args: string[]): Promise<void> {
  const option = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const port = Number(option('--port'));
  const secret = option('--secret');
  if (args[0] !== 'listen' || !Number.isInteger(port) || port < 0 || port > 65535) {
    return usageError('usage: engram webhooks listen --port N [--secret whsec_...]');
  }
  if (secret !== undefined && !secret.startsWith('whsec_'))
    return usageError('--secret must be a whsec_… signing secret');
  const server = await listen(port, secret, process.stdout);
  // The port bound: with --port 0, one the operating system picked.
  const bound = (server.address() as AddressInfo).port;
  process.stderr.write(
    `engram: listening for webhooks on http://127.0.0.1:${bound}/ (${secret ? 'verifying signatures' : 'signatures not checked'})\n`,
  );
}

function usageError(message: string): void {
  process.stderr.write(`${message}\n\n${USAGE}\n`);
  process.exitCode = 2;
}

/** A command on a migrated database, closed afterwards. */
async function withDatabase(
  config: Config,
  run: (database: ReturnType<typeof openDatabase>) => Promise<void>,
): Promise<void> {
  const database = openDatabase(config.database);
  try {
    await migrate(database);
    await run(database);
  } finally {
    await database.close();
  }
}

// A log line that cannot be written (stderr a file on a full disk, a closed pipe) is lost, not the process.
process.stderr.on('error', () => {});
process.stdout.on('error', () => {});

main(process.argv.slice(2)).catch((error: unknown) => {
  const known = error instanceof ConfigError || error instanceof AppError || error instanceof CliError;
  process.stderr.write(`engram: ${known ? (error as Error).message : ((error as Error).stack ?? String(error))}\n`);
  process.exit(1);
});
