import type { ValidateFunction } from 'ajv';
import type { Selectable } from 'kysely';
import type { ConnectorSyncsTable } from '../../store/schema.js';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { outboundRequest } from '../../core/outbound.js';
import {
  exchangeCode,
  sourceAccess,
  startConsent,
  vendorEndpoint,
  vendorSettings,
  type CallbackInput,
  type Consent,
} from './oauth.js';
import { AppError, forbidden, invalid, notFound } from '../../core/errors.js';
import { paginate, type PageParams } from '../../core/paging.js';
import { compileBody, validationError } from '../../core/validation.js';
import { decodeJson, encodeJson, nowIso, type Executor } from '../../store/database.js';
import { sleep } from './providers/http.js';
import { providerNamed } from './providers/index.js';
import {
  ConsentRevoked,
  ProviderConfigError,
  type ConnectorProvider,
  type SourceAccess,
} from './providers/provider.js';
import { sameCredentials, sealCredentials, type ConnectionRow, type StoredCredentials } from './store.js';
import { AWAITING_CONSENT, type SyncDeps } from './sync.js';

export interface ConnectionInput {
  provider: string;
  name: string;
  config: Record<string, unknown>;
  credentials?: Record<string, unknown>;
  end_user_id?: string;
  schedule_minutes?: number | null;
}

export type ConnectionPatch = Partial<Pick<ConnectionInput, 'name' | 'credentials' | 'schedule_minutes'>>;

const validators = new Map<object, ValidateFunction>();
function check(schema: object, value: unknown, prefix: string): void {
  let validate = validators.get(schema);
  if (!validate) validators.set(schema, (validate = compileBody(schema)));
  if (!validate(value)) {
    const error = validationError(validate.errors);
    throw invalid(`${prefix}/${error.field}`.replace(/\/body$/, ''), `${prefix}: ${error.message}`);
  }
}

export function providerOrThrow(name: string, field = 'provider'): ConnectorProvider {
  const provider = providerNamed(name);
  if (!provider) throw invalid(field, `Unknown provider ${name}; see GET /connectors/providers`);
  return provider;
}

export const providerView = (p: ConnectorProvider) => ({
  name: p.name,
  title: p.title,
  description: p.description,
  auth_kind: p.authKind,
  config_schema: p.configSchema,
  credentials_schema: p.credentialsSchema,
  capabilities: p.capabilities,
});

export async function integrationEnabled(db: Executor, organizationId: string, provider: string): Promise<boolean> {
  const row = await db
    .selectFrom('integration_settings')
    .select('enabled')
    .where('organization_id', '=', organizationId)
    .where('provider', '=', provider)
    .executeTakeFirst();
  return row === undefined || Boolean(row.enabled);
}

/** Access to the source with credentials the caller gives (not yet stored). */
function givenAccess(
  deps: SyncDeps,
  provider: ConnectorProvider,
  config: unknown,
  credentials: Record<string, unknown> | null,
): SourceAccess {
  const settings = vendorSettings(deps, provider);
  return {
    config: config as Record<string, unknown>,
    credentials,
    oauth: null,
    fetch: (url, request) => outboundRequest(deps.outbound, url, request),
    endpoint: (url) => vendorEndpoint(settings, url),
    pause: sleep,
  };
}

/**
 * Checks the configuration and credentials against the provider's schemas, then against the
 * source itself. An oauth2 connection's tokens come from consent: before it, only the schema is checked.
 */
