import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { write } from '../../core/unit-of-work.js';
import { controlContextOf, organizationOf, principalOf } from '../../http/auth.js';
import { AppError, notFound } from '../../core/errors.js';
import { PageOf, PageQuery, paginate } from '../../core/paging.js';
import type { Database } from '../../store/database.js';
import type { RouteAccess } from '../../core/access.js';
import { getApiKey, issueApiKey, listApiKeys, revokeApiKeys, testApiKey } from './api-keys.js';
import { addProject, deleteProject, getProject, listProjects, updateProject } from './projects.js';
import {
  ApiKey,
  ApiKeyTest,
  BulkRevokeBody,
  BulkRevokeResult,
  CreatedApiKey,
  KeyParams,
  NewApiKeyBody,
  NewOrganizationBody,
  NewProjectBody,
  Organization,
  Project,
  ProjectDeleted,
  ProjectParams,
  ProjectPatch,
  ProjectPatchBody,
} from './schemas.js';
import { addMembership, createOrganization, memberships, newOrganizationId } from './service.js';

const bearer = (scope: string, capability?: 'projects.read' | 'projects.manage' | 'keys.read' | 'keys.manage') =>
  ({ auth: { accepts: ['bearer'], scope, ...(capability ? { capability } : {}) } }) as const;

