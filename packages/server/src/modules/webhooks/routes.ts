import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { notFound } from '../../core/errors.js';
import { listEventTypes } from '../../core/events.js';
import { PageOf, PageQuery } from '../../core/paging.js';
import { controlContextOf, organizationOf } from '../../http/auth.js';
import { projectIdsOf } from '../org/index.js';
import type { Database } from '../../store/database.js';
import {
  endpointHealth,
  getDelivery,
  listDeliveries,
  replayDeliveries,
  retryDelivery,
  sendTestEvent,
} from './deliveries.js';
import {
  createEndpoint,
  deleteEndpoint,
  endpointRow,
  listEndpoints,
  rotateSecret,
  setEndpointState,
  toEndpoint,
  updateEndpoint,
  type EndpointScope,
  type WebhookSettings,
} from './endpoints.js';
import {
  CreatedEndpoint,
  Delivery,
  DeliveryDetail,
  DeliveryParams,
  DeliveryQuery,
  Endpoint,
  EndpointParams,
  EndpointPatchBody,
  EventTypeList,
  Health,
  NewEndpointBody,
  Replayed,
  ReplayBody,
  RotatedSecret,
} from './schemas.js';

const read = {
  auth: {
    accepts: ['bearer', 'api_key'],
    scope: 'webhooks:read',
    capability: 'webhooks.manage',
    bearerProject: 'required',
  },
} as const;
const change = {
  auth: {
    accepts: ['bearer', 'api_key'],
    scope: 'webhooks:write',
    capability: 'webhooks.manage',
    bearerProject: 'required',
  },
} as const;
const tags = ['webhooks'];
const IN_PROJECT =
  "Acts in the caller's organization and the project named by X-Project-ID (required); endpoints elsewhere are 404.";

