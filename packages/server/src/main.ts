#!/usr/bin/env node
import { buildApp, VERSION } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { bootstrap, type BootstrapResult } from './modules/org/service.js';
import { openDatabase } from './store/database.js';
import { migrate } from './store/migrate.js';

const USAGE = `engram ${VERSION}: memory service for AI applications

Usage: engram <command>

Commands:
  serve     apply migrations, bootstrap an empty database, and serve HTTP (default)
  migrate   apply pending database migrations and exit
  init      apply migrations and bootstrap an empty database, then exit

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
  const database = await prepare(config);
  const app = await buildApp({ config, database, logStream: process.stderr });
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
    default:
      process.stderr.write(`unknown command: ${command}\n\n${USAGE}\n`);
      process.exitCode = 2;
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`engram: ${error instanceof ConfigError ? error.message : (error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
