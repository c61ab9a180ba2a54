import { beforeAll, expect, it } from 'vitest';
import { hasScope, roleGrants, type Capability } from '../core/access.js';
import { jobCounts } from '../jobs/runner.js';
import type { Database } from '../store/database.js';
import { forEachDialect, useTestApp } from './harness.js';
import { until } from './until.js';
import { DECLARATIONS, fillPath, queryString } from './operations.js';
import {
  marker,
  PLACES,
  PROBE_CONFIG,
  VICTIM_USER_AGENT,
  type Credential,
  type Declaration,
  type Place,
  type World,
} from './probe-places.js';
import { landing } from './probe-targets.js';
import { buildWorld } from './probe-world.js';
import { answerProblems, servedOperations, type ServedOperation } from './served.js';

/**
 * The authorization matrix: every operation of the served document, called with every kind of
 * credential, aimed at what it may and may not touch. The expected answer follows from the
 * operation's `config.auth` (served in the access catalogue) and its entry in DECLARATIONS; a
 * refusal must leave the database exactly as it was, and no answer may carry another place's data.
 */

interface Access {
  scope: string | null;
  capability: string | null;
}

/**
 * What a refused request could have changed, per table: its rows (count) and, for the columns a
 * change sets, how many are set and the latest value. Columns that record mere use are left out.
 */
const WATCHED: Record<string, string[]> = {
  organizations: [],
  projects: ['updated_at', 'deleted_at'],
  users: [],
  memberships: ['role'],
  api_keys: ['revoked_at', 'expires_at'],
  end_users: ['updated_at'],
  memories: ['updated_at', 'deleted_at'],
  memory_history: [],
  audit_log: [],
  outbox_events: [],
  feedback: ['withdrawn_at'],
  sessions: ['revoked_at'],
  refresh_tokens: ['spent_at'],
  organization_plans: ['updated_at'],
  tenant_usage: ['turns'],
  jobs: [],
};
// The chain (audit_seals, audit_chain_heads) is the sealer's, which runs on its own clock: not watched.
const AUDIT = ['audit_log'];

/** `withAudit: false` for an operation that answers per item: it may record the attempt, nothing else. */
export async function snapshot(database: Database, withAudit = true): Promise<string> {
  const parts: string[] = [];
  for (const [table, columns] of Object.entries(WATCHED)) {
    if (!withAudit && AUDIT.includes(table)) continue;
    const row = await database.db
      .selectFrom(table as 'memories')
      .select((eb) => [
        eb.fn.countAll().as('rows'),
        ...columns.flatMap((c) => [eb.fn.count(c as 'id').as(`n_${c}`), eb.fn.max(c as 'id').as(`max_${c}`)]),
      ])
      .executeTakeFirstOrThrow();
    parts.push(`${table}:${JSON.stringify(Object.values(row).map((v) => (v === null ? null : String(v))))}`);
  }
  return parts.join('\n');
}

export const boundAgainst = (c: Credential, place: Place) =>
  (place === 'user' && !!c.bound?.endUser) || (place === 'tenant' && !!c.bound?.tenant);

/** The answer a cell must get, and whether it is a refusal (which must change nothing). */
export function expectedAnswer(
  op: ServedOperation,
  access: Access,
  d: Declaration,
  c: Credential,
  place: Place,
): { status: number; refused: boolean } {
  const refuse = (status: number) => ({ status, refused: true });
  const permit = { status: d.ok!, refused: false };
  if (c.kind === 'none' || !op.accepts.includes(c.kind) || c.dead) return refuse(401);
  if (access.scope && !hasScope(c.scopes, access.scope)) return refuse(403);
  if (c.kind === 'bearer' && access.capability && !roleGrants(c.role!, access.capability as Capability))
    return refuse(403);
  const exception = d.override?.(c, place);
  if (exception !== undefined) return { status: exception, refused: exception >= 400 };
  if (c.kind === 'api_key' && c.outsideProject) return refuse(404);
  if (c.kind === 'bearer' && d.owner === 'organization')
    return c.org === PLACES[place].org ? permit : refuse(d.refusedWith ?? 404);
  if (place !== 'own') {
    const reach = d.targets?.[place];
    if (reach === 'elsewhere') return refuse(d.refusedWith ?? 404);
    if (reach === 'named' && boundAgainst(c, place)) return refuse(404);
  }
  return permit;
}

/** Text an answer to `c`, about `place`, must not contain. */
export function forbiddenText(c: Credential, place: Place, d: Declaration): string[] {
  const reach = d.targets?.[place as Exclude<Place, 'own'>];
  const about: Place = reach === 'named' || (d.readsProject && reach) ? landing(place, c) : 'own';
  const allowed = (p: Place) => (d.readsProject ? PLACES[p].project === PLACES[about].project : p === about);
  const out = (Object.keys(PLACES) as Place[]).filter((p) => !allowed(p)).map(marker);
  const manager = c.kind === 'bearer' && c.org === 'A' && (c.role === 'owner' || c.role === 'admin');
  if (!manager) out.push(VICTIM_USER_AGENT);
  return out;
}

