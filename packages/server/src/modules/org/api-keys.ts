import type { Selectable } from 'kysely';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import type { Principal } from '../../core/context.js';
import type { EventPayload } from '../../core/events.js';
import { validateEndUserId } from '../../core/validation.js';
import { forbidden, invalid, notFound } from '../../core/errors.js';
import { paginate, type PageParams } from '../../core/paging.js';
import { decodeJson, nowIso, type Database, type Executor } from '../../store/database.js';
import type { ApiKeysTable } from '../../store/schema.js';
import { DATA_PLANE_SCOPES, hasScope, isScope, KEY_CONTROL_SCOPES, keyScopes } from '../../core/access.js';
import { SYSTEM_ACTOR } from '../../core/context.js';
import { createApiKey, findProject, projectOrganization, revokeApiKey } from './service.js';
import { credentialsChanged } from './resolved-keys.js';

/** API key management for the control plane. The secret is returned once, at creation. */

export interface ApiKeyView {
  id: number;
  name: string;
  prefix: string;
  project_id: string | null;
  scopes: string[];
  tenant_id: string | null;
  end_user_id: string | null;
  created_by: number | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  status: 'active' | 'revoked' | 'expired';
}

type Row = Selectable<ApiKeysTable>;

export function toApiKeyView(row: Row, now = nowIso()): ApiKeyView {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    project_id: row.project_id,
    scopes: decodeJson<string[]>(row.scopes),
    tenant_id: row.tenant_id,
    end_user_id: row.end_user_id,
    created_by: row.created_by,
    created_at: row.created_at,
    expires_at: row.expires_at,
    revoked_at: row.revoked_at,
    last_used_at: row.last_used_at,
    status:
      row.revoked_at !== null ? 'revoked' : row.expires_at !== null && row.expires_at <= now ? 'expired' : 'active',
  };
}

const orgKeys = (db: Executor, organizationId: string) =>
  db.selectFrom('api_keys').selectAll().where('organization_id', '=', organizationId);

export function listApiKeys(db: Executor, organizationId: string, page: PageParams) {
  const now = nowIso();
  return paginate(orgKeys(db, organizationId).orderBy('id', 'desc'), page, (row) => toApiKeyView(row, now));
}

export async function getApiKey(db: Executor, organizationId: string, keyId: number): Promise<ApiKeyView> {
  const row = await orgKeys(db, organizationId).where('id', '=', keyId).executeTakeFirst();
  if (!row) throw notFound('API key');
  return toApiKeyView(row);
}

export interface NewApiKey {
  name: string;
  project_id?: string;
  scopes?: string[];
  expires_at?: string;
  tenant_id?: string;
  end_user_id?: string;
}

/**
 * A key can carry only catalogue scopes the creating credential holds itself; the data plane by default, control-plane
 * scopes (KEY_CONTROL_SCOPES) only when asked for and only on a key not bound to a tenant or end user.
 */
export async function issueApiKey(database: Database, ctx: WriteContext, principal: Principal, input: NewApiKey) {
  const scopes = [...new Set(input.scopes ?? DATA_PLANE_SCOPES)];
  scopes.forEach((scope, i) => {
    if (!isScope(scope)) throw invalid(`scopes/${i}`, `${scope} is not a known scope; see GET /auth/catalogue`);
  });
  if (input.tenant_id !== undefined || input.end_user_id !== undefined) {
    scopes.forEach((scope, i) => {
      if ((KEY_CONTROL_SCOPES as readonly string[]).includes(scope))
        throw invalid(`scopes/${i}`, `${scope} cannot be carried by a key bound to a tenant or end user`);
    });
  }
  const beyond = scopes.filter((s) => !hasScope(principal.scopes, s));
  if (beyond.length > 0) throw forbidden(`A key cannot carry scopes your credential lacks: ${beyond.join(', ')}`);
  if (input.expires_at !== undefined && Date.parse(input.expires_at) <= Date.now())
    throw invalid('expires_at', 'expires_at must be in the future');
  if (input.end_user_id !== undefined) validateEndUserId(input.end_user_id, 'end_user_id');
  if (input.project_id !== undefined && !(await findProject(database.db, ctx.organizationId, input.project_id)))
    throw notFound('Project');
  return write(database, { ...ctx, projectId: input.project_id ?? null }, async (trx, effects) => {
    const created = await createApiKey(trx, {
      organizationId: ctx.organizationId,
      name: input.name,
      projectId: input.project_id,
      scopes,
      tenantId: input.tenant_id,
      endUserId: input.end_user_id,
      createdBy: principal.userId,
      expiresAt: input.expires_at === undefined ? null : new Date(input.expires_at).toISOString(),
    });
    effects.audit('api_key.create', { type: 'api_key', id: created.id });
    const view = toApiKeyView(
      await orgKeys(trx, ctx.organizationId).where('id', '=', created.id).executeTakeFirstOrThrow(),
      effects.now,
    );
    effects.emit('api_key.created', keyEvent(view));
    return { ...view, key: created.key };
  });
}

