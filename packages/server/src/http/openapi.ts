import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { ErrorCode } from '../core/errors.js';
import { changesNothing } from './auth.js';
import { finishDocument } from './openapi-document.js';
import { OPERATION_NAMES } from './operation-names.js';

/** The one error body of every 4xx and 5xx answer (docs/api.md), a named component of the document. */
const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'Machine-readable code, e.g. validation_error, not_found, rate_limited' }),
      message: Type.String(),
      field: Type.Optional(Type.String({ description: 'The offending field (a JSON pointer path for nested ones)' })),
      request_id: Type.String(),
    }),
  },
  { $id: 'Error', title: 'Error' },
);

const ERROR_STATUSES: Record<number, { code: ErrorCode; description: string }> = {
  400: { code: 'validation_error', description: 'Invalid request; `field` names the offending field' },
  401: { code: 'unauthenticated', description: 'Missing, invalid or expired credentials' },
  403: { code: 'forbidden', description: 'The credential lacks the scope or the role the capability' },
  404: { code: 'not_found', description: "Absent, or outside the caller's scope" },
  408: {
    code: 'request_timeout',
    description: 'The request (headers and body) did not arrive within the request timeout',
  },
  409: {
    code: 'conflict',
    description:
      'Conflicts with the current state (`conflict`), or a request with this Idempotency-Key is in flight (`idempotency_in_progress`, retry after Retry-After)',
  },
  410: { code: 'gone', description: 'No longer available (expired or withdrawn)' },
  413: { code: 'payload_too_large', description: 'Request body too large' },
  415: { code: 'unsupported_media_type', description: 'Content-Type must be application/json' },
  416: { code: 'range_not_satisfiable', description: 'The requested byte range is outside the resource' },
  422: { code: 'idempotency_key_reused', description: 'The Idempotency-Key was used for a different request' },
  429: {
    code: 'rate_limited',
    description: 'Rate limited (see Retry-After), a quota is used up, or too many open connections',
  },
  431: { code: 'headers_too_large', description: 'The request headers are over 16 KiB' },
  500: { code: 'internal_error', description: 'Internal error; quote the request_id' },
  503: {
    code: 'database_unavailable',
    description:
      'The database (`database_unavailable`), a provider or a dependency (`unavailable`) is unavailable; retry after Retry-After',
  },
  507: {
    code: 'insufficient_storage',
    description: 'The database has no room left (its disk is full); nothing of the write was stored',
  },
};

/** The tags of the document, one per area; every operation carries one of them. */
export const OPENAPI_TAGS = [
  { name: 'memories', description: 'Add, read, change, export and forget memories' },
  { name: 'retrieval', description: 'Query, retrieve, search, compose; embeddings refresh; feedback' },
  { name: 'intelligence', description: 'Ontology, entity graph, clusters, conflicting statements, reports' },
  { name: 'tenant (/v1)', description: 'The /v1 conversation plane: turns, recall, listing, status' },
  { name: 'auth', description: 'Sign-in, sessions, tokens and the access catalogue' },
  { name: 'organizations', description: 'Organizations and memberships' },
  { name: 'members', description: 'Invitations, members and their roles, password-reset links' },
  { name: 'projects', description: 'Projects of an organization' },
  { name: 'api-keys', description: 'API keys of an organization' },
  { name: 'audit', description: 'The hash-chained audit log' },
  { name: 'billing', description: 'Plan, allowances and usage' },
  { name: 'webhooks', description: 'Webhook endpoints, event types, deliveries and their attempts' },
  { name: 'exports', description: 'Background exports and imports of project data' },
  { name: 'health', description: 'Liveness and readiness probes' },
  {
    name: 'connectors',
    description: 'Connections to external sources, their syncs and synced objects (bearer, X-Project-ID)',
  },
  { name: 'integrations', description: 'The integrations catalog of an organization and the per-project overview' },
];

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const IDEMPOTENCY_KEY_HEADER = {
  type: 'string',
  description:
    'Makes the write safe to retry: the same key for the same request within 24 hours replays the first answer (Idempotent-Replayed: true)',
};

/**
 * The operationId of a route: its client method's name from OPERATION_NAMES (`memories.add`); a route
 * not named there yet gets a mechanical id from method and path (getMemoryByMemoryIdHistory), which
 * src/http/openapi.test.ts refuses.
 */