/**
 * Background jobs (exports, embeddings) write as they finish: wait until none is pending before
 * comparing states. A job still pending after 10 s fails the check (comparing then would compare
 * a state still moving).
 */
export async function settle(database: Database): Promise<void> {
  await until(
    async () => {
      const { queued, running } = await jobCounts(database.db);
      return queued + running === 0;
    },
    'background jobs to finish',
    10_000,
  );
}

/**
 * The matrix over one of `shards` shares of the operations (every shards-th, from `shard`), so that
 * test files running side by side each take a share; the first also checks the declarations.
 */
export function authorizationMatrix(shard: number, shards: number): void {
  forEachDialect(`authorization matrix, share ${shard + 1} of ${shards}`, (dialect) => {
    const t = useTestApp(dialect, PROBE_CONFIG);
    let world: World;
    let operations: ServedOperation[];
    const access = new Map<string, Access>();

    beforeAll(async () => {
      world = await buildWorld(t);
      operations = servedOperations((await t.call('GET', '/openapi.json')).body);
      const catalogue = await t.call('GET', '/auth/catalogue');
      for (const o of catalogue.body.operations as {
        method: string;
        path: string;
        scope: string | null;
        capability: string | null;
      }[]) {
        access.set(`${o.method} ${o.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`, {
          scope: o.scope,
          capability: o.capability,
        });
      }
    });

    if (shard === 0)
      it('has a declaration for every served operation, and none for an operation no longer served', () => {
        const served = operations.map((o) => o.id);
        expect(
          served.filter((id) => !DECLARATIONS[id]),
          'operations without a declaration in testing/operations.ts',
        ).toEqual([]);
        expect(
          Object.keys(DECLARATIONS).filter((id) => !served.includes(id)),
          'declarations of operations not served',
        ).toEqual([]);
        for (const op of operations) {
          const d = DECLARATIONS[op.id]!;
          if (d.public) expect(op.accepts, `${op.id} is declared public but takes credentials`).toEqual([]);
          else expect(access.get(op.id), `${op.id} has no auth declaration in the catalogue`).toBeDefined();
        }
      });

    it('answers every operation, for every credential and target, as declared, and refusals change nothing', async () => {
      const failures: string[] = [];
      let cells = 0;
      for (const op of operations.filter((_, i) => i % shards === shard)) {
        const d = DECLARATIONS[op.id];
        if (!d || d.public) continue;
        const places: Place[] = ['own', ...(Object.keys(d.targets ?? {}) as Place[])];
        for (const c of world.credentials) {
          for (const place of places) {
            const { status: want, refused } = expectedAnswer(op, access.get(op.id)!, d, c, place);
            const built = await d.build!(world, place, c);
            let headers = { ...(built.headers ?? {}), ...c.headers };
            // A key aims at the cell's project as a person does (X-Project-ID); a key of another organization or project keeps naming P.
            const aimed = built.headers?.['x-project-id'];
            if (c.kind === 'api_key' && !c.outsideProject && aimed) headers['x-project-id'] = aimed;
            if (c.kind === 'bearer' && d.consumesSession && !c.dead && c.relogin) {
              headers = { ...headers, authorization: `Bearer ${await c.relogin()}` };
              // The call ends the credential's other sessions: the fresh one carries on.
              if (d.endsOtherSessions) c.headers.authorization = headers.authorization!;
            }
            // A refusal answered per item (a batch) may record the attempt in the audit log, nothing else.
            const batch = want < 400;
            if (refused) await settle(t.database);
            const before = refused ? await snapshot(t.database, !batch) : '';
            const url = fillPath(op.path, built.params) + queryString(built.query);
            const res = await t.call(op.method, url, {
              key: null,
              project: null,
              endUser: null,
              headers,
              ...(built.body !== undefined ? { body: built.body } : {}),
              ...(built.payload ? { payload: built.payload } : {}),
            });
            cells++;
            const cell = `${op.id} as ${c.name} on ${place}`;
            if (res.status !== want)
              failures.push(`${cell}: ${res.status} (expected ${want}) ${res.text.slice(0, 160)}`);
            for (const problem of answerProblems(res)) failures.push(`${cell}: ${problem}`);
            for (const text of forbiddenText(c, place, d)) {
              if (res.text.includes(text)) failures.push(`${cell}: the answer carries data of another place (${text})`);
            }
            if (refused && (await snapshot(t.database, !batch)) !== before)
              failures.push(`${cell}: refused (${res.status}) but the database changed`);
          }
        }
      }
      expect(cells).toBeGreaterThan(500 / shards);
      expect(failures).toEqual([]);
    }, 300_000);
  });
}