/** API key events name the key and its reach, never its secret; without a project lock they go to every endpoint of the organization. */
function keyEvent(view: ApiKeyView): EventPayload<'api_key.created'> {
  return { api_key_id: view.id, name: view.name, project_id: view.project_id, scopes: view.scopes };
}

export type RevokeOutcome = 'revoked' | 'already_revoked' | 'not_found';

/** Revokes keys of the organization, one audit row per key actually revoked. */
export async function revokeApiKeys(
  database: Database,
  ctx: WriteContext,
  ids: number[],
): Promise<Array<{ id: number; status: RevokeOutcome }>> {
  try {
    return await revokeInTransaction(database, ctx, ids);
  } finally {
    // Committed (or, after a failed COMMIT, perhaps committed): no key resolved before is used again.
    credentialsChanged(database);
  }
}

function revokeInTransaction(
  database: Database,
  ctx: WriteContext,
  ids: number[],
): Promise<Array<{ id: number; status: RevokeOutcome }>> {
  return write(database, ctx, async (trx, effects) => {
    const results: Array<{ id: number; status: RevokeOutcome }> = [];
    for (const id of ids) {
      if (await revokeApiKey(trx, ctx.organizationId, id, effects.now)) {
        effects.audit('api_key.revoke', { type: 'api_key', id });
        effects.emit(
          'api_key.revoked',
          keyEvent(
            toApiKeyView(
              await orgKeys(trx, ctx.organizationId).where('id', '=', id).executeTakeFirstOrThrow(),
              effects.now,
            ),
          ),
        );
        results.push({ id, status: 'revoked' });
      } else {
        const exists = await orgKeys(trx, ctx.organizationId).select('id').where('id', '=', id).executeTakeFirst();
        results.push({ id, status: exists ? 'already_revoked' : 'not_found' });
      }
    }
    return results;
  });
}

/** What a key can do now, without revealing it: its state, reach, and the operations its scopes open. */
export async function testApiKey(
  db: Executor,
  organizationId: string,
  keyId: number,
  operations: Array<{ method: string; path: string; accepts: string[]; scope: string | null }>,
) {
  const key = await getApiKey(db, organizationId, keyId);
  let project_status: 'none' | 'active' | 'deleted' = 'none';
  if (key.project_id) project_status = (await findProject(db, organizationId, key.project_id)) ? 'active' : 'deleted';
  const valid = key.status === 'active' && project_status !== 'deleted';
  return {
    id: key.id,
    valid,
    status: key.status,
    reason: valid
      ? null
      : key.status !== 'active'
        ? `The key is ${key.status}`
        : 'The project the key is locked to was deleted',
    prefix: key.prefix,
    project_id: key.project_id,
    project_status,
    scopes: key.scopes,
    tenant_id: key.tenant_id,
    end_user_id: key.end_user_id,
    expires_at: key.expires_at,
    last_used_at: key.last_used_at,
    operations: valid
      ? operations
          .filter(
            (op) =>
              op.accepts.includes('api_key') &&
              (op.scope === null ||
                hasScope(
                  keyScopes({ scopes: key.scopes, tenantId: key.tenant_id, endUserId: key.end_user_id }),
                  op.scope,
                )),
          )
          .map((op) => `${op.method} ${op.path}`)
      : [],
  };
}

// ---- operator commands (engram key …) ----------------------------------------------------------

/** `engram key create`: a key locked to a project, audited as the system actor. The secret is returned once. */
export async function createKeyAsOperator(
  database: Database,
  input: { projectId: string; scopes?: string[]; name?: string },
): Promise<{ id: number; key: string; organizationId: string }> {
  const organizationId = await projectOrganization(database.db, input.projectId);
  if (!organizationId) throw notFound(`Project ${input.projectId}`);
  const scopes = input.scopes ?? [...DATA_PLANE_SCOPES];
  scopes.forEach((scope, i) => {
    if (!isScope(scope)) throw invalid(`scopes/${i}`, `${scope} is not a known scope`);
  });
  return write(
    database,
    { actor: SYSTEM_ACTOR, organizationId, projectId: input.projectId, requestId: null },
    async (trx, effects) => {
      const key = await createApiKey(trx, {
        organizationId,
        projectId: input.projectId,
        name: input.name ?? 'Operator key',
        scopes: [...new Set(scopes)],
      });
      effects.audit('api_key.create', { type: 'api_key', id: key.id });
      return { ...key, organizationId };
    },
  );
}

/** `engram key revoke`: revoked, already_revoked or not_found. */
export async function revokeKeyAsOperator(database: Database, keyId: number): Promise<RevokeOutcome> {
  const row = await database.db
    .selectFrom('api_keys')
    .select('organization_id')
    .where('id', '=', keyId)
    .executeTakeFirst();
  if (!row) return 'not_found';
  const [result] = await revokeApiKeys(
    database,
    { actor: SYSTEM_ACTOR, organizationId: row.organization_id, projectId: null, requestId: null },
    [keyId],
  );
  return result!.status;
}
