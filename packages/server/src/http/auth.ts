import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Executor } from '../store/database.js';
import { CredentialsMoved } from '../core/credentials-clock.js';
import { hasScope, keyScopes, roleGrants, type Capability, type Role } from '../core/access.js';
import type { ApiKeyRecord, CredentialKind, Credentials, DataScope, Principal, WriteContext } from '../core/context.js';
import { endUserWithin } from '../core/binding.js';
import { AppError, forbidden, invalid, notFound, unauthenticated } from '../core/errors.js';
import { singleHeader } from './headers.js';

/**
 * What a route requires, declared in its `config.auth`. One declaration serves both credential
 * families: an API key must carry `scope`; a bearer token's session must carry `scope` and the
 * caller's role in the acting organization must grant `capability`.
 */
export interface RouteAuth {
  /** The scope the credential must carry; absent: any valid credential. */
  scope?: string;
  /** Credential families the route accepts; default: API key only (the data plane). */
  accepts?: readonly CredentialKind[];
  /** Bearer tokens: the capability the caller's role must grant (implies an acting organization). */
  capability?: Capability;
  /**
   * API keys: `required` (default) resolves a live project from the key's lock or X-Project-ID and
   * sets request.scope; `optional` resolves one only when the key is locked or the header is sent.
   */
  project?: 'required' | 'optional';
  /**
   * Bearer tokens: `required` makes X-Project-ID name a live project of the acting organization
   * (404 otherwise), which becomes principal.projectId (project-scoped control-plane areas: connectors).
   */
  bearerProject?: 'required';
  /** required: X-End-User-ID (or a key bound to an end user) must name one; optional: narrows when sent. */
  endUser?: 'required' | 'optional' | 'none';
  /**
   * API keys on PostgreSQL: the route's statements check the credentials clock (WriteContext.heldAt,
   * core/credentials-clock.ts), so a key this process holds is used without waiting for the
   * listening connection to catch up; should the clock have moved, the handler throws
   * CredentialsMoved and is run again once the key is looked up afresh. For hot routes only: a
   * revoked key is then refused after the body was parsed and validated, in the moment before this
   * process hears of the revocation. Not for a request with an Idempotency-Key (its claim is a write), unless the
   * route changes nothing (`changesNothing`: the key is not recorded).
   */
  checksClock?: boolean;
}

/**
 * A route a read-scoped credential may call changes nothing (the reads sent as POST: query, retrieve, search,
 * compose, synthesize, recall, a key's test): an Idempotency-Key on it is accepted and not recorded
 * (http/idempotency.ts), since running it again changes nothing either.
 */
export const changesNothing = (auth: RouteAuth | undefined): boolean => auth?.scope?.endsWith(':read') === true;

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    scope: DataScope | null;
    principal: Principal | null;
    /** Authenticated once this process had heard every change committed before the request arrived (WriteContext.caughtUp). */
    caughtUp: boolean;
    /** Authenticated by a key held in memory, read at this credentials clock, for the route's statements to check (WriteContext.heldAt). */
    heldAt: number | undefined;
    /** A person on a route that needs a capability: their role checked again inside the write (WriteContext.verifyActor). */
    verifyActor: ((trx: Executor) => Promise<Role>) | undefined;
  }
}

async function resolveApiKeyPrincipal(
  credentials: Credentials,
  request: FastifyRequest,
  auth: RouteAuth,
  presented: string,
  checksClock: boolean,
) {
  const requestedProject = singleHeader(request, 'x-project-id') || undefined;
  // The key and the project it names (or is locked to), resolved together (modules/org/resolved-keys.ts).
  const resolved = await credentials.resolveKey(presented, requestedProject, checksClock);
  if (!resolved) throw unauthenticated('The API key is invalid, expired or revoked');
  const { key, caughtUp, heldAt } = resolved;
  if (auth.scope && !hasScope(keyScopes(key), auth.scope)) {
    throw forbidden(
      `The API key lacks the ${auth.scope} scope${hasScope(key.scopes, auth.scope) ? ' (a key bound to a tenant or end user cannot use it)' : ''}`,
    );
  }

  const projectMode = auth.project ?? 'required';
  const projectId = requestedProject ?? key.projectId;
  if (key.projectId && projectId !== key.projectId) throw notFound('Project');
  let project: { id: string } | undefined;
  if (projectId) {
    if (key.liveProjectId !== projectId) throw notFound('Project');
    project = { id: projectId };
  } else if (projectMode === 'required') {
    throw invalid('X-Project-ID', 'X-Project-ID is required for keys not locked to a project');
  }
  const principal: Principal = {
    kind: 'api_key',
    actor: { type: 'api_key', id: key.id },
    organizationId: key.organizationId,
    role: null,
    scopes: key.scopes,
    projectId: project?.id ?? null,
    userId: null,
    sessionId: null,
    key,
  };
  const scope = project && projectMode === 'required' ? dataScope(request, auth, key, project.id) : null;
  await credentials.touchKey(key);
  return { principal, scope, caughtUp, heldAt };
}