export const orgRoutes: FastifyPluginAsyncTypebox<{ database: Database; routeAccess: () => RouteAccess[] }> = async (
  app,
  { database, routeAccess },
) => {
  // ---- organizations -------------------------------------------------------------------------
  app.post(
    '/organizations',
    {
      config: bearer('organizations:write'),
      schema: {
        tags: ['organizations'],
        summary: 'Create an organization',
        description: 'The caller becomes its owner.',
        body: NewOrganizationBody,
        response: { 201: Organization },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const id = newOrganizationId();
      const created = await write(database, controlContextOf(request, id, null), async (trx, effects) => {
        const org = await createOrganization(trx, request.body.name, id);
        await addMembership(trx, org.id, principal.userId!, 'owner');
        effects.audit('organization.create', { type: 'organization', id: org.id });
        return { id: org.id, name: org.name, role: 'owner', created_at: effects.now, current: false };
      });
      return reply.status(201).send(created);
    },
  );

  app.get(
    '/organizations',
    {
      config: bearer('organizations:read'),
      schema: {
        tags: ['organizations'],
        summary: 'List organizations',
        description:
          'The organizations the caller belongs to, oldest membership first; `current` marks the one this call acts in (X-Organization-ID, else the first).',
        querystring: PageQuery,
        response: { 200: PageOf(Organization) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return paginate(memberships(database.db, principal.userId!), request.query, (m) => ({
        id: m.organizationId,
        name: m.name,
        role: m.role,
        created_at: m.createdAt,
        current: m.organizationId === principal.organizationId,
      }));
    },
  );

  // ---- projects ------------------------------------------------------------------------------
  const projectTags = ['projects'];
  app.get(
    '/org/projects',
    {
      config: bearer('projects:read', 'projects.read'),
      schema: {
        tags: projectTags,
        summary: 'List projects',
        querystring: PageQuery,
        response: { 200: PageOf(Project) },
      },
    },
    async (request) => listProjects(database.db, organizationOf(request).organizationId, request.query),
  );

  app.post(
    '/org/projects',
    {
      config: bearer('projects:write', 'projects.manage'),
      schema: {
        tags: projectTags,
        summary: 'Create a project',
        description:
          'slug defaults to one derived from the name (made unique with a -2, -3… suffix); an explicit slug already in use is 409.',
        body: NewProjectBody,
        response: { 201: Project },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await addProject(database, controlContextOf(request), request.body)),
  );

  app.get(
    '/org/projects/:project_id',
    {
      config: bearer('projects:read', 'projects.read'),
      schema: { tags: projectTags, summary: 'Read a project', params: ProjectParams, response: { 200: Project } },
    },
    async (request) => getProject(database.db, organizationOf(request).organizationId, request.params.project_id),
  );

  app.patch(
    '/org/projects/:project_id',
    {
      config: {
        auth: {
          accepts: ['bearer', 'api_key'],
          scope: 'projects:write',
          capability: 'projects.manage',
          project: 'optional',
        },
      },
      schema: {
        tags: projectTags,
        summary: 'Change a project',
        description:
          'By bearer token or API key. Changes name, slug (unique in the organization) or description; the id never changes. Writes an audit row and emits project.updated when something changed.',
        params: ProjectParams,
        body: ProjectPatchBody,
        response: { 200: ProjectPatch },
      },
    },
    async (request) => {
      const principal = organizationOf(request);
      // A key locked to (or calling with X-Project-ID for) another project cannot see this one.
      if (principal.projectId && principal.projectId !== request.params.project_id) throw notFound('Project');
      const { id, name, slug, description, updated_at } = await updateProject(
        database,
        controlContextOf(request),
        request.params.project_id,
        request.body,
      );
      return { id, name, slug, description, updated_at };
    },
  );

  app.delete(
    '/org/projects/:project_id',
    {
      config: bearer('projects:write', 'projects.manage'),
      schema: {
        tags: projectTags,
        summary: 'Delete a project',
        description: 'Soft-deletes the project and tombstones its memories; both answer 404 from then on.',
        params: ProjectParams,
        response: { 200: ProjectDeleted },
      },
    },
    async (request) => deleteProject(database, controlContextOf(request), request.params.project_id),
  );

  // ---- API keys ------------------------------------------------------------------------------
  const keyTags = ['api-keys'];
  /** A replayed creation (stored answer, or a write recognised after a crash) never hands out the secret of a key no longer active. */
  const secretStillValid = async (organizationId: string, keyId: number | undefined) => {
    if (keyId !== undefined && (await getApiKey(database.db, organizationId, keyId)).status !== 'active') {
      throw new AppError(
        'conflict',
        'The API key this request created has since been revoked or has expired; its secret is not shown again',
      );
    }
  };
  app.post(
    '/org/api-keys',
    {
      config: {
        ...bearer('keys:write', 'keys.manage'),
        replayCheck: async (request, body) => {
          const stored = JSON.parse(body) as { id?: number; key?: string };
          if (stored.key) await secretStillValid(organizationOf(request).organizationId, stored.id);
        },
      },
      schema: {
        tags: keyTags,
        summary: 'Create an API key',
        description:
          'The secret is in `key`, in this response only. scopes default to memories:read and memories:write (the data plane) and cannot exceed the scopes of the calling token; for automation a key may also carry exports:read/write, webhooks:read/write, connectors:read/write, members:read and audit:read, unless it is bound to a tenant or end user (400). Replaying the request (same Idempotency-Key) after the key was revoked or expired is 409: its secret is not shown again.',
        body: NewApiKeyBody,
        response: { 201: CreatedApiKey },
      },
    },
    async (request, reply) => {
      const ctx = controlContextOf(request);
      const created = await issueApiKey(database, ctx, principalOf(request), request.body);
      await secretStillValid(ctx.organizationId, created.id);
      return reply.status(201).send(created);
    },
  );

  app.get(
    '/org/api-keys',
    {
      config: bearer('keys:read', 'keys.read'),
      schema: {
        tags: keyTags,
        summary: 'List API keys',
        description: 'Newest first; never the secrets.',
        querystring: PageQuery,
        response: { 200: PageOf(ApiKey) },
      },
    },
    async (request) => listApiKeys(database.db, organizationOf(request).organizationId, request.query),
  );

  app.get(
    '/org/api-keys/:key_id',
    {
      config: bearer('keys:read', 'keys.read'),
      schema: { tags: keyTags, summary: 'Read an API key', params: KeyParams, response: { 200: ApiKey } },
    },
    async (request) => getApiKey(database.db, organizationOf(request).organizationId, request.params.key_id),
  );

  app.delete(
    '/org/api-keys/:key_id',
    {
      config: bearer('keys:write', 'keys.manage'),
      schema: {
        tags: keyTags,
        summary: 'Revoke an API key',
        description: 'The key stops working at once. Revoking a revoked key changes nothing.',
        params: KeyParams,
        response: { 200: ApiKey },
      },
    },
    async (request) => {
      const organizationId = organizationOf(request).organizationId;
      const [outcome] = await revokeApiKeys(database, controlContextOf(request), [request.params.key_id]);
      if (outcome!.status === 'not_found') throw notFound('API key');
      return getApiKey(database.db, organizationId, request.params.key_id);
    },
  );

  app.post(
    '/org/api-keys/:key_id/test',
    {
      config: bearer('keys:read', 'keys.read'),
      schema: {
        tags: keyTags,
        summary: 'Test an API key',
        description: 'Whether the key works now and which operations its scopes open, without revealing it.',
        params: KeyParams,
        response: { 200: ApiKeyTest },
      },
    },
    async (request) =>
      testApiKey(database.db, organizationOf(request).organizationId, request.params.key_id, routeAccess()),
  );

  app.post(
    '/org/api-keys/bulk-revoke',
    {
      config: bearer('keys:write', 'keys.manage'),
      schema: {
        tags: keyTags,
        summary: 'Revoke several API keys',
        description:
          'One result per id: revoked, already_revoked or not_found (keys of other organizations are not_found).',
        body: BulkRevokeBody,
        response: { 200: BulkRevokeResult },
      },
    },
    async (request) => {
      const results = await revokeApiKeys(database, controlContextOf(request), [...new Set(request.body.ids)]);
      const count = (status: string) => results.filter((r) => r.status === status).length;
      return {
        totals: { revoked: count('revoked'), already_revoked: count('already_revoked'), not_found: count('not_found') },
        results,
      };
    },
  );
};
