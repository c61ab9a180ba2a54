import { PLACES, RECEIVER, type Declaration, nextSerial } from './probe-places.js';
import {
  projectOf,
  onWebhook,
  onDelivery,
  eventTypeOf,
  onConnection,
  onFreshConnection,
  onSync,
  onOAuthConnection,
  inProject,
} from './probe-targets.js';

/** Declarations of the integrations: webhooks and connectors (bearer, X-Project-ID names the project). */

export const INTEGRATION_OPERATIONS: Record<string, Declaration> = {
  // ---- webhooks (bearer, X-Project-ID names the project) -----------------------------------------
  'GET /org/webhooks/event-types': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place) }),
  },
  'POST /org/webhooks': {
    ok: 201,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({
      headers: projectOf(w, place),
      body: { name: `probe hook ${nextSerial()}`, url: RECEIVER, events: [await eventTypeOf(w)] },
    }),
  },
  'GET /org/webhooks': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ headers: projectOf(w, place) }),
  },
  'GET /org/webhooks/{endpoint_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'PATCH /org/webhooks/{endpoint_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook({ description: 'probe' }),
  },
  'DELETE /org/webhooks/{endpoint_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'GET /org/webhooks/{endpoint_id}/health': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'POST /org/webhooks/{endpoint_id}/pause': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'POST /org/webhooks/{endpoint_id}/resume': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'POST /org/webhooks/{endpoint_id}/rotate-secret': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'POST /org/webhooks/{endpoint_id}/test': {
    ok: 202,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'POST /org/webhooks/{endpoint_id}/replay': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook({}),
  },
  'GET /org/webhooks/{endpoint_id}/deliveries': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onWebhook(),
  },
  'GET /org/webhooks/{endpoint_id}/deliveries/{delivery_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onDelivery(),
  },
  'POST /org/webhooks/{endpoint_id}/deliveries/{delivery_id}/retry': {
    ok: 202,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onDelivery(),
  },

  // ---- connectors (bearer, X-Project-ID names the project) --------------------------------------
  'GET /connectors/providers': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: inProject() },
  'GET /connectors/providers/{provider}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({ params: { provider: 'web_crawler' }, headers: projectOf(w, place) }),
  },
  'POST /connectors/connections': {
    ok: 201,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({
      headers: projectOf(w, place),
      body: {
        provider: 'web_crawler',
        name: `probe connection ${nextSerial()}`,
        config: { start_urls: [`${w.siteBase}/`], delay_ms: 0, max_depth: 1 },
      },
    }),
  },
  'GET /connectors/connections': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: inProject() },
  'GET /connectors/connections/{connection_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onConnection(),
  },
  'PATCH /connectors/connections/{connection_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onConnection({ schedule_minutes: 60 }),
  },
  'POST /connectors/connections/{connection_id}/repair': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onConnection(),
  },
  'POST /connectors/connections/{connection_id}/authorize': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onOAuthConnection(),
  },
  // No consent was started with this state: a permitted call answers 400 on `state` (it reaches no provider).
  'POST /connectors/connections/{connection_id}/callback': {
    ok: 400,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onOAuthConnection({ state: 'probe-state-never-issued', code: 'probe-code' }),
  },
  'POST /connectors/connections/{connection_id}/purge': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onFreshConnection(),
  },
  'DELETE /connectors/connections/{connection_id}': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onFreshConnection(),
  },
  'GET /connectors/connections/{connection_id}/configuration': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onConnection(),
  },
  'PUT /connectors/connections/{connection_id}/configuration': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) =>
      onConnection({ values: { start_urls: [`${w.siteBase}/`], delay_ms: 0, max_depth: 1 } })(w, place),
  },
  'POST /connectors/connections/{connection_id}/sync': {
    ok: 202,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onFreshConnection(),
  },
  'GET /connectors/connections/{connection_id}/syncs': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onConnection(),
  },
  'GET /connectors/connections/{connection_id}/objects': {
    ok: 200,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: async (w, place) => ({
      params: { connection_id: (await w.sync(PLACES[place].org)).connectionId },
      headers: projectOf(w, place),
    }),
  },
  'GET /connectors/syncs/{sync_id}': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: onSync() },
  // The fixture sync has finished: a permitted cancel answers 409 (nothing left to cancel).
  'POST /connectors/syncs/{sync_id}/cancel': {
    ok: 409,
    owner: 'organization',
    targets: { org: 'elsewhere' },
    build: onSync(),
  },
  'GET /connectors/insights': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: inProject() },
  'GET /integrations': { ok: 200, owner: 'caller', build: async () => ({}) },
  // object_storage, not web_crawler: the connection fixtures need web_crawler enabled.
  'POST /integrations/{provider}/enable': {
    ok: 200,
    owner: 'caller',
    build: async () => ({ params: { provider: 'object_storage' } }),
  },
  'POST /integrations/{provider}/disable': {
    ok: 200,
    owner: 'caller',
    build: async () => ({ params: { provider: 'object_storage' } }),
  },
  // google_drive, not slack: the consent fixtures use the server's Slack client.
  'PUT /integrations/{provider}/oauth-client': {
    ok: 200,
    owner: 'caller',
    build: async () => ({
      params: { provider: 'google_drive' },
      body: { client_id: 'probe.apps.example', client_secret: 'probe-secret' },
    }),
  },
  'DELETE /integrations/{provider}/oauth-client': {
    ok: 200,
    owner: 'caller',
    build: async () => ({ params: { provider: 'google_drive' } }),
  },
  'GET /integrations/overview': { ok: 200, owner: 'organization', targets: { org: 'elsewhere' }, build: inProject() },
};