export function operationIdOf(method: string, url: string): string {
  const named = OPERATION_NAMES[`${method.toUpperCase()} ${url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`];
  if (named) return named;
  const camel = (s: string) => s.replace(/[-_]+([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  const upper = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
  const parts = url
    .split('/')
    .filter(Boolean)
    .map((part) => (part.startsWith(':') ? `By${upper(camel(part.slice(1)))}` : upper(camel(part))));
  return method.toLowerCase() + parts.join('');
}

/** The error answers an operation can give, each referencing the Error component. */
function impliedErrorResponses(method: string, url: string, authenticated: boolean, declared: Record<string, unknown>) {
  // Any request can be malformed, slow, rate limited or over-long in its headers (http/connections.ts),
  // and any but the liveness probe meets the database, which may be unavailable (store/faults.ts).
  const statuses = [400, 408, 429, 431, 500];
  if (url !== '/healthz') statuses.push(503);
  if (authenticated) statuses.push(401, 403);
  if (authenticated || url.includes(':')) statuses.push(404);
  if (WRITES.has(method)) statuses.push(409, 413, 415, 422, 507);
  return Object.fromEntries(
    statuses
      .filter((status) => !(String(status) in declared))
      .map((status) => [status, { description: ERROR_STATUSES[status]!.description, $ref: 'Error#' }]),
  );
}

/** OpenAPI 3.1 generated from the route schemas, at /openapi.json, with a readable page at /docs. */
export const openapi = fp(async (app: FastifyInstance, opts: { version: string }) => {
  app.addSchema(ErrorBody);
  await app.register(swagger, {
    // Shared schemas become components named by their $id (Error), not def-0.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    openapi: {
      tags: OPENAPI_TAGS,
      openapi: '3.1.0',
      info: {
        title: 'Engram',
        version: opts.version,
        description:
          'Memory service for AI applications: store what end users said and did, and get the right memories back.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      // Relative: the document describes the server that serves it, whatever its public address.
      servers: [{ url: '/', description: 'The server serving this document' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        },
      },
    },
    transformObject: (documentObject) =>
      finishDocument((documentObject as { openapiObject: Record<string, unknown> }).openapiObject) as never,
    transform: ({ schema: routeSchema, url, route }) => {
      if (!routeSchema || routeSchema.hide) return { schema: routeSchema, url };
      const schema = withOptionalDefaults(routeSchema);
      const method = [route.method].flat().find((m) => m !== 'HEAD')!;
      const auth = route.config?.auth;
      const declared = (schema.response ?? {}) as Record<string, unknown>;
      const documented = {
        ...schema,
        operationId: schema.operationId ?? operationIdOf(method, route.url),
        response: { ...declared, ...impliedErrorResponses(method, route.url, auth !== undefined, declared) },
      };
      // Every write takes an Idempotency-Key (http/idempotency.ts); a read sent as POST does not record one.
      const idempotencyKey =
        WRITES.has(method) && !changesNothing(auth) ? { 'idempotency-key': IDEMPOTENCY_KEY_HEADER } : {};
      if (!auth) {
        // Public: an explicit empty requirement, so no reader takes it for an operation that forgot its security.
        const headers = { type: 'object', properties: idempotencyKey };
        const open = { ...documented, security: [] };
        return { schema: ('idempotency-key' in idempotencyKey ? { ...open, headers } : open) as never, url };
      }
      // Document the credentials and scoping headers once, from the route's auth declaration.
      const accepts = auth.accepts ?? ['api_key'];
      const headers: Record<string, unknown> = { ...idempotencyKey };
      if (accepts.includes('bearer')) {
        headers['x-organization-id'] = {
          type: 'string',
          description: "Bearer calls: the organization to act in; default the caller's first",
        };
        if (auth.bearerProject)
          headers['x-project-id'] = {
            type: 'string',
            description: 'The project (of the acting organization); required',
          };
      }
      if (accepts.includes('api_key')) {
        const keyProject = `API-key calls: the project; ${(auth.project ?? 'required') === 'required' ? 'required' : 'optional'} unless the key is locked to a project`;
        headers['x-project-id'] = {
          type: 'string',
          description: auth.bearerProject
            ? `Bearer calls: the project (of the acting organization), required. ${keyProject}`
            : keyProject,
        };
        headers['x-tenant-id'] = { type: 'string', description: 'Tenant, for cross-tenant operator keys' };
      }
      const endUser = auth.endUser ?? 'none';
      if (endUser !== 'none') {
        headers['x-end-user-id'] = {
          type: 'string',
          description: `Opaque end-user id (not an e-mail address); ${endUser === 'required' ? 'required' : 'optional, narrows the scope'}`,
        };
      }
      const required = [
        ...(endUser === 'required' ? ['x-end-user-id'] : []),
        ...(auth.bearerProject && !accepts.includes('api_key') ? ['x-project-id'] : []),
      ];
      const requirement = [
        auth.scope && `scope ${auth.scope}`,
        auth.capability && `capability ${auth.capability} (bearer)`,
      ].filter(Boolean);
      const description = [documented.description, requirement.length ? `Requires ${requirement.join(' and ')}.` : '']
        .filter(Boolean)
        .join('\n\n');
      const security = accepts.map((kind) => (kind === 'bearer' ? { bearer: [] } : { apiKey: [] }));
      return {
        schema: {
          ...documented,
          description,
          security,
          headers: { type: 'object', properties: headers, required },
        } as never,
        url,
      };
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
});

/**
 * A query parameter with a default (offset, limit) may be omitted: the validator fills it in, so it
 * is not required on the wire, though handlers always see a value.
 */
function withOptionalDefaults<S extends { querystring?: unknown }>(schema: S): S {
  const query = schema.querystring as
    | { properties?: Record<string, { default?: unknown }>; required?: string[] }
    | undefined;
  if (!query?.required || !query.properties) return schema;
  const required = query.required.filter((name) => query.properties![name]?.default === undefined);
  return { ...schema, querystring: { ...query, required } };
}

/**
 * Error answers a route declares beyond those every operation gets (e.g. 410, 416), each a
 * reference to the one Error component: `response: { 200: Thing, ...declaredErrors(409, 410) }`.
 */
export function declaredErrors(...statuses: number[]): Record<number, { description: string; $ref: string }> {
  return Object.fromEntries(
    statuses.map((status) => [status, { description: ERROR_STATUSES[status]?.description ?? 'Error', $ref: 'Error#' }]),
  );
}
