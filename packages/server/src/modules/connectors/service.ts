import type { ValidateFunction } from 'ajv';
import type { Selectable } from 'kysely';
import type { ConnectorSyncsTable } from '../../store/schema.js';
import { write, type Effects, type WriteContext } from '../../core/unit-of-work.js';
import { outboundRequest } from '../../core/outbound.js';
import {
  clientOf,
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
import { decodeJson, encodeJson, nowIso, type Database, type Executor } from '../../store/database.js';
import { forgetWithin } from '../memories/index.js';
import { sleep } from './providers/http.js';
import { PROVIDERS, providerNamed } from './providers/index.js';
import {
  ConsentRevoked,
  ProviderConfigError,
  type ConnectorProvider,
  type SourceAccess,
} from './providers/provider.js';
import {
  lockedConnection,
  PURGE_STOPPED,
  purgeUnderWay,
  sameCredentials,
  sealCredentials,
  type ConnectionRow,
  type StoredCredentials,
} from './store.js';
import { AWAITING_CONSENT, queueSync, type SyncDeps } from './sync.js';
import { deleteInBatches } from '../../core/batches.js';

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

async function integrationEnabled(db: Executor, organizationId: string, provider: string): Promise<boolean> {
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
async function validateAgainstSource(provider: ConnectorProvider, access: SourceAccess, consented = true) {
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

async function lastSyncs(db: Executor, connectionIds: number[]): Promise<Map<number, SyncRow>> {
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

function connectionView(row: ConnectionRow, last: SyncRow | undefined): ConnectionView {
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

const nextRun = (minutes: number | null | undefined, from = Date.now()) =>
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

/** The mark (purging_since) this purge or removal set and last renewed: only it clears or renews the mark. */
interface PurgeMark {
  since: string;
}

const takenOver = () =>
  new AppError(
    'conflict',
    'The purge stalled and another purge or removal of the connection took over; it finishes the work',
  );

/**
 * Marks the connection as being purged, its row locked, unless a sync is queued or running or another
 * purge or removal is under way (409). From then on no sync is queued (queueSync) until the purge ends,
 * so none adds back what it forgets. A purge or removal that died or failed half way (its mark lapsed:
 * PURGE_LEASE_MS) is taken over and finished by the next one.
 */
async function startPurge(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  id: number,
): Promise<{ row: ConnectionRow; mark: PurgeMark }> {
  return write(deps.database, ctx, async (trx, effects) => {
    const row = await lockedConnection(deps.database, trx, ctx.projectId, id);
    if (!row) throw notFound('Connection');
    // One at a time: a second purge would keep going after the first's end cleared the mark, with syncs queued again.
    if (purgeUnderWay(row, Date.parse(effects.now))) {
      throw new AppError(
        'conflict',
        "The connection's memories are already being purged (a purge or removal is under way); wait for it to end",
      );
    }
    const active = await trx
      .selectFrom('connector_syncs')
      .select('id')
      .where('connection_id', '=', id)
      .where('status', 'in', ['queued', 'running'])
      .executeTakeFirst();
    if (active)
      throw new AppError('conflict', `Sync ${active.id} of this connection is in progress; cancel it or wait`);
    await trx.updateTable('connector_connections').set({ purging_since: effects.now }).where('id', '=', id).execute();
    return { row, mark: { since: effects.now } };
  });
}

/** Renews the purge's mark in the caller's transaction, compare-and-swap on the value it set: a purge taken over commits nothing more. */
async function renewMark(trx: Executor, id: number, mark: PurgeMark, now: string): Promise<void> {
  const renewed = await trx
    .updateTable('connector_connections')
    .set({ purging_since: now })
    .where('id', '=', id)
    .where('purging_since', '=', mark.since)
    .executeTakeFirst();
  if (Number(renewed.numUpdatedRows) === 0) throw takenOver();
}

/** Forgets every memory the connection brought in; its objects are forgotten too, so the next sync starts afresh. */
async function purgeWithin(deps: SyncDeps, ctx: WriteContext, row: ConnectionRow, mark: PurgeMark): Promise<number> {
  let forgotten = 0;
  for (;;) {
    const objects = await deps.database.db
      .selectFrom('connector_objects')
      .select(['source_id', 'memory_ids'])
      .where('connection_id', '=', row.id)
      .limit(200)
      .execute();
    if (objects.length === 0) return forgotten;
    const batch = await write(deps.database, ctx, async (trx, effects) => {
      const ids = objects.flatMap((o) => decodeJson<number[]>(o.memory_ids));
      const n = (
        await forgetWithin(
          trx,
          { ctx, effects, hooks: deps.erase },
          { projectId: row.project_id, tenantId: '', endUserId: row.end_user_id },
          ids,
        )
      ).length;
      await trx
        .deleteFrom('connector_objects')
        .where('connection_id', '=', row.id)
        .where(
          'source_id',
          'in',
          objects.map((o) => o.source_id),
        )
        .execute();
      // Last, after the owner's lock: the connection's row is not held while the batch waits for that (a sync asked for meanwhile is answered at once).
      await renewMark(trx, row.id, mark, effects.now);
      return { n, now: effects.now };
    });
    forgotten += batch.n;
    mark.since = batch.now;
  }
}

/**
 * Runs a purge or removal: marks the connection, forgets in batches, then `end` in one transaction
 * while the mark is still this purge's. One that fails half way lets its mark lapse at once.
 */
async function purging<T>(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  id: number,
  end: (trx: Executor, effects: Effects, mark: PurgeMark, forgotten: number) => Promise<T>,
): Promise<T> {
  const { row, mark } = await startPurge(deps, ctx, id);
  try {
    const forgotten = await purgeWithin(deps, ctx, row, mark);
    return await write(deps.database, ctx, (trx, effects) => end(trx, effects, mark, forgotten));
  } catch (error) {
    // Only while the mark is still ours; syncs keep waiting for the next purge or removal to finish the work. Should
    // this fail too, the mark lapses after PURGE_LEASE_MS all the same.
    await deps.database.db
      .updateTable('connector_connections')
      .set({ purging_since: PURGE_STOPPED })
      .where('id', '=', id)
      .where('purging_since', '=', mark.since)
      .execute()
      .catch(() => undefined);
    throw error;
  }
}

export async function purgeConnection(deps: SyncDeps, ctx: WriteContext & { projectId: string }, id: number) {
  return purging(deps, ctx, id, async (trx, effects, mark, forgotten) => {
    // Cleared only by the purge that holds the mark: syncs may be queued again once it is done.
    const ended = await trx
      .updateTable('connector_connections')
      .set({ cursor: null, purging_since: null, updated_at: effects.now })
      .where('id', '=', id)
      .where('purging_since', '=', mark.since)
      .executeTakeFirst();
    if (Number(ended.numUpdatedRows) === 0) throw takenOver();
    effects.audit('connection.purge', { type: 'connection', id });
    return { id, memories_forgotten: forgotten };
  });
}

export async function removeConnection(deps: SyncDeps, ctx: WriteContext & { projectId: string }, id: number) {
  return purging(deps, ctx, id, async (trx, effects, mark, forgotten) => {
    await renewMark(trx, id, mark, effects.now);
    await trx.deleteFrom('connector_syncs').where('connection_id', '=', id).execute();
    await trx.deleteFrom('connector_oauth_states').where('connection_id', '=', id).execute();
    await trx.deleteFrom('connector_connections').where('id', '=', id).execute();
    effects.audit('connection.remove', { type: 'connection', id });
    return { id, removed: true, memories_forgotten: forgotten };
  });
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

export async function triggerSync(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  id: number,
): Promise<SyncView> {
  const row = await connectionRow(deps.database.db, ctx.projectId, id);
  if (!(await integrationEnabled(deps.database.db, ctx.organizationId, row.provider)))
    throw forbidden(`${row.provider} is disabled for this organization`);
  const syncId = await write(deps.database, ctx, async (trx, effects) => {
    const queued = await queueSync(deps.database, trx, row, 'manual', ctx, effects.now);
    effects.audit('connector.sync_trigger', { type: 'connection', id });
    return queued;
  });
  deps.jobs.enqueued();
  return getSync(deps.database.db, ctx.projectId, syncId);
}

export async function getSync(db: Executor, projectId: string, syncId: number): Promise<SyncView> {
  const row = await db
    .selectFrom('connector_syncs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('id', '=', syncId)
    .executeTakeFirst();
  if (!row) throw notFound('Sync');
  return syncView(row);
}

/**
 * Retention: deletes syncs that finished before `before`, a batch a statement, except each
 * connection's newest (its last sync, which the connection shows); answers how many.
 */
export async function purgeFinishedSyncs(db: Executor, before: string, batch = 1_000): Promise<number> {
  return deleteInBatches(batch, async () => {
    const finished = db
      .selectFrom('connector_syncs as s')
      .select('s.id')
      .where('s.status', 'not in', ['queued', 'running'])
      .where('s.finished_at', '<', before)
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('connector_syncs as n')
            .select('n.id')
            .whereRef('n.connection_id', '=', 's.connection_id')
            .whereRef('n.id', '>', 's.id'),
        ),
      )
      .limit(batch);
    return Number(
      (await db.deleteFrom('connector_syncs').where('id', 'in', finished).executeTakeFirst()).numDeletedRows,
    );
  });
}

export async function listSyncs(db: Executor, projectId: string, connectionId: number, page: PageParams) {
  await connectionRow(db, projectId, connectionId);
  return paginate(
    db.selectFrom('connector_syncs').selectAll().where('connection_id', '=', connectionId).orderBy('id', 'desc'),
    page,
    syncView,
  );
}

/** Asks a queued or running sync to stop; it stops before its next object. A finished sync is 409. */
export async function cancelSync(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  syncId: number,
): Promise<SyncView> {
  const sync = await getSync(deps.database.db, ctx.projectId, syncId);
  if (!['queued', 'running'].includes(sync.status))
    throw new AppError('conflict', `The sync has already ${sync.status}`);
  await write(deps.database, ctx, async (trx, effects) => {
    // A queued sync is cancelled outright; a running one at its next object.
    await trx
      .updateTable('connector_syncs')
      .set({ cancel_requested: deps.database.bool(true), updated_at: effects.now })
      .where('id', '=', syncId)
      .execute();
    await trx
      .updateTable('connector_syncs')
      .set({ status: 'cancelled', finished_at: effects.now })
      .where('id', '=', syncId)
      .where('status', '=', 'queued')
      .execute();
    effects.audit('connector.sync_cancel', { type: 'sync', id: syncId });
  });
  return getSync(deps.database.db, ctx.projectId, syncId);
}

export async function listObjects(
  db: Executor,
  projectId: string,
  connectionId: number,
  page: PageParams & { status?: string },
) {
  await connectionRow(db, projectId, connectionId);
  return paginate(
    db
      .selectFrom('connector_objects')
      .selectAll()
      .where('connection_id', '=', connectionId)
      .$if(page.status !== undefined, (qb) => qb.where('status', '=', page.status!))
      .orderBy('source_id'),
    page,
    (o) => ({
      source_id: o.source_id,
      title: o.title,
      url: o.url,
      version: o.version,
      content_hash: o.content_hash,
      memory_ids: decodeJson<number[]>(o.memory_ids),
      status: o.status,
      error: o.error,
      created_at: o.created_at,
      updated_at: o.updated_at,
    }),
  );
}

export async function insights(db: Executor, projectId: string) {
  const connections = await db
    .selectFrom('connector_connections')
    .select(['state', (eb) => eb.fn.countAll<number>().as('n')])
    .where('project_id', '=', projectId)
    .groupBy('state')
    .execute();
  const objects = await db
    .selectFrom('connector_objects')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('project_id', '=', projectId)
    .groupBy('status')
    .execute();
  const syncs = await db
    .selectFrom('connector_syncs')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('project_id', '=', projectId)
    .groupBy('status')
    .execute();
  const live = await db
    .selectFrom('connector_objects')
    .select('memory_ids')
    .where('project_id', '=', projectId)
    .where('status', '=', 'synced')
    .execute();
  const recent = await db
    .selectFrom('connector_syncs')
    .selectAll()
    .where('project_id', '=', projectId)
    .orderBy('id', 'desc')
    .limit(10)
    .execute();
  const byKey = (rows: Array<{ n: number } & Record<string, unknown>>, key: string) =>
    Object.fromEntries(rows.map((r) => [String(r[key]), Number(r.n)]));
  return {
    connections: { total: connections.reduce((s, r) => s + Number(r.n), 0), by_state: byKey(connections, 'state') },
    objects: { total: objects.reduce((s, r) => s + Number(r.n), 0), by_status: byKey(objects, 'status') },
    memories: live.reduce((s, o) => s + decodeJson<number[]>(o.memory_ids).length, 0),
    syncs: { total: syncs.reduce((s, r) => s + Number(r.n), 0), by_status: byKey(syncs, 'status') },
    last_runs: recent.map(syncView),
  };
}

export async function integrationCatalog(db: Executor, organizationId: string) {
  const settings = await db
    .selectFrom('integration_settings')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .execute();
  const enabled = new Map(settings.map((s) => [s.provider, Boolean(s.enabled)]));
  return { items: PROVIDERS.map((p) => ({ ...providerView(p), enabled: enabled.get(p.name) ?? true })) };
}

export async function setIntegration(database: Database, ctx: WriteContext, provider: string, enabled: boolean) {
  const p = providerNamed(provider);
  if (!p) throw notFound('Integration');
  await write(database, ctx, async (trx, effects) => {
    await trx
      .insertInto('integration_settings')
      .values({
        organization_id: ctx.organizationId,
        provider,
        enabled: database.bool(enabled),
        oauth_client: null,
        updated_at: effects.now,
      })
      .onConflict((oc) =>
        oc
          .columns(['organization_id', 'provider'])
          .doUpdateSet({ enabled: database.bool(enabled), updated_at: effects.now }),
      )
      .execute();
    effects.audit(enabled ? 'integration.enable' : 'integration.disable', { type: 'integration', id: provider });
  });
  return { ...providerView(p), enabled };
}

function oauthProvider(name: string): ConnectorProvider {
  const provider = providerNamed(name);
  if (!provider) throw notFound('Integration');
  if (!provider.oauth) throw invalid('provider', `${provider.title} does not use OAuth consent`);
  return provider;
}

/** Which OAuth client consent and refreshes of the provider use in the organization; the secret is never shown. */
async function oauthClientView(deps: SyncDeps, provider: ConnectorProvider, organizationId: string) {
  const client = await clientOf(deps, provider, organizationId).catch((error: unknown) => {
    if (error instanceof AppError && error.code === 'unavailable') return null;
    throw error;
  });
  return { provider: provider.name, client_id: client?.clientId ?? null, source: client?.source ?? null };
}

/** Gives the organization its own OAuth client for a provider (its own app at the vendor), stored encrypted. */
export async function setOAuthClient(
  deps: SyncDeps,
  ctx: WriteContext,
  name: string,
  client: { client_id: string; client_secret: string },
) {
  const provider = oauthProvider(name);
  const sealed = sealCredentials(deps.secret, client);
  await write(deps.database, ctx, async (trx, effects) => {
    await trx
      .insertInto('integration_settings')
      .values({
        organization_id: ctx.organizationId,
        provider: provider.name,
        enabled: deps.database.bool(true),
        oauth_client: sealed,
        updated_at: effects.now,
      })
      .onConflict((oc) =>
        oc.columns(['organization_id', 'provider']).doUpdateSet({ oauth_client: sealed, updated_at: effects.now }),
      )
      .execute();
    effects.audit('integration.oauth_client_set', { type: 'integration', id: provider.name });
  });
  return oauthClientView(deps, provider, ctx.organizationId);
}

/** Drops the organization's own OAuth client: the server's applies again (if it has one). */
export async function removeOAuthClient(deps: SyncDeps, ctx: WriteContext, name: string) {
  const provider = oauthProvider(name);
  await write(deps.database, ctx, async (trx, effects) => {
    await trx
      .updateTable('integration_settings')
      .set({ oauth_client: null, updated_at: effects.now })
      .where('organization_id', '=', ctx.organizationId)
      .where('provider', '=', provider.name)
      .execute();
    effects.audit('integration.oauth_client_remove', { type: 'integration', id: provider.name });
  });
  return oauthClientView(deps, provider, ctx.organizationId);
}

/** Every connection of the project with its state and last sync, in one call. */
export async function integrationsOverview(db: Executor, organizationId: string, projectId: string) {
  const rows = await db
    .selectFrom('connector_connections')
    .selectAll()
    .where('project_id', '=', projectId)
    .orderBy('id')
    .execute();
  const last = await lastSyncs(
    db,
    rows.map((r) => r.id),
  );
  const catalog = await integrationCatalog(db, organizationId);
  return {
    project_id: projectId,
    integrations: catalog.items.map((i) => ({
      provider: i.name,
      title: i.title,
      enabled: i.enabled,
      connections: rows.filter((r) => r.provider === i.name).length,
    })),
    connections: rows.map((r) => connectionView(r, last.get(r.id))),
  };
}

/**
 * Queues the syncs whose schedule is due. Each connection's next_sync_at is moved forward with a
 * conditional update first, so of several processes only one queues it.
 */
export async function queueDueSyncs(deps: SyncDeps, now = new Date()): Promise<number[]> {
  const due = await deps.database.db
    .selectFrom('connector_connections')
    .selectAll()
    .where('next_sync_at', 'is not', null)
    .where('next_sync_at', '<=', now.toISOString())
    .where('state', '=', 'active')
    .where('purging_since', 'is', null)
    .limit(100)
    .execute();
  const queued: number[] = [];
  for (const row of due) {
    const claimed = await deps.database.db
      .updateTable('connector_connections')
      .set({ next_sync_at: nextRun(row.schedule_minutes, now.getTime()) })
      .where('id', '=', row.id)
      .where('next_sync_at', '=', row.next_sync_at)
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) === 0) continue;
    const ctx: WriteContext = {
      actor: { type: 'system', id: null },
      organizationId: row.organization_id,
      projectId: row.project_id,
      requestId: null,
    };
    const id = await write(deps.database, ctx, async (trx, effects) => {
      const syncId = await queueSync(deps.database, trx, row, 'schedule', ctx, effects.now);
      effects.audit('connector.sync_trigger', { type: 'connection', id: row.id }, 'scheduled');
      return syncId;
    }).catch((error: unknown) => {
      // A sync already under way, or the connection changed since it was found due (a purge began, consent was lost): skipped this time.
      if (error instanceof AppError && error.code === 'conflict') return undefined;
      throw error;
    });
    if (id !== undefined) queued.push(id);
  }
  if (queued.length) deps.jobs.enqueued();
  return queued;
}
