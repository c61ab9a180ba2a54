import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Database } from '../store/database.js';
import { resolveApiKey, touchApiKey, type ApiKeyRecord } from '../modules/org/service.js';
import { hasScope } from '../modules/org/scopes.js';
import { AppError, forbidden, invalid, notFound, unauthenticated } from './errors.js';

/** Who performed an action, as recorded in history and audit rows. */
export interface Actor {
  type: 'api_key' | 'user' | 'system';
  id: number | null;
}

/**
 * The resolved scope of a data-plane request. Handlers build every query from this and never
 * read organization, project, tenant or end user from the body.
 */
export interface DataScope {
  actor: Actor;
  organizationId: string;
  projectId: string;
  /** '' outside the /v1 tenant plane. */
  tenantId: string;
  /** Set when the route is end-user scoped (X-End-User-ID or the key's binding). */
  endUserId: string | null;
  key: ApiKeyRecord;
}

export interface RouteAuth {
  /** The scope the credential must carry. */
  scope: string;
  /** required: X-End-User-ID (or a key bound to an end user) must name one; optional: narrows when sent. */
  endUser: 'required' | 'optional' | 'none';
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    scope: DataScope | null;
  }
}

const END_USER_ID = /^[^\x00-\x1f\x7f]{1,256}$/;
const LOOKS_LIKE_EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  if (Array.isArray(value)) throw invalid(name, `${name} must be sent once`);
  return value === undefined ? undefined : value.trim();
}

export function validateEndUserId(value: string, field: string): string {
  if (!END_USER_ID.test(value)) throw invalid(field, `${field} must be 1 to 256 characters without control characters`);
  if (LOOKS_LIKE_EMAIL.test(value)) {
    throw invalid(field, `${field} must be an opaque stable id, not an e-mail address`);
  }
  return value;
}

async function resolveScope(database: Database, request: FastifyRequest, auth: RouteAuth): Promise<DataScope> {
  const presented = header(request, 'x-api-key');
  if (request.headers.authorization !== undefined && presented !== undefined) {
    throw invalid('Authorization', 'Send exactly one credential: X-API-Key or Authorization, not both');
  }
  if (!presented) throw unauthenticated('An API key is required in the X-API-Key header');
  const requestedProject = header(request, 'x-project-id') || undefined;
  const key = await resolveApiKey(database.db, presented, requestedProject);
  if (!key) throw unauthenticated('The API key is invalid, expired or revoked');
  if (!hasScope(key.scopes, auth.scope)) throw forbidden(`The API key lacks the ${auth.scope} scope`);

  const projectId = requestedProject ?? key.projectId;
  if (!projectId) throw invalid('X-Project-ID', 'X-Project-ID is required for keys not locked to a project');
  if (key.projectId && projectId !== key.projectId) throw notFound('Project');
  if (key.liveProjectId !== projectId) throw notFound('Project');

  const requestedTenant = header(request, 'x-tenant-id');
  if (key.tenantId && requestedTenant && requestedTenant !== key.tenantId) throw notFound('Tenant');
  const tenantId = key.tenantId ?? requestedTenant ?? '';

  let endUserId: string | null = null;
  if (auth.endUser !== 'none') {
    const requested = header(request, 'x-end-user-id');
    if (requested !== undefined) validateEndUserId(requested, 'X-End-User-ID');
    if (key.endUserId && requested !== undefined && requested !== key.endUserId) throw notFound('End user');
    endUserId = key.endUserId ?? requested ?? null;
    if (auth.endUser === 'required' && !endUserId) {
      throw invalid('X-End-User-ID', 'X-End-User-ID is required for this operation');
    }
  }

  await touchApiKey(database.db, key);
  return {
    actor: { type: 'api_key', id: key.id },
    organizationId: key.organizationId,
    projectId,
    tenantId,
    endUserId,
    key,
  };
}

/** Resolves credentials to a DataScope before the body is even parsed, for every route that declares `config.auth`. */
export const authentication = fp(async (app: FastifyInstance, opts: { database: Database }) => {
  app.decorateRequest('scope', null);
  app.addHook('onRequest', async (request) => {
    const auth = request.routeOptions.config.auth;
    if (!auth) return;
    request.scope = await resolveScope(opts.database, request, auth);
  });
});

/** The scope of an authenticated route; its absence is a wiring bug, not a client error. */
export function scopeOf(request: FastifyRequest): DataScope {
  if (!request.scope) throw new AppError('internal_error', 'Route is missing its auth declaration');
  return request.scope;
}

export function endUserOf(request: FastifyRequest): string {
  const scope = scopeOf(request);
  if (!scope.endUserId) throw invalid('X-End-User-ID', 'X-End-User-ID is required for this operation');
  return scope.endUserId;
}

/** The WriteContext of an authenticated data-plane request. */
export function writeContextOf(request: FastifyRequest) {
  const scope = scopeOf(request);
  return { actor: scope.actor, organizationId: scope.organizationId, projectId: scope.projectId, requestId: request.id };
}

/** The end user whose memories an end-user-scoped route acts on. */
export function ownerOf(request: FastifyRequest) {
  const scope = scopeOf(request);
  return { projectId: scope.projectId, tenantId: scope.tenantId, endUserId: endUserOf(request) };
}
