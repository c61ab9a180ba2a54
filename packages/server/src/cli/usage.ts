import { parseArgs } from 'node:util';
import { VERSION } from '../version.js';

/** What `engram --help` prints, and a usage error after its message. */
export const USAGE = `engram ${VERSION}: memory service for AI applications

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

export function usageError(message: string): void {
  process.stderr.write(`${message}\n\n${USAGE}\n`);
  process.exitCode = 2;
}

export /** Options and positionals of a subcommand; an unknown option is a usage error. */
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