function dataScope(request: FastifyRequest, auth: RouteAuth, key: ApiKeyRecord, projectId: string): DataScope {
  const requestedTenant = singleHeader(request, 'x-tenant-id');
  if (key.tenantId && requestedTenant && requestedTenant !== key.tenantId) throw notFound('Tenant');
  const tenantId = key.tenantId ?? requestedTenant ?? '';

  let endUserId: string | null = null;
  const endUser = auth.endUser ?? 'none';
  if (endUser !== 'none') {
    endUserId = endUserWithin(key, singleHeader(request, 'x-end-user-id'), 'X-End-User-ID');
    if (endUser === 'required' && !endUserId) {
      throw invalid('X-End-User-ID', 'X-End-User-ID is required for this operation');
    }
  }

  return {
    actor: { type: 'api_key', id: key.id },
    organizationId: key.organizationId,
    projectId,
    tenantId,
    endUserId,
    key,
  };
}

const BEARER = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i;
const ORGANIZATION_ID = /^org_[0-9a-z]{1,64}$/;

async function resolveBearerPrincipal(
  credentials: Credentials,
  request: FastifyRequest,
  auth: RouteAuth,
  authorization: string,
): Promise<Principal> {
  const token = BEARER.exec(authorization)?.[1];
  const session = token === undefined ? undefined : await credentials.session(token);
  if (!session)
    throw unauthenticated('The bearer token is invalid or expired, or its session has ended; sign in again');

  const requestedOrganization = singleHeader(request, 'x-organization-id');
  if (requestedOrganization !== undefined && !ORGANIZATION_ID.test(requestedOrganization)) {
    throw invalid('X-Organization-ID', 'X-Organization-ID must be an organization id (org_…)');
  }
  const membership = await credentials.membership(session.userId, requestedOrganization);
  if (requestedOrganization !== undefined && !membership) throw notFound('Organization');
  const role = membership?.role as Role | undefined;
  requireCapability(role, auth.capability);
  if (auth.scope && !hasScope(session.scopes, auth.scope)) throw forbidden(`The token lacks the ${auth.scope} scope`);
  let projectId: string | null = null;
  if (auth.bearerProject) {
    const requested = singleHeader(request, 'x-project-id');
    if (!requested) throw invalid('X-Project-ID', 'X-Project-ID is required for this operation');
    const project = membership ? await credentials.findProject(membership.organizationId, requested) : undefined;
    if (!project) throw notFound('Project');
    projectId = project.id;
  }
  await credentials.touchSession(session);
  return {
    kind: 'bearer',
    actor: { type: 'user', id: session.userId },
    organizationId: membership?.organizationId ?? null,
    role: role ?? null,
    scopes: session.scopes,
    projectId,
    userId: session.userId,
    sessionId: session.id,
    key: null,
  };
}

/** A bearer caller's role in the acting organization (undefined: none) must grant the route's capability. */
function requireCapability(role: Role | undefined, capability: Capability | undefined): void {
  if (!capability) return;
  if (!role) throw forbidden('This operation needs a membership in an organization');
  if (!roleGrants(role, capability)) throw forbidden(`Your role (${role}) lacks the ${capability} capability`);
}

/**
 * Resolves credentials before the body is even parsed, for every route that declares `config.auth`:
 * exactly one credential family per request, and only one the route accepts.
 */
