import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A module owns its tables: only its own files read or write them, and everyone else asks it through
 * the functions its index.ts exports. Checked from the source: every Kysely call naming a table
 * (selectFrom, insertInto, joins, ...) and every table named after an SQL keyword in raw SQL, outside
 * comments. A new table must be given an owner here; the test harness (testing/) may read any table to
 * check a database's state.
 */

const SRC = dirname(fileURLToPath(import.meta.url));

/** Owner -> the files (a folder ends with '/') allowed to touch its tables. */
const OWNERS: Record<string, readonly string[]> = {
  org: ['modules/org/'],
  auth: ['modules/auth/'],
  people: ['modules/people/'],
  memories: ['modules/memories/'],
  retrieval: ['modules/retrieval/'],
  synthesis: ['modules/synthesis/'],
  intelligence: ['modules/intelligence/'],
  v1: ['modules/v1/'],
  billing: ['modules/billing/'],
  webhooks: ['modules/webhooks/'],
  exports: ['modules/exports/'],
  ingest: ['modules/ingest/'],
  connectors: ['modules/connectors/'],
  // Every module's transaction appends to the audit log (core), which the audit module reads and verifies.
  'audit log': ['core/audit-log.ts', 'modules/audit/'],
  // The idempotency plugin claims and replays keys; the purge and the erasure of stored answers live in core.
  idempotency: ['core/idempotency-keys.ts', 'http/idempotency.ts'],
  // The outbox writes an event only where a subscription receives it, in the writing statement.
  events: ['core/events.ts', 'core/event-subscriptions.ts'],
  'credentials clock': ['core/credentials-clock.ts'],
  jobs: ['jobs/'],
  blobs: ['store/blobs/'],
};

const TABLE_OWNER: Record<string, keyof typeof OWNERS> = {
  organizations: 'org',
  projects: 'org',
  users: 'org',
  memberships: 'org',
  api_keys: 'org',
  sessions: 'auth',
  refresh_tokens: 'auth',
  login_throttle: 'auth',
  invitations: 'people',
  password_resets: 'people',
  end_users: 'memories',
  memories: 'memories',
  memory_history: 'memories',
  feedback: 'retrieval',
  memory_embeddings: 'retrieval',
  index_snapshots: 'retrieval',
  index_snapshot_pieces: 'retrieval',
  memory_relations: 'synthesis',
  ontologies: 'intelligence',
  memory_model_facts: 'intelligence',
  decision_resolutions: 'intelligence',
  tenant_usage: 'v1',
  organization_plans: 'billing',
  usage_counters: 'billing',
  webhook_endpoints: 'webhooks',
  webhook_deliveries: 'webhooks',
  webhook_attempts: 'webhooks',
  exports: 'exports',
  imports: 'exports',
  uploaded_files: 'ingest',
  connector_connections: 'connectors',
  connector_syncs: 'connectors',
  connector_objects: 'connectors',
  connector_oauth_states: 'connectors',
  integration_settings: 'connectors',
  audit_log: 'audit log',
  audit_chain_heads: 'audit log',
  audit_seals: 'audit log',
  audit_seal_horizon: 'audit log',
  idempotency_keys: 'idempotency',
  idempotency_answer_subjects: 'idempotency',
  outbox_events: 'events',
  event_subscriptions: 'events',
  credentials_clock: 'credentials clock',
  jobs: 'jobs',
  blobs: 'blobs',
  blob_chunks: 'blobs',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'migrations' || entry.name === 'testing' ? [] : sourceFiles(path);
    return /\.ts$/.test(entry.name) && !/\.(test|d)\.ts$/.test(entry.name) ? [relative(SRC, path)] : [];
  });
}

/** The tables of the schema (store/schema.ts, interface DB). */
function schemaTables(): string[] {
  const text = readFileSync(join(SRC, 'store/schema.ts'), 'utf8');
  const body = /export interface DB \{([^}]*)\}/.exec(text)?.[1] ?? '';
  return [...body.matchAll(/^\s*([a-z_]+):/gm)].map((m) => m[1]!);
}

const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

/** The tables a file names in a query. */
function tablesNamedBy(text: string, tables: string[]): Set<string> {
  const names = tables
    .slice()
    .sort((a, b) => b.length - a.length)
    .join('|');
  const kysely = new RegExp(
    `\\b(?:selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto|innerJoin|leftJoin|rightJoin|fullJoin)\\(\\s*'(${names})\\b`,
    'g',
  );
  const raw = new RegExp(`\\b(?:FROM|JOIN|INTO|UPDATE|TABLE|EXISTS)\\s+(${names})\\b`, 'g');
  const code = withoutComments(text);
  return new Set([...code.matchAll(kysely), ...code.matchAll(raw)].map((m) => m[1]!));
}

describe('table ownership', () => {
  const tables = schemaTables();

  it('gives every table of the schema an owner', () => {
    expect(tables.length).toBeGreaterThan(40);
    expect(tables.filter((table) => TABLE_OWNER[table] === undefined)).toEqual([]);
    expect(Object.keys(TABLE_OWNER).filter((table) => !tables.includes(table))).toEqual([]);
  });

  it('lets only the owner of a table read or write it', () => {
    const offending: string[] = [];
    for (const file of sourceFiles(SRC)) {
      for (const table of tablesNamedBy(readFileSync(join(SRC, file), 'utf8'), tables)) {
        const allowed = OWNERS[TABLE_OWNER[table]!]!;
        if (!allowed.some((owner) => (owner.endsWith('/') ? file.startsWith(owner) : file === owner)))
          offending.push(`${file} -> ${table}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it('sees a query of another module’s table', () => {
    expect(
      [...tablesNamedBy("db.selectFrom('memories').where(x)\n`SELECT 1 FROM webhook_attempts a`", tables)].sort(),
    ).toEqual(['memories', 'webhook_attempts']);
    expect([
      ...tablesNamedBy("// reads FROM memories\n/* JOIN webhook_attempts */ 'split into memories'", tables),
    ]).toEqual([]);
  });
});
