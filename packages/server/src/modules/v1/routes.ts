import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { scopeOf, writeContextOf } from '../../http/auth.js';
import { endUserWithin } from '../../core/binding.js';
import { invalid, notFound } from '../../core/errors.js';
import type { Database } from '../../store/database.js';
import { listMemories, memoryCounts, turnsStoredBy, withExpiry, type Owner } from '../memories/index.js';
import type { RetrievalService } from '../retrieval/index.js';
import {
  AddTurnBody,
  AddTurnResult,
  ListQuery,
  ListResult,
  RecallBody,
  RecallResult,
  StatusResult,
} from './schemas.js';
import { addTurn, turnsUsed } from './service.js';
import { monthOf } from '../../core/period.js';

export interface TenantOptions {
  database: Database;
  retrieval: RetrievalService;
  /** The monthly turn allowance per tenant (from the organization's plan). */
  monthlyTurnAllowance: (organizationId: string) => Promise<number>;
}

const tags = ['tenant (/v1)'];
const read = { auth: { scope: 'memories:read', endUser: 'none' } } as const;

/**
 * The tenant a /v1 request acts for: a tenant-bound key's own tenant (another one is 404, in
 * auth), else X-Tenant-ID, which cross-tenant keys must send; a body tenant_id must agree.
 */
function tenantOf(request: FastifyRequest, bodyTenant: string | undefined, required = true): string | null {
  const scope = scopeOf(request);
  if (!scope.tenantId) {
    if (required) throw invalid('X-Tenant-ID', 'Cross-tenant keys must send X-Tenant-ID');
    if (bodyTenant !== undefined) throw invalid('X-Tenant-ID', 'Cross-tenant keys must send X-Tenant-ID');
    return null;
  }
  if (bodyTenant !== undefined && bodyTenant !== scope.tenantId) {
    // Another tenant is outside a tenant-bound key's reach (404, as for X-Tenant-ID); only a
    // cross-tenant key's header can be contradicted.
    if (scope.key.tenantId) throw notFound('Tenant');
    throw invalid('tenant_id', 'tenant_id disagrees with X-Tenant-ID');
  }
  return scope.tenantId;
}

function ownerFor(request: FastifyRequest, body: { tenant_id: string; user_id: string }): Owner {
  const tenantId = tenantOf(request, body.tenant_id)!;
  const scope = scopeOf(request);
  return { projectId: scope.projectId, tenantId, endUserId: endUserWithin(scope.key, body.user_id, 'user_id')! };
}