export async function validateAgainstSource(provider: ConnectorProvider, access: SourceAccess, consented = true) {
  check(provider.configSchema, access.config, 'config');
  const { credentials } = access;
  if (provider.credentialsSchema) {
    if (!credentials) throw invalid('credentials', `${provider.title} needs credentials`);
    check(provider.credentialsSchema, credentials, 'credentials');
  } else if (credentials) {
    throw invalid(
      'credentials',
      provider.oauth
        ? `${provider.title} is authorised by consent (POST …/authorize), not credentials`
        : `${provider.title} takes no credentials`,
    );
  }
  if (provider.oauth && !consented) return;
  try {
    await provider.validate(access);
  } catch (error) {
    if (error instanceof ProviderConfigError) throw invalid(error.field ?? 'config', error.message);
    if (error instanceof ConsentRevoked) throw new ConsentNeeded(error.message);
    throw invalid('config', `The source cannot be reached: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The source says the connection's consent is gone: 409 to a caller that cannot fix that, what repair repairs. */
class ConsentNeeded extends AppError {
  constructor(readonly reason: string) {
    super('conflict', `${reason}; POST …/repair to consent again`);
  }
}

export interface ConnectionView {
  id: number;
  provider: string;
  name: string;
  end_user_id: string;
  state: string;
  state_reason: string | null;
  has_credentials: boolean;
  schedule_minutes: number | null;
  next_sync_at: string | null;
  created_at: string;
  updated_at: string;
  last_sync: SyncView | null;
}

export type SyncView = ReturnType<typeof syncView>;

type SyncRow = Selectable<ConnectorSyncsTable>;
export const syncView = (s: SyncRow) => ({
  id: s.id,
  connection_id: s.connection_id,
  status: s.status,
  trigger: s.trigger,
  cancel_requested: Boolean(s.cancel_requested),
  progress: {
    seen: s.seen,
    created: s.created,
    updated: s.updated,
    deleted: s.deleted,
    unchanged: s.unchanged,
    failed: s.failed,
  },
  error: s.error,
  started_at: s.started_at,
  finished_at: s.finished_at,
  created_at: s.created_at,
});

export async function lastSyncs(db: Executor, connectionIds: number[]): Promise<Map<number, SyncRow>> {
  if (connectionIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('connector_syncs')
    .selectAll()
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('connector_syncs')
        .select((e) => e.fn.max('id').as('id'))
        .where('connection_id', 'in', connectionIds)
        .groupBy('connection_id'),
    )
    .execute();
  return new Map(rows.map((r) => [r.connection_id, r]));
}

export function connectionView(row: ConnectionRow, last: SyncRow | undefined): ConnectionView {
  return {
    id: row.id,
    provider: row.provider,
    name: row.name,
    end_user_id: row.end_user_id,
    state: row.state,
    state_reason: row.state_reason,
    has_credentials: row.credentials !== null,
    schedule_minutes: row.schedule_minutes,
    next_sync_at: row.next_sync_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
    last_sync: last ? syncView(last) : null,
  };
}

export async function connectionRow(db: Executor, projectId: string, id: number): Promise<ConnectionRow> {
  const row = await db
    .selectFrom('connector_connections')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) throw notFound('Connection');
  return row;
}

export async function getConnection(db: Executor, projectId: string, id: number): Promise<ConnectionView> {
  const row = await connectionRow(db, projectId, id);
  return connectionView(row, (await lastSyncs(db, [id])).get(id));
}

export async function listConnections(db: Executor, projectId: string, page: PageParams) {
  const result = await paginate(
    db.selectFrom('connector_connections').selectAll().where('project_id', '=', projectId).orderBy('id'),
    page,
    (r) => r,
  );
  const last = await lastSyncs(
    db,
    result.items.map((r) => r.id),
  );
  return { ...result, items: result.items.map((r) => connectionView(r, last.get(r.id))) };
}

export const nextRun = (minutes: number | null | undefined, from = Date.now()) =>
  minutes ? new Date(from + minutes * 60_000).toISOString() : null;

export async function createConnection(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  input: ConnectionInput,
): Promise<ConnectionView> {
  const provider = providerOrThrow(input.provider);
  if (!(await integrationEnabled(deps.database.db, ctx.organizationId, provider.name)))
    throw forbidden(`${provider.title} is disabled for this organization`);
  await validateAgainstSource(provider, givenAccess(deps, provider, input.config, input.credentials ?? null), false);
  return write(deps.database, ctx, async (trx, effects) => {
    const row = await trx
      .insertInto('connector_connections')
      .values({
        organization_id: ctx.organizationId,
        project_id: ctx.projectId,
        provider: provider.name,
        name: input.name,
        end_user_id: input.end_user_id ?? `connector-${provider.name}`,
        config: encodeJson(input.config),
        credentials: sealCredentials(deps.secret, input.credentials),
        ...(provider.oauth
          ? { state: 'needs_consent', state_reason: 'Waiting for consent (POST …/authorize)' }
          : { state: 'active', state_reason: null }),
        schedule_minutes: input.schedule_minutes ?? null,
        next_sync_at: nextRun(input.schedule_minutes),
        cursor: null,
        created_at: effects.now,
        updated_at: effects.now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    effects.audit('connection.create', { type: 'connection', id: row.id });
    return connectionView(row, undefined);
  });
}

export async function updateConnection(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  id: number,
  patch: ConnectionPatch,
): Promise<ConnectionView> {
  const row = await connectionRow(deps.database.db, ctx.projectId, id);
  const provider = providerOrThrow(row.provider);
  if (patch.credentials !== undefined)
    await validateAgainstSource(provider, givenAccess(deps, provider, decodeJson(row.config), patch.credentials));
  await write(deps.database, ctx, async (trx, effects) => {
    await trx
      .updateTable('connector_connections')
      .set({
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.credentials !== undefined
          ? { credentials: sealCredentials(deps.secret, patch.credentials), state: 'active', state_reason: null }
          : {}),
        ...(patch.schedule_minutes !== undefined
          ? { schedule_minutes: patch.schedule_minutes, next_sync_at: nextRun(patch.schedule_minutes) }
          : {}),
        updated_at: effects.now,
      })
      .where('id', '=', id)
      .execute();
    effects.audit('connection.update', { type: 'connection', id });
  });
  return getConnection(deps.database.db, ctx.projectId, id);
}

/**
 * Checks the connection against its source with its stored credentials (`check`), and records the
 * state the check decided while those credentials are still stored. A consent, new credentials or a
 * refresh elsewhere in between makes the check run again with the new ones (409 should they keep changing).
 */
async function recordCheckedState(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  first: ConnectionRow,
  action: string,
  check: (row: ConnectionRow, stored: StoredCredentials) => Promise<{ state: string; reason: string | null }>,
): Promise<string> {
  let row = first;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (attempt > 0) row = await connectionRow(deps.database.db, ctx.projectId, row.id);
    const stored: StoredCredentials = { sealed: row.credentials };
    const { state, reason } = await check(row, stored);
    const recorded = await write(deps.database, ctx, async (trx, effects) => {
      const result = await trx
        .updateTable('connector_connections')
        .set({ state, state_reason: reason, updated_at: effects.now })
        .where('id', '=', row.id)
        .where(sameCredentials(stored.sealed))
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return false;
      effects.audit(action, { type: 'connection', id: row.id }, reason ? 'failure' : 'success');
      return true;
    });
    if (recorded) return state;
  }
  throw new AppError('conflict', "The connection's credentials kept changing while they were checked; try again");
}

/**
 * Re-validates the stored credentials (an oauth2 connection's tokens, refreshed if need be) and the
 * configuration against the source and, when they work, makes the connection active again. When
 * an oauth2 connection's consent is gone, it becomes `needs_repair` and the answer carries a new
 * consent to send the user through.
 */
export async function repairConnection(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  id: number,
): Promise<ConnectionView & { consent?: Consent }> {
  const row = await connectionRow(deps.database.db, ctx.projectId, id);
  const provider = providerOrThrow(row.provider);
  const state = await recordCheckedState(deps, ctx, row, 'connection.repair', async (current, stored) => {
    try {
      if (provider.oauth && stored.sealed === null)
        throw new ConsentNeeded(`${provider.title} has not been authorised yet`);
      await validateAgainstSource(provider, sourceAccess(deps, provider, current, stored));
      return { state: 'active', reason: null };
    } catch (error) {
      if (error instanceof ConsentNeeded)
        return {
          state: current.state === 'needs_consent' ? 'needs_consent' : 'needs_repair',
          reason: `${error.reason}; consent again at the consent URL`,
        };
      if (error instanceof AppError) return { state: 'error', reason: error.message };
      throw error;
    }
  });
  const view = await getConnection(deps.database.db, ctx.projectId, id);
  return AWAITING_CONSENT.includes(state) ? { ...view, consent: await startConsent(deps, ctx, row, provider) } : view;
}

/** Starts (or restarts) OAuth consent for an oauth2 connection: the provider's consent URL. */
export async function authorizeConnection(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  id: number,
): Promise<Consent> {
  const row = await connectionRow(deps.database.db, ctx.projectId, id);
  const provider = providerOrThrow(row.provider);
  if (!(await integrationEnabled(deps.database.db, ctx.organizationId, provider.name)))
    throw forbidden(`${provider.title} is disabled for this organization`);
  return startConsent(deps, ctx, row, provider);
}

/**
 * Completes consent: the state must be the one this caller was given for this connection. The
 * tokens are stored encrypted, then the configuration is checked against the source with them.
 */
export async function completeAuthorization(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  id: number,
  input: CallbackInput,
): Promise<ConnectionView> {
  const row = await connectionRow(deps.database.db, ctx.projectId, id);
  const provider = providerOrThrow(row.provider);
  const outcome = await exchangeCode(deps, ctx, row, provider, input);
  if ('refused' in outcome) {
    await write(deps.database, ctx, async (trx, effects) => {
      await trx
        .updateTable('connector_connections')
        .set({
          state_reason: `Consent was refused at ${provider.title} (${outcome.refused.slice(0, 100)})`,
          updated_at: effects.now,
        })
        .where('id', '=', id)
        .execute();
      effects.audit('connection.consent', { type: 'connection', id }, 'failure');
    });
    return getConnection(deps.database.db, ctx.projectId, id);
  }
  // Stored first, in place of whatever was there: a refresh while checking the configuration below stores its tokens over these.
  const credentials = sealCredentials(deps.secret, outcome as unknown as Record<string, unknown>);
  await deps.database.db
    .updateTable('connector_connections')
    .set({ credentials, updated_at: nowIso() })
    .where('id', '=', id)
    .execute();
  await recordCheckedState(deps, ctx, { ...row, credentials }, 'connection.consent', async (current, stored) => {
    try {
      await validateAgainstSource(provider, sourceAccess(deps, provider, current, stored));
      return { state: 'active', reason: null };
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return { state: 'error', reason: error.message };
    }
  });
  return getConnection(deps.database.db, ctx.projectId, id);
}

export async function configurationPage(db: Executor, projectId: string, id: number) {
  const row = await connectionRow(db, projectId, id);
  const provider = providerOrThrow(row.provider);
  return {
    connection_id: id,
    provider: provider.name,
    schema: provider.configSchema,
    values: decodeJson<Record<string, unknown>>(row.config),
  };
}

export async function saveConfiguration(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  id: number,
  values: Record<string, unknown>,
) {
  const row = await connectionRow(deps.database.db, ctx.projectId, id);
  const provider = providerOrThrow(row.provider);
  await validateAgainstSource(
    provider,
    { ...sourceAccess(deps, provider, row), config: values },
    row.credentials !== null,
  );
  await write(deps.database, ctx, async (trx, effects) => {
    // What to read changed: the cursor of the old selection no longer applies.
    await trx
      .updateTable('connector_connections')
      .set({ config: encodeJson(values), cursor: null, updated_at: effects.now })
      .where('id', '=', id)
      .execute();
    effects.audit('connection.configure', { type: 'connection', id });
  });
  return configurationPage(deps.database.db, ctx.projectId, id);
}
