import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { controlContextOf, organizationOf, principalOf } from '../../http/auth.js';
import { PageOf, PageQuery } from '../../core/paging.js';
import { declaredErrors } from '../../http/openapi.js';
import {
  CallbackBody,
  ConfigurationBody,
  ConfigurationPage,
  Connection,
  ConnectionParams,
  ConnectionPatchBody,
  Consent,
  Insights,
  Integration,
  NewConnectionBody,
  OAuthClient,
  OAuthClientBody,
  ObjectsQuery,
  Overview,
  Provider,
  ProviderParams,
  Purged,
  Removed,
  Repaired,
  Sync,
  SyncedObject,
  SyncParams,
} from './schemas.js';
import * as connectors from './service.js';
import * as integrations from './integrations.js';
import * as purge from './purge.js';
import * as syncs from './syncs.js';
import { PROVIDERS, providerNamed } from './providers/index.js';
import { notFound } from '../../core/errors.js';
import type { SyncDeps } from './sync.js';

const read = {
  auth: {
    accepts: ['bearer', 'api_key'],
    scope: 'connectors:read',
    capability: 'projects.read',
    bearerProject: 'required',
  },
} as const;
const manage = {
  auth: {
    accepts: ['bearer', 'api_key'],
    scope: 'connectors:write',
    capability: 'connectors.manage',
    bearerProject: 'required',
  },
} as const;
const tags = ['connectors'];

/** The acting organization and project of a connectors request, and its write context. */
function projectContext(request: FastifyRequest) {
  const principal = principalOf(request);
  return { ...controlContextOf(request, undefined, principal.projectId), projectId: principal.projectId! };
}