export const v1Routes: FastifyPluginAsyncTypebox<TenantOptions> = async (
  app,
  { database, retrieval, monthlyTurnAllowance },
) => {
  app.post(
    '/v1/memory/add_turn',
    {
      // On PostgreSQL the turn's statement checks the credentials clock itself (modules/v1/service.ts#addTurn).
      config: { auth: { scope: 'memories:write', endUser: 'none', checksClock: true } },
      schema: {
        tags,
        summary: 'Store a conversation turn',
        description:
          "Stores the turn verbatim, in order. The same words said at another time are another turn. The same turn delivered again (same session, speaker, text and metadata.timestamp; without a timestamp, within 60 seconds of its arrival; with a content-hash speaker, sha256:<hex>, at any time) converges on the stored row and answers with its id. 429 quota_exceeded once the tenant's monthly turns are used up.",
        body: AddTurnBody,
        response: { 201: AddTurnResult, 200: AddTurnResult },
      },
    },
    async (request, reply) => {
      const owner = ownerFor(request, request.body);
      const { session_id: sessionId, timestamp, ...rest } = request.body.metadata ?? {};
      const { expires_at: expiresAt } = withExpiry(request.body);
      const { memory, created } = await addTurn(
        database,
        writeContextOf(request),
        owner,
        {
          text: request.body.text,
          speaker: request.body.speaker,
          source: request.body.source ?? 'conversation',
          sessionId: sessionId ?? null,
          metadata: rest,
          ...(timestamp ? { occurredAt: new Date(timestamp).toISOString() } : {}),
          ...(expiresAt ? { expiresAt } : {}),
        },
        await monthlyTurnAllowance(scopeOf(request).organizationId),
      );
      return reply.status(created ? 201 : 200).send({
        id: memory.id,
        status: created ? 'created' : 'duplicate',
        tenant_id: owner.tenantId,
        user_id: owner.endUserId,
        session_id: memory.session_id,
        created_at: memory.created_at,
      });
    },
  );

  app.post(
    '/v1/memory/recall',
    {
      config: read,
      schema: {
        tags,
        summary: 'Recall context',
        description:
          'The turns and memories of the user most relevant to the query, best first, as whole memory records (metadata, tags, source, importance) with the relevance score every retrieval operation uses, and a context string of them in conversation order. min_score: the relevance cutoff of /memory/query.',
        body: RecallBody,
        response: { 200: RecallResult },
      },
    },
    async (request) => {
      const owner = ownerFor(request, request.body);
      const found = await retrieval.query(owner, {
        query: request.body.query,
        k: request.body.k ?? 10,
        ...(request.body.session_id ? { session_id: request.body.session_id } : {}),
        ...(request.body.min_score !== undefined ? { min_score: request.body.min_score } : {}),
      });
      const memories = found.map((m) => ({ ...m, speaker: m.speaker ?? null, tenant_id: owner.tenantId }));
      const context = [...memories]
        .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id - b.id)
        .map((m) => `[${m.created_at.slice(0, 10)}]${m.speaker ? ` ${m.speaker}:` : ''} ${m.text}`)
        .join('\n');
      return { memories, context };
    },
  );

  app.get(
    '/v1/memory/status',
    {
      config: read,
      schema: { tags, summary: 'Health and counts', response: { 200: StatusResult } },
    },
    async (request) => {
      const { projectId, organizationId, key } = scopeOf(request);
      const tenantId = tenantOf(request, undefined, false);
      const period = monthOf(new Date());
      const [counts, used, ownTurns] = await Promise.all([
        // A key bound to an end user counts only that end user's memories and turns; the quota is the tenant's.
        memoryCounts(database.db, { projectId, tenantId, endUserId: key.endUserId }),
        turnsUsed(database.db, projectId, tenantId, period),
        key.endUserId === null
          ? null
          : turnsStoredBy(database.db, { projectId, tenantId, endUserId: key.endUserId }, period.start, period.end),
      ]);
      const allowance = await monthlyTurnAllowance(organizationId);
      return {
        status: 'ok',
        database: 'ok',
        tenant_id: tenantId,
        counts: { ...counts, turns_this_period: ownTurns ?? used },
        quota: tenantId
          ? {
              monthly_turns: allowance,
              used,
              remaining: Math.max(0, allowance - used),
              period_start: period.start.toISOString(),
              period_end: period.end.toISOString(),
            }
          : null,
      };
    },
  );

  app.get(
    '/v1/memory/memories',
    {
      config: read,
      schema: {
        tags,
        summary: 'List stored memories',
        description:
          'Memories of a tenant (those stored outside /v1 belong to none), newest first, as whole memory records (the Memory fields) plus speaker, tenant_id and user_id.',
        querystring: ListQuery,
        response: { 200: ListResult },
      },
    },
    async (request) => {
      const { offset, limit, session_id: sessionId } = request.query;
      const scope = scopeOf(request);
      const tenantId = tenantOf(request, request.query.tenant_id, false);
      const endUserId = endUserWithin(scope.key, request.query.user_id, 'user_id');
      const page = await listMemories(
        database.db,
        { projectId: scope.projectId, tenantId, endUserId, sessionId: sessionId ?? null },
        { offset, limit },
      );
      return {
        items: page.items.map((m) => ({ ...m, user_id: m.end_user_id })),
        total: page.total,
        offset,
        limit,
        has_next: offset + page.items.length < page.total,
      };
    },
  );
};
