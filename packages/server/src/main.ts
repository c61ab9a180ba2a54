#!/usr/bin/env node
import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from './config.js';
import { AppError } from './core/errors.js';
import { CliError, exportCommand, importCommand } from './cli/transfer.js';
import { USAGE, usageError } from './cli/usage.js';
import { VERSION } from './version.js';

/**
 * The `engram` command. Each command imports only what it runs (cli/serve.ts, cli/operator.ts): an
 * operator command does not load the HTTP app, whose schemas alone took ~1 s of CPU to compile.
 */
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
      return (await import('./cli/serve.js')).serve(config);
    case 'worker':
      return (await import('./cli/serve.js')).work(config);
    case 'migrate':
      return (await import('./cli/serve.js')).migrateCommand(config);
    case 'init':
      return (await import('./cli/serve.js')).initCommand(config);
    case 'audit':
      return (await import('./cli/operator.js')).auditCommand(config, argv.slice(1));
    case 'org':
      return (await import('./cli/operator.js')).orgCommand(config, argv.slice(1));
    case 'user':
      return (await import('./cli/operator.js')).userCommand(config, argv.slice(1));
    case 'key':
      return (await import('./cli/operator.js')).keyCommand(config, argv.slice(1));
    case 'status':
      return (await import('./cli/operator.js')).status(config);
    default:
      return usageError(`unknown command: ${command}`);
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
  const { listen } = await import('./modules/webhooks/index.js');
  const server = await listen(port, secret, process.stdout);
  // The port bound: with --port 0, one the operating system picked.
  const bound = (server.address() as AddressInfo).port;
  process.stderr.write(
    `engram: listening for webhooks on http://127.0.0.1:${bound}/ (${secret ? 'verifying signatures' : 'signatures not checked'})\n`,
  );
}

process.stderr.on('error', () => {});
process.stdout.on('error', () => {});

main(process.argv.slice(2)).catch((error: unknown) => {
  const known = error instanceof ConfigError || error instanceof AppError || error instanceof CliError;
  process.stderr.write(`engram: ${known ? (error as Error).message : ((error as Error).stack ?? String(error))}\n`);
  process.exit(1);
});