export const authentication = fp(async (app: FastifyInstance, { credentials }: { credentials: Credentials }) => {
  app.decorateRequest('scope', null);
  app.decorateRequest('principal', null);
  app.decorateRequest('caughtUp', false);
  app.decorateRequest('heldAt', undefined);
  app.decorateRequest('verifyActor', undefined);
  const byApiKey = async (request: FastifyRequest, auth: RouteAuth, apiKey: string, checksClock: boolean) => {
    const resolved = await resolveApiKeyPrincipal(credentials, request, auth, apiKey, checksClock);
    request.principal = resolved.principal;
    request.scope = resolved.scope;
    request.caughtUp = resolved.caughtUp;
    request.heldAt = resolved.heldAt;
  };
  // A route that checks the clock runs again, with its key looked up afresh, if its statements found the clock moved.
  app.addHook('onRoute', (route) => {
    const auth = route.config?.auth;
    if (!auth?.checksClock) return;
    const handler = route.handler;
    route.handler = async function (this: unknown, request: FastifyRequest, reply: FastifyReply) {
      try {
        return await handler.call(this as FastifyInstance, request, reply);
      } catch (error) {
        if (!(error instanceof CredentialsMoved) || request.heldAt === undefined) throw error;
        const apiKey = singleHeader(request, 'x-api-key')!;
        credentials.forgetKey(apiKey, singleHeader(request, 'x-project-id') || undefined);
        request.principal = null;
        request.scope = null;
        await byApiKey(request, auth, apiKey, false);
        return handler.call(this as FastifyInstance, request, reply);
      }
    };
  });
  // preParsing: after the per-route rate limit (onRequest), before the body is read.
  app.addHook('preParsing', async (request, _reply, payload) => {
    const auth = request.routeOptions.config.auth;
    if (!auth) return payload;
    const accepts = auth.accepts ?? ['api_key'];
    const apiKey = singleHeader(request, 'x-api-key');
    const authorization = singleHeader(request, 'authorization');
    if (authorization !== undefined && apiKey !== undefined) {
      throw invalid('Authorization', 'Send exactly one credential: X-API-Key or Authorization, not both');
    }
    if (apiKey && accepts.includes('api_key')) {
      // A request whose Idempotency-Key is recorded writes its claim before any statement of the route could check the clock.
      await byApiKey(
        request,
        auth,
        apiKey,
        auth.checksClock === true && (request.headers['idempotency-key'] === undefined || changesNothing(auth)),
      );
    } else if (authorization && accepts.includes('bearer')) {
      request.principal = await resolveBearerPrincipal(credentials, request, auth, authorization);
      request.verifyActor = verifyActorOf(credentials, request.principal, auth.capability);
    } else {
      throw unauthenticated(
        accepts.length === 2
          ? 'A bearer token (Authorization) or an API key (X-API-Key) is required'
          : accepts[0] === 'bearer'
            ? 'A bearer token is required in the Authorization header'
            : 'An API key is required in the X-API-Key header',
      );
    }
    return payload;
  });
});

/** The principal of an authenticated route; its absence is a wiring bug, not a client error. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError('internal_error', 'Route is missing its auth declaration');
  return request.principal;
}

/** The principal and acting organization of a control-plane route. */
export function organizationOf(request: FastifyRequest): Principal & { organizationId: string } {
  const principal = principalOf(request);
  if (!principal.organizationId) throw forbidden('This operation needs a membership in an organization');
  return principal as Principal & { organizationId: string };
}

/** The WriteContext of a control-plane request, acting in `organizationId` (default: the principal's). */
export function controlContextOf(
  request: FastifyRequest,
  organizationId?: string,
  projectId?: string | null,
): WriteContext {
  const principal = principalOf(request);
  return {
    actor: principal.actor,
    organizationId: organizationId ?? organizationOf(request).organizationId,
    projectId: projectId ?? principal.projectId,
    requestId: request.id,
    ...requestOwn(request),
  };
}

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
export function writeContextOf(request: FastifyRequest): WriteContext {
  const scope = scopeOf(request);
  return {
    actor: scope.actor,
    organizationId: scope.organizationId,
    projectId: scope.projectId,
    requestId: request.id,
    ...requestOwn(request),
  };
}

/**
 * What a request's writes know of it: an idempotent request's writes record themselves
 * (http/idempotency.ts), so a retry recognises them; and whether it was authenticated caught up.
 */
const requestOwn = (request: FastifyRequest) => ({
  caughtUp: request.caughtUp,
  ...(request.verifyActor ? { verifyActor: request.verifyActor } : {}),
  ...(request.heldAt !== undefined ? { heldAt: request.heldAt } : {}),
  ...(request.idempotencyClaim ? { journal: request.idempotencyClaim.journal } : {}),
});

/**
 * WriteContext.verifyActor of a person on a route that needs a capability (only those depend on the role): their role
 * in the acting organization now, refused as authorization would refuse it now. A plain read sees a change committed
 * before it; a write that must also wait for one under way locks the row first (people/service.ts#actingRole).
 */
function verifyActorOf(
  credentials: Credentials,
  principal: Principal,
  capability: Capability | undefined,
): ((trx: Executor) => Promise<Role>) | undefined {
  if (principal.kind !== 'bearer' || !principal.organizationId || !capability) return undefined;
  const { userId, organizationId } = principal as { userId: number; organizationId: string };
  return async (trx) => {
    const role = (await credentials.membership(userId, organizationId, trx))?.role as Role | undefined;
    // No longer a member: as for X-Organization-ID naming an organization one is not in.
    if (!role) throw notFound('Organization');
    requireCapability(role, capability);
    return role;
  };
}

/** The end user whose memories an end-user-scoped route acts on. */
export function ownerOf(request: FastifyRequest) {
  const scope = scopeOf(request);
  return { projectId: scope.projectId, tenantId: scope.tenantId, endUserId: endUserOf(request) };
}