export const connectorRoutes: FastifyPluginAsyncTypebox<SyncDeps> = async (app, deps) => {
  const { database } = deps;

  // ---- provider catalog ---------------------------------------------------------------------
  app.get(
    '/connectors/providers',
    {
      config: read,
      schema: {
        tags,
        summary: 'List connector providers',
        description: 'Each provider with its auth kind, configuration and credentials JSON Schemas and capabilities.',
        response: { 200: Type.Object({ items: Type.Array(Provider) }) },
      },
    },
    async () => ({ items: PROVIDERS.map(connectors.providerView) }),
  );

  app.get(
    '/connectors/providers/:provider',
    {
      config: read,
      schema: { tags, summary: 'Read a connector provider', params: ProviderParams, response: { 200: Provider } },
    },
    async (request) => {
      // A name in the path names a resource: an unknown one is absent (404), unlike an unknown provider in a body (400).
      const provider = providerNamed(request.params.provider);
      if (!provider) throw notFound('Provider');
      return connectors.providerView(provider);
    },
  );

  // ---- connection lifecycle -----------------------------------------------------------------
  app.post(
    '/connectors/connections',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Create a connection',
        description:
          'Validates the configuration and credentials against the provider schemas and the source itself. Credentials are stored encrypted and never returned.',
        body: NewConnectionBody,
        response: { 201: Connection },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await connectors.createConnection(deps, projectContext(request), request.body)),
  );

  app.get(
    '/connectors/connections',
    {
      config: read,
      schema: { tags, summary: 'List connections', querystring: PageQuery, response: { 200: PageOf(Connection) } },
    },
    async (request) => connectors.listConnections(database.db, projectContext(request).projectId, request.query),
  );

  app.get(
    '/connectors/connections/:connection_id',
    {
      config: read,
      schema: { tags, summary: 'Read a connection', params: ConnectionParams, response: { 200: Connection } },
    },
    async (request) =>
      connectors.getConnection(database.db, projectContext(request).projectId, request.params.connection_id),
  );

  app.patch(
    '/connectors/connections/:connection_id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Update a connection',
        description: 'Name, credentials (validated against the source, then stored encrypted) or schedule.',
        params: ConnectionParams,
        body: ConnectionPatchBody,
        response: { 200: Connection },
      },
    },
    async (request) =>
      connectors.updateConnection(deps, projectContext(request), request.params.connection_id, request.body),
  );

  app.post(
    '/connectors/connections/:connection_id/repair',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Repair a connection',
        description:
          "Re-validates the stored credentials (OAuth tokens are refreshed) and configuration against the source; the connection becomes active when they work, else stays in error with the reason. When an OAuth connection's consent is gone it becomes needs_repair and the answer carries `consent`, a new consent URL to send the user through. 409 should the credentials keep changing (a consent, a refresh by a sync) while they are checked.",
        params: ConnectionParams,
        response: { 200: Repaired, ...declaredErrors(409, 503) },
      },
    },
    async (request) => connectors.repairConnection(deps, projectContext(request), request.params.connection_id),
  );

  // ---- OAuth consent ------------------------------------------------------------------------
  app.post(
    '/connectors/connections/:connection_id/authorize',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Start OAuth consent',
        description:
          "The provider's consent URL for an oauth2 connection, with a `state` that is single use, bound to the caller and the connection, and expires in ten minutes (PKCE where the provider takes it). After consent the provider sends the browser to the redirect URI with `code` and `state`; post them to …/callback. 400 for providers without OAuth; 503 when the server has no OAuth client for the provider.",
        params: ConnectionParams,
        response: { 200: Consent, ...declaredErrors(503) },
      },
    },
    async (request) => connectors.authorizeConnection(deps, projectContext(request), request.params.connection_id),
  );

  app.post(
    '/connectors/connections/:connection_id/callback',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Complete OAuth consent',
        description:
          'Exchanges the code for tokens (stored encrypted, never returned) and checks the configuration with them: the connection becomes active, or error with the reason. The state must be live and issued to this caller for this connection (else 400 on `state`); it is used up either way. `error` instead of `code` (the user refused at the provider) keeps the connection waiting, with the reason. 409 should the credentials keep changing (another consent) while they are checked.',
        params: ConnectionParams,
        body: CallbackBody,
        response: { 200: Connection, ...declaredErrors(409, 503) },
      },
    },
    async (request) =>
      connectors.completeAuthorization(deps, projectContext(request), request.params.connection_id, request.body),
  );

  app.post(
    '/connectors/connections/:connection_id/purge',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Purge what a connection brought in',
        description:
          'Forgets every memory the connection created and its synced objects; the connection stays. 409 while a sync is queued or running, or while another purge or removal of the connection is under way (one purge at a time); no sync is queued until the purge is done. A purge that failed half way is finished by the next purge or removal; one whose process died, once five minutes have passed since its last batch.',
        params: ConnectionParams,
        response: { 200: Purged, ...declaredErrors(409) },
      },
    },
    async (request) => purge.purgeConnection(deps, projectContext(request), request.params.connection_id),
  );

  app.delete(
    '/connectors/connections/:connection_id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Remove a connection',
        description:
          'Purges (forgets every memory it brought in) and deletes the connection with its syncs. 409 while a sync is queued or running, or while a purge or removal of the connection is under way; no sync is queued meanwhile.',
        params: ConnectionParams,
        response: { 200: Removed, ...declaredErrors(409) },
      },
    },
    async (request) => purge.removeConnection(deps, projectContext(request), request.params.connection_id),
  );

  // ---- configuration pages ------------------------------------------------------------------
  app.get(
    '/connectors/connections/:connection_id/configuration',
    {
      config: read,
      schema: {
        tags,
        summary: 'Read the configuration page',
        description: "The provider's configuration schema and the current values.",
        params: ConnectionParams,
        response: { 200: ConfigurationPage },
      },
    },
    async (request) =>
      connectors.configurationPage(database.db, projectContext(request).projectId, request.params.connection_id),
  );

  app.put(
    '/connectors/connections/:connection_id/configuration',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Replace the configuration',
        description:
          'What to read, validated against the schema and the source. The next sync reads the new selection; objects outside it are forgotten by that (complete) sync.',
        params: ConnectionParams,
        body: ConfigurationBody,
        response: { 200: ConfigurationPage },
      },
    },
    async (request) =>
      connectors.saveConfiguration(deps, projectContext(request), request.params.connection_id, request.body.values),
  );

  // ---- syncs --------------------------------------------------------------------------------
  app.post(
    '/connectors/connections/:connection_id/sync',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Trigger a sync',
        description:
          '202 with the queued sync; 409 while one is queued or running for the connection, while an OAuth connection waits for consent, or while the connection is being purged or removed.',
        params: ConnectionParams,
        response: { 202: Sync, ...declaredErrors(409) },
      },
    },
    async (request, reply) =>
      reply.status(202).send(await syncs.triggerSync(deps, projectContext(request), request.params.connection_id)),
  );

  app.get(
    '/connectors/connections/:connection_id/syncs',
    {
      config: read,
      schema: {
        tags,
        summary: "List a connection's syncs",
        params: ConnectionParams,
        querystring: PageQuery,
        response: { 200: PageOf(Sync) },
      },
    },
    async (request) =>
      syncs.listSyncs(database.db, projectContext(request).projectId, request.params.connection_id, request.query),
  );

  app.get(
    '/connectors/syncs/:sync_id',
    {
      config: read,
      schema: {
        tags,
        summary: 'Watch a sync',
        description: 'Status and progress: objects seen, created, updated, deleted, unchanged, failed.',
        params: SyncParams,
        response: { 200: Sync },
      },
    },
    async (request) => syncs.getSync(database.db, projectContext(request).projectId, request.params.sync_id),
  );

  app.post(
    '/connectors/syncs/:sync_id/cancel',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Cancel a sync',
        description: 'A queued sync is cancelled at once, a running one before its next object; a finished one is 409.',
        params: SyncParams,
        response: { 200: Sync },
      },
    },
    async (request) => syncs.cancelSync(deps, projectContext(request), request.params.sync_id),
  );

  app.get(
    '/connectors/connections/:connection_id/objects',
    {
      config: read,
      schema: {
        tags,
        summary: 'List synced objects',
        description: 'Source id, version, content hash, memory ids and status of each object.',
        params: ConnectionParams,
        querystring: ObjectsQuery,
        response: { 200: PageOf(SyncedObject) },
      },
    },
    async (request) =>
      syncs.listObjects(database.db, projectContext(request).projectId, request.params.connection_id, request.query),
  );

  app.get(
    '/connectors/insights',
    {
      config: read,
      schema: {
        tags,
        summary: 'Connector insights',
        description: "Totals of the project's connections, objects, memories and syncs, and the last runs.",
        response: { 200: Insights },
      },
    },
    async (request) => integrations.insights(database.db, projectContext(request).projectId),
  );

  // ---- integrations (legacy catalog and aggregate view) -------------------------------------
  // Organization-wide settings: people only (an API key acts in one project).
  const orgRead = { auth: { accepts: ['bearer'], scope: 'connectors:read', capability: 'projects.read' } } as const;
  const orgManage = {
    auth: { accepts: ['bearer'], scope: 'connectors:write', capability: 'connectors.manage' },
  } as const;
  app.get(
    '/integrations',
    {
      config: orgRead,
      schema: {
        tags: ['integrations'],
        summary: 'Integrations catalog',
        description: 'Every provider with whether it is enabled for the organization.',
        response: { 200: Type.Object({ items: Type.Array(Integration) }) },
      },
    },
    async (request) => integrations.integrationCatalog(database.db, organizationOf(request).organizationId),
  );

  for (const action of ['enable', 'disable'] as const) {
    app.post(
      `/integrations/:provider/${action}`,
      {
        config: orgManage,
        schema: {
          tags: ['integrations'],
          summary: `${action === 'enable' ? 'Enable' : 'Disable'} an integration`,
          description:
            action === 'enable'
              ? 'Allows connections of this provider in the organization (the default).'
              : 'Refuses new connections and syncs of this provider in the organization (403); existing memories stay.',
          params: ProviderParams,
          response: { 200: Integration },
        },
      },
      async (request) =>
        integrations.setIntegration(
          database,
          controlContextOf(request, undefined, null),
          request.params.provider,
          action === 'enable',
        ),
    );
  }

  app.put(
    '/integrations/:provider/oauth-client',
    {
      config: orgManage,
      schema: {
        tags: ['integrations'],
        summary: "Set the organization's OAuth client",
        description:
          "The organization's own app at the provider (Slack, Google Drive): consent and token refreshes of its connections use it instead of the server's (ENGRAM_<PROVIDER>_CLIENT_ID). The secret is stored encrypted and never returned. 400 for providers without OAuth.",
        params: ProviderParams,
        body: OAuthClientBody,
        response: { 200: OAuthClient },
      },
    },
    async (request) =>
      integrations.setOAuthClient(
        deps,
        controlContextOf(request, undefined, null),
        request.params.provider,
        request.body,
      ),
  );

  app.delete(
    '/integrations/:provider/oauth-client',
    {
      config: orgManage,
      schema: {
        tags: ['integrations'],
        summary: "Remove the organization's OAuth client",
        description: "The server's client applies again; the answer says which client consent now uses (null: none).",
        params: ProviderParams,
        response: { 200: OAuthClient },
      },
    },
    async (request) =>
      integrations.removeOAuthClient(deps, controlContextOf(request, undefined, null), request.params.provider),
  );

  app.get(
    '/integrations/overview',
    {
      config: read,
      schema: {
        tags: ['integrations'],
        summary: 'All integrations of a project',
        description:
          'Every connection of the project with its state and last sync, and each provider with its connection count, in one call.',
        response: { 200: Overview },
      },
    },
    async (request) =>
      integrations.integrationsOverview(
        database.db,
        organizationOf(request).organizationId,
        projectContext(request).projectId,
      ),
  );
};
