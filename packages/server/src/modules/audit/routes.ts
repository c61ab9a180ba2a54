import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { organizationOf } from '../../http/auth.js';
import { PageOf, PageQuery, paginate } from '../../core/paging.js';
import type { Database } from '../../store/database.js';
import { auditEvents } from './service.js';

const AuditEvent = Type.Object({
  id: Type.Integer(),
  actor_id: Type.Union([Type.Integer(), Type.Null()], {
    description: 'User id (actor_type user) or API key id (actor_type api_key)',
  }),
  actor_type: Type.String({ description: 'user, api_key or system' }),
  action: Type.String({ description: 'Dotted name, e.g. memory.add, project.update' }),
  target_type: Type.String(),
  target_id: Type.Union([Type.String(), Type.Null()]),
  result: Type.String({ description: 'success, or what else happened (e.g. skipped)' }),
  request_id: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  project_id: Type.Union([Type.String(), Type.Null()]),
  sealed: Type.Boolean({
    description: 'Whether the row is chained yet; rows are sealed moments after their write commits',
  }),
});

const AuditQuery = Type.Object(
  {
    ...PageQuery.properties,
    actor_id: Type.Optional(Type.Integer({ minimum: 0 })),
    actor_type: Type.Optional(Type.Union([Type.Literal('user'), Type.Literal('api_key'), Type.Literal('system')])),
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    created_after: Type.Optional(Type.String({ format: 'date-time', description: 'RFC 3339; events strictly after' })),
    created_before: Type.Optional(
      Type.String({ format: 'date-time', description: 'RFC 3339; events strictly before' }),
    ),
  },
  { additionalProperties: false },
);

export const auditRoutes: FastifyPluginAsyncTypebox<{ database: Database }> = async (app, { database }) => {
  app.get(
    '/admin/team/audit-logs',
    {
      config: {
        auth: { accepts: ['bearer', 'api_key'], scope: 'audit:read', capability: 'audit.read', project: 'optional' },
      },
      schema: {
        tags: ['audit'],
        summary: 'List audit events',
        description:
          "The organization's append-only, hash-chained audit log, newest first (the newest rows may not be sealed into the chain yet). An API key sees its organization's events, " +
          'narrowed to its project when it is locked to one or sends X-Project-ID; a key bound to a tenant or end user sees only its own actions.',
        querystring: AuditQuery,
        response: { 200: PageOf(AuditEvent) },
      },
    },
    async (request) => {
      const principal = organizationOf(request);
      const { offset, limit, ...filter } = request.query;
      // Rows do not record the tenant or end user they concern, so a key bound to one sees only its own actions.
      const key = principal.key;
      const narrowed = key && (key.tenantId || key.endUserId) ? { onlyApiKeyId: key.id } : {};
      return paginate(auditEvents(database.db, { ...principal, ...narrowed }, filter), { offset, limit }, (row) => ({
        ...row,
        sealed: Boolean(row.sealed),
      }));
    },
  );
};
