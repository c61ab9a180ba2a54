import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { principalOf, type RouteAuth } from '../../http/auth.js';
import { PageOf, PageQuery } from '../../core/paging.js';
import { CAPABILITIES, ROLES, SCOPES, type RouteAccess } from '../../core/access.js';
import * as auth from './service.js';

const tags = ['auth'];

const TokenPair = Type.Object({
  access_token: Type.String({ description: 'JWT (HS256); send as Authorization: Bearer <access_token>' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Seconds the access token is valid' }),
  refresh_token: Type.String({ description: 'Single use: trade it at POST /auth/refresh before refresh_expires_at' }),
  refresh_expires_at: Type.String({
    format: 'date-time',
    description: 'When the session ends; refreshing does not extend it',
  }),
  session_id: Type.Integer(),
});

const Session = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  expires_at: Type.String({ format: 'date-time' }),
  ip: Type.Union([Type.String(), Type.Null()]),
  user_agent: Type.Union([Type.String(), Type.Null()]),
  scopes: Type.Array(Type.String()),
  current: Type.Boolean({ description: 'The session of the token making this request' }),
});

const Revoked = Type.Object({ id: Type.Integer(), revoked_at: Type.String({ format: 'date-time' }) });

const client = (request: FastifyRequest): auth.Client => ({
  ip: request.ip,
  userAgent: typeof request.headers['user-agent'] === 'string' ? request.headers['user-agent'] : null,
  requestId: request.id,
});

export const authRoutes: FastifyPluginAsyncTypebox<
  auth.AuthDeps & { loginRateLimit: number; routeAccess: () => RouteAccess[] }
> = async (app, { loginRateLimit, routeAccess, ...deps }) => {
  app.post(
    '/auth/login',
    {
      config: { rateLimit: { max: loginRateLimit } },
      schema: {
        tags,
        summary: 'Sign in',
        description:
          'Exchanges e-mail and password for an access token and a refresh token. Wrong e-mail and wrong password answer alike (401). ' +
          'Failed attempts are throttled per account and per IP (429 with Retry-After). `scopes` narrows what the tokens may do (default: every scope).',
        body: Type.Object(
          {
            email: Type.String({ minLength: 3, maxLength: 320 }),
            password: Type.String({ minLength: 1, maxLength: 1024 }),
            scopes: Type.Optional(Type.Array(Type.String(), { minItems: 1, maxItems: 64, uniqueItems: true })),
          },
          { additionalProperties: false },
        ),
        response: { 200: TokenPair },
      },
    },
    async (request) => auth.login(deps, request.body, client(request)),
  );

  app.post(
    '/auth/refresh',
    {
      config: { rateLimit: { max: loginRateLimit } },
      schema: {
        tags,
        summary: 'Refresh the tokens',
        description:
          'Spends the refresh token and returns a new pair. Presenting a spent refresh token again revokes the whole session.',
        body: Type.Object(
          { refresh_token: Type.String({ minLength: 1, maxLength: 256 }) },
          { additionalProperties: false },
        ),
        response: { 200: TokenPair },
      },
    },
    async (request) => auth.refresh(deps, request.body.refresh_token, client(request)),
  );

  app.post(
    '/auth/logout',
    {
      config: { auth: { accepts: ['bearer'] } },
      schema: {
        tags,
        summary: 'Sign out',
        description: 'Ends the session of the presented token.',
        response: { 200: Revoked },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return auth.revokeSession(deps, principal, principal.sessionId!, request.id, 'logout');
    },
  );

  app.get(
    '/auth/sessions',
    {
      config: { auth: { accepts: ['bearer'], scope: 'sessions:read' } },
      schema: {
        tags,
        summary: 'List active sessions',
        description:
          "The caller's live sessions; with the sessions.manage capability, those of every member of the organization.",
        querystring: PageQuery,
        response: { 200: PageOf(Session) },
      },
    },
    async (request) => auth.listSessions(deps.database.db, principalOf(request), request.query),
  );

  app.post(
    '/auth/sessions/:session_id/revoke',
    {
      config: { auth: { accepts: ['bearer'], scope: 'sessions:write' } },
      schema: {
        tags,
        summary: 'Revoke a session',
        description:
          "Ends one of the caller's sessions (or, with sessions.manage, a member's). Its tokens stop working at once.",
        params: Type.Object({ session_id: Type.Integer({ minimum: 1 }) }),
        response: { 200: Revoked },
      },
    },
    async (request) => auth.revokeSession(deps, principalOf(request), request.params.session_id, request.id),
  );

  app.get(
    '/auth/catalogue',
    {
      schema: {
        tags,
        summary: 'Scopes, capabilities and roles',
        description:
          'What credentials can carry (scopes), what roles grant (capabilities), and what each operation requires. Public.',
        response: {
          200: Type.Object({
            scopes: Type.Array(Type.Object({ name: Type.String(), description: Type.String() })),
            capabilities: Type.Array(Type.Object({ name: Type.String(), description: Type.String() })),
            roles: Type.Array(Type.Object({ name: Type.String(), capabilities: Type.Array(Type.String()) })),
            operations: Type.Array(
              Type.Object({
                method: Type.String(),
                path: Type.String(),
                accepts: Type.Array(Type.String()),
                scope: Type.Union([Type.String(), Type.Null()]),
                capability: Type.Union([Type.String(), Type.Null()]),
              }),
            ),
          }),
        },
      },
    },
    async () => ({
      scopes: Object.entries(SCOPES).map(([name, description]) => ({ name, description })),
      capabilities: Object.entries(CAPABILITIES).map(([name, description]) => ({ name, description })),
      roles: Object.entries(ROLES).map(([name, capabilities]) => ({ name, capabilities: [...capabilities] })),
      operations: routeAccess(),
    }),
  );
};

/** Collects every route's auth declaration as it is added, for the catalogue. */
export function recordRouteAccess(
  list: RouteAccess[],
  method: string | string[],
  path: string,
  declared: RouteAuth | undefined,
) {
  if (!declared) return;
  for (const m of [method].flat()) {
    if (m === 'HEAD') continue;
    list.push({
      method: m,
      path,
      accepts: [...(declared.accepts ?? ['api_key'])],
      scope: declared.scope ?? null,
      capability: declared.capability ?? null,
    });
  }
}
