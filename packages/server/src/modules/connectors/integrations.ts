/** What an organization allows and sees: enabled providers, OAuth clients, the insights and overview pages. */
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { clientOf } from './oauth.js';
import { AppError, invalid, notFound } from '../../core/errors.js';
import { decodeJson, type Database, type Executor } from '../../store/database.js';
import { PROVIDERS, providerNamed } from './providers/index.js';
import type { ConnectorProvider } from './providers/provider.js';
import { sealCredentials } from './store.js';
import type { SyncDeps } from './sync.js';

import { syncView, connectionView, lastSyncs, providerView } from './service.js';

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