export const webhookRoutes: FastifyPluginAsyncTypebox<{ database: Database; settings: WebhookSettings }> = async (
  app,
  { database, settings },
) => {
  /** The caller's organization and the project the auth mechanism resolved (X-Project-ID, or the key's lock). */
  function scopeOf(request: FastifyRequest): EndpointScope {
    const { organizationId, projectId } = organizationOf(request);
    return { organizationId, projectId: projectId! };
  }
  const contextOf = (request: FastifyRequest, scope: EndpointScope) =>
    controlContextOf(request, scope.organizationId, scope.projectId);

  app.get(
    '/org/webhooks/event-types',
    {
      config: { auth: { accepts: ['bearer', 'api_key'], scope: 'webhooks:read', project: 'optional' } },
      schema: {
        tags,
        summary: 'List event types',
        description:
          'Every event kind an endpoint can subscribe to, with its version and payload schema. Bodies are `{type, timestamp, data}` with `data` as described.',
        response: { 200: EventTypeList },
      },
    },
    async (request) => {
      // The catalogue is the same in every project, but a foreign or deleted project named is 404, as everywhere else.
      // (An API key's project was checked by authentication.)
      const header = request.headers['x-project-id'];
      if (request.principal?.kind === 'bearer' && header !== undefined) {
        if (
          typeof header !== 'string' ||
          !(await projectIdsOf(database.db, organizationOf(request).organizationId, 'live')).includes(header.trim())
        )
          throw notFound('Project');
      }
      return {
        items: listEventTypes().map(({ type, version, description, payload }) => ({
          type,
          version,
          description,
          payload_schema: payload,
        })),
      };
    },
  );

  app.post(
    '/org/webhooks',
    {
      config: change,
      schema: {
        tags,
        summary: 'Create a webhook endpoint',
        description: `${IN_PROJECT} The signing secret (whsec_…) is in this response only. url must be https and resolve to public addresses (see ENGRAM_WEBHOOK_ALLOW_HOSTS).`,
        body: NewEndpointBody,
        response: { 201: CreatedEndpoint },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      return reply
        .status(201)
        .send(await createEndpoint(database, settings, contextOf(request, scope), scope, request.body));
    },
  );

  app.get(
    '/org/webhooks',
    {
      config: read,
      schema: {
        tags,
        summary: 'List webhook endpoints',
        description: `${IN_PROJECT} Oldest first.`,
        querystring: PageQuery,
        response: { 200: PageOf(Endpoint) },
      },
    },
    async (request) => listEndpoints(database.db, scopeOf(request), request.query),
  );

  app.get(
    '/org/webhooks/:endpoint_id',
    {
      config: read,
      schema: {
        tags,
        summary: 'Read a webhook endpoint',
        description: IN_PROJECT,
        params: EndpointParams,
        response: { 200: Endpoint },
      },
    },
    async (request) => toEndpoint(await endpointRow(database.db, scopeOf(request), request.params.endpoint_id)),
  );

  app.patch(
    '/org/webhooks/:endpoint_id',
    {
      config: change,
      schema: {
        tags,
        summary: 'Update a webhook endpoint',
        description: `${IN_PROJECT} name, url (checked again), description, events (non-empty), retry_config, signature_config; never the secret (rotate it). Answers the complete endpoint.`,
        params: EndpointParams,
        body: EndpointPatchBody,
        response: { 200: Endpoint },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      return updateEndpoint(
        database,
        settings,
        contextOf(request, scope),
        scope,
        request.params.endpoint_id,
        request.body,
      );
    },
  );

  app.delete(
    '/org/webhooks/:endpoint_id',
    {
      config: change,
      schema: {
        tags,
        summary: 'Delete a webhook endpoint',
        description: `${IN_PROJECT} Its deliveries and attempts go with it.`,
        params: EndpointParams,
        response: { 200: Endpoint },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      return deleteEndpoint(database, contextOf(request, scope), scope, request.params.endpoint_id);
    },
  );

  app.get(
    '/org/webhooks/:endpoint_id/health',
    {
      config: read,
      schema: {
        tags,
        summary: 'Read the health of a webhook endpoint',
        description: `${IN_PROJECT} Success rate and p50 latency over the last 24 h, failure streak, last success and failure.`,
        params: EndpointParams,
        response: { 200: Health },
      },
    },
    async (request) => endpointHealth(database.db, scopeOf(request), request.params.endpoint_id),
  );

  for (const [action, state, summary, description] of [
    ['pause', 'paused', 'Pause a webhook endpoint', 'Deliveries accumulate and are sent on resume.'],
    [
      'resume',
      'enabled',
      'Resume a webhook endpoint',
      'Also re-enables an endpoint disabled after failing; accumulated deliveries are sent.',
    ],
  ] as const) {
    app.post(
      `/org/webhooks/:endpoint_id/${action}`,
      {
        config: change,
        schema: {
          tags,
          summary,
          description: `${IN_PROJECT} ${description}`,
          params: EndpointParams,
          response: { 200: Endpoint },
        },
      },
      async (request) => {
        const scope = scopeOf(request);
        return setEndpointState(database, contextOf(request, scope), scope, request.params.endpoint_id, state);
      },
    );
  }

  app.post(
    '/org/webhooks/:endpoint_id/rotate-secret',
    {
      config: change,
      schema: {
        tags,
        summary: 'Rotate the signing secret of a webhook endpoint',
        description: `${IN_PROJECT} The new secret is in this response only; the old one keeps signing beside it (two signatures) until previous_secret_expires_at.`,
        params: EndpointParams,
        response: { 200: RotatedSecret },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      return rotateSecret(database, settings, contextOf(request, scope), scope, request.params.endpoint_id);
    },
  );

  app.post(
    '/org/webhooks/:endpoint_id/test',
    {
      config: change,
      schema: {
        tags,
        summary: 'Send a test event',
        description: `${IN_PROJECT} A webhook.test delivery to this endpoint only; follow it with the deliveries operations.`,
        params: EndpointParams,
        response: { 202: Delivery },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      return reply
        .status(202)
        .send(await sendTestEvent(database, contextOf(request, scope), scope, request.params.endpoint_id));
    },
  );

  app.post(
    '/org/webhooks/:endpoint_id/replay',
    {
      config: change,
      schema: {
        tags,
        summary: 'Replay failed deliveries',
        description: `${IN_PROJECT} Queues every exhausted delivery (created in [since, until) when given) again, from the first step of the schedule, with the same id and body.`,
        params: EndpointParams,
        body: ReplayBody,
        response: { 200: Replayed },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      return replayDeliveries(database, contextOf(request, scope), scope, request.params.endpoint_id, request.body);
    },
  );

  app.get(
    '/org/webhooks/:endpoint_id/deliveries',
    {
      config: read,
      schema: {
        tags,
        summary: 'List deliveries',
        description: `${IN_PROJECT} Newest first; filter by status, event_type and creation time [since, until).`,
        params: EndpointParams,
        querystring: DeliveryQuery,
        response: { 200: PageOf(Delivery) },
      },
    },
    async (request) => listDeliveries(database.db, scopeOf(request), request.params.endpoint_id, request.query),
  );

  app.get(
    '/org/webhooks/:endpoint_id/deliveries/:delivery_id',
    {
      config: read,
      schema: {
        tags,
        summary: 'Read a delivery',
        description: `${IN_PROJECT} The body sent and every attempt: time, status code, latency, the first 2 KiB of the answer, error.`,
        params: DeliveryParams,
        response: { 200: DeliveryDetail },
      },
    },
    async (request) =>
      getDelivery(database.db, scopeOf(request), request.params.endpoint_id, request.params.delivery_id),
  );

  app.post(
    '/org/webhooks/:endpoint_id/deliveries/:delivery_id/retry',
    {
      config: change,
      schema: {
        tags,
        summary: 'Retry a delivery',
        description: `${IN_PROJECT} Queues it again now (whatever its status), with the same id and body.`,
        params: DeliveryParams,
        response: { 202: Delivery },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      return reply
        .status(202)
        .send(
          await retryDelivery(
            database,
            contextOf(request, scope),
            scope,
            request.params.endpoint_id,
            request.params.delivery_id,
          ),
        );
    },
  );
};
