import type { Config } from '../config.js';
import { outboxBacklog } from '../core/events.js';
import { jobCounts } from '../jobs/runner.js';
import { verifyAuditChains } from '../modules/audit/index.js';
import { lastSignIns } from '../modules/auth/index.js';
import { setPlan } from '../modules/billing/index.js';
import { createKeyAsOperator, listUsers, revokeKeyAsOperator } from '../modules/org/index.js';
import { createUserAsOperator, resetPasswordAsOperator } from '../modules/people/index.js';
import { openDatabase, type Database } from '../store/database.js';
import { migrate, migrationStatus } from '../store/migrate.js';
import { options, usageError } from './usage.js';

/**
 * The operator's commands on the database (`engram audit`, `org`, `user`, `key`, `status`), loaded
 * by main.ts only for them: they load the modules they call, not the HTTP app and the service graph.
 */

/** `engram audit verify [organization_id]`: walks each organization's audit hash chain. */
export async function auditCommand(config: Config, args: string[]): Promise<void> {
  if (args[0] !== 'verify') return usageError(`unknown audit command: ${args[0] ?? '(none)'}`);
  return withDatabase(config, async (database) => {
    const reports = await verifyAuditChains(database, args[1]);
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
}

/** `engram org set-plan <organization_id> <plan>`. */
export async function orgCommand(config: Config, args: string[]): Promise<void> {
  if (args[0] !== 'set-plan' || !args[1] || !args[2])
    return usageError('usage: engram org set-plan <organization_id> <plan>');
  return withDatabase(config, async (database) => {
    await setPlan(database, args[1]!, args[2]!);
    process.stdout.write(`${args[1]}: plan set to ${args[2]}\n`);
  });
}

/** Secrets go to stdout once, never through the logger. */
export async function userCommand(config: Config, args: string[]): Promise<void> {
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

export async function keyCommand(config: Config, args: string[]): Promise<void> {
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
export async function status(config: Config): Promise<void> {
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

/** A command on a migrated database, closed afterwards. */
async function withDatabase(config: Config, run: (database: Database) => Promise<void>): Promise<void> {
  const database = openDatabase(config.database);
  try {
    await migrate(database);
    await run(database);
  } finally {
    await database.close();
  }
}
