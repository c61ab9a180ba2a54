import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ownerOf, scopeOf, writeContextOf } from '../../http/auth.js';
import { endUserWithin } from '../../core/binding.js';
import { bodyAjv } from '../../core/validation.js';
import { invalid } from '../../core/errors.js';
import { checkJsonInput } from '../../http/input.js';
import type { FiltersInput } from './filters.js';
import { nowIso, type Database } from '../../store/database.js';
import {
  AddMemoryBody,
  BatchUpdateBody,
  BatchUpdateResult,
  BulkAddBody,
  BulkAddResult,
  ForgetBody,
  HistoryResult,
  LIMITS,
  ForgetScopeResult,
  ListMemoriesQuery,
  ListMemoriesResult,
  Memory,
  MemoryId,
  MemoryPatch,
  Skipped,
} from './schemas.js';
import * as memories from './index.js';
import type { EraseHooks } from './index.js';

const read = { auth: { scope: 'memories:read', endUser: 'required' } } as const;
const writeUser = { auth: { scope: 'memories:write', endUser: 'required' } } as const;
const IdParams = Type.Object({ memory_id: MemoryId });
const tags = ['memories'];

/** The filters object sent as JSON text in a query string: the input rule and the schema of a body's, 400 naming `filters/...`. */
function filtersParam(text: string): FiltersInput {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid('filters', 'filters must be a JSON object (URL-encoded)');
  }
  const refused = checkJsonInput(value);
  if (refused)
    throw Object.assign(refused, { field: refused.field === 'body' ? 'filters' : `filters/${refused.field}` });
  return memories.filtersFrom(value, 'filters');
}

export const memoryRoutes: FastifyPluginAsyncTypebox<{ database: Database; erase: EraseHooks }> = async (
  app,
  { database, erase },
) => {
  app.post(
    '/memory/add',
    {
      config: { auth: { ...writeUser.auth, checksClock: true } },
      schema: {
        tags,
        summary: 'Add a memory',
        description:
          'Creates a memory for the end user, or skips it when the end user already has a live memory with the same client_ref or the same normalised text.',
        body: AddMemoryBody,
        response: { 201: Memory, 200: Skipped },
      },
    },
    async (request, reply) => {
      const outcome = await memories.addMemory(database, writeContextOf(request), ownerOf(request), request.body);
      if ('created' in outcome) return reply.status(201).send(outcome.created);
      return reply.status(200).send({ status: 'skipped' as const, ...outcome.skipped });
    },
  );

  // The list is checked here only for its shape; each item is validated on its own so that one
  // bad item is reported as failed instead of failing the whole batch.
  const bulkShape = bodyAjv.compile(Type.Array(Type.Unknown(), { minItems: 1, maxItems: LIMITS.bulkItems }));
  app.post(
    '/memory/bulk-add',
    {
      config: writeUser,
      schema: {
        tags,
        summary: 'Add many memories',
        description: `A JSON array of at most ${LIMITS.bulkItems} items (or {"items": [...]}), stored in one transaction. 200 when every item was created, 207 when any was skipped or failed.`,
        body: BulkAddBody,
        response: { 200: BulkAddResult, 207: BulkAddResult },
      },
      preValidation: async (request) => {
        const body = request.body as { items?: unknown } | null;
        if (
          body &&
          !Array.isArray(body) &&
          typeof body === 'object' &&
          Object.keys(body).length === 1 &&
          'items' in body
        ) {
          request.body = body.items as never;
        }
      },
      validatorCompiler: () => (data: unknown) =>
        bulkShape(data)
          ? { value: data }
          : { error: Object.assign(new Error('invalid'), { validation: bulkShape.errors, validationContext: 'body' }) },
    },
    async (request, reply) => {
      const result = await memories.bulkAdd(
        database,
        writeContextOf(request),
        ownerOf(request),
        request.body as unknown[],
      );
      return reply.status(result.totals.created === result.results.length ? 200 : 207).send(result);
    },
  );

  app.get(
    '/memory',
    {
      config: read,
      schema: {
        tags,
        summary: 'List memories',
        description:
          "The end user's live memories a page at a time, newest first by default (order_by created_at or updated_at, order desc or asc), narrowed by the filters of POST /memory/query (as JSON) and session_id. next_cursor continues the list; total=true counts every match.",
        querystring: ListMemoriesQuery,
        response: { 200: ListMemoriesResult },
      },
    },
    async (request) => {
      const { filters, session_id: sessionId, order_by: orderBy, order, limit, cursor, total } = request.query;
      return memories.listPage(database, ownerOf(request), {
        ...(filters !== undefined ? { filters: filtersParam(filters) } : {}),
        ...(sessionId !== undefined ? { sessionId } : {}),
        ...(cursor !== undefined ? { cursor } : {}),
        orderBy,
        direction: order,
        limit,
        total,
      });
    },
  );

  app.get(
    '/memory/export',
    {
      config: { auth: { scope: 'memories:read', endUser: 'optional' } },
      schema: {
        tags,
        summary: 'Export memories',
        description:
          "Every live memory in the caller's principal scope: the key's project, narrowed by the key's tenant or end-user binding, or by X-End-User-ID when sent. Streamed.",
        response: {
          200: Type.Object({
            principal: Type.Object({}, { additionalProperties: true }),
            generated_at: Type.String({ format: 'date-time' }),
            memories: Type.Array(Memory),
          }),
        },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const principal = {
        organization_id: scope.organizationId,
        project_id: scope.projectId,
        api_key_id: scope.key.id,
        tenant_id: scope.tenantId || null,
        end_user_id: scope.endUserId,
      };
      // The scope of compose: an end user is one end user of one tenant ('' outside /v1); without one, the
      // key's tenant or else every tenant of the project.
      const tenantId = scope.endUserId ? scope.tenantId : scope.tenantId || null;
      const rows = memories.exportMemories(database, {
        projectId: scope.projectId,
        tenantId,
        endUserId: scope.endUserId,
      });
      async function* body() {
        yield `{"principal":${JSON.stringify(principal)},"generated_at":"${nowIso()}","memories":[`;
        let first = true;
        for await (const memory of rows) {
          yield (first ? '' : ',') + JSON.stringify(memory);
          first = false;
        }
        yield ']}';
      }
      // A stream bypasses the serializer; the schema above still documents the shape.
      return reply.type('application/json').send(Readable.from(body()) as never);
    },
  );

  app.post(
    '/memory/batch-update',
    {
      config: writeUser,
      schema: {
        tags,
        summary: 'Change many memories',
        description: `At most ${LIMITS.batchUpdates} patches in one transaction; 200 when all applied, 207 when any memory was not found.`,
        body: BatchUpdateBody,
        response: { 200: BatchUpdateResult, 207: BatchUpdateResult },
      },
    },
    async (request, reply) => {
      const result = await memories.batchUpdate(
        database,
        writeContextOf(request),
        ownerOf(request),
        request.body.updates,
      );
      return reply.status(result.totals.failed === 0 ? 200 : 207).send(result);
    },
  );

  app.delete(
    '/memory/forget',
    {
      config: writeUser,
      schema: {
        tags,
        summary: 'Forget memories',
        description:
          'Erases memories of the end user down to an id-and-time tombstone (history included). By ids: responds with the array of ids actually forgotten. ' +
          `By filters (those of POST /memory/query) and/or session_id: forgets at most limit (default ${LIMITS.forgetIds}) of the matching memories, oldest first, ` +
          'and responds with {dry_run, ids, matched, has_more}; send it again while has_more; dry_run: true forgets nothing and says what would go.',
        body: ForgetBody,
        response: { 200: Type.Union([Type.Array(Type.Integer()), ForgetScopeResult]) },
      },
    },
    async (request) => {
      const { ids, filters, session_id: sessionId, dry_run: dryRun, limit } = request.body;
      if (ids !== undefined) {
        const scoped = (['filters', 'session_id', 'dry_run', 'limit'] as const).find(
          (field) => request.body[field] !== undefined,
        );
        if (scoped) throw invalid(scoped, `${scoped} selects by scope; send either ids or filters and/or session_id`);
        return memories.forget(database, writeContextOf(request), ownerOf(request), ids, erase);
      }
      if (filters === undefined && sessionId === undefined)
        throw invalid('ids', 'send ids, or filters and/or session_id ({"filters": {}} selects every memory)');
      return memories.forgetSelected(
        database,
        writeContextOf(request),
        ownerOf(request),
        {
          ...(filters !== undefined ? { filters } : {}),
          ...(sessionId !== undefined ? { sessionId } : {}),
        },
        { limit: limit ?? LIMITS.forgetIds, dryRun: dryRun ?? false },
        erase,
      );
    },
  );

  app.delete(
    '/memory/user/:end_user_id',
    {
      config: { auth: { scope: 'memories:write', endUser: 'none' } },
      schema: {
        tags,
        summary: 'Remove an end user',
        description: 'Erases every memory of the end user in the project (and tenant). Responds with the count.',
        params: Type.Object({ end_user_id: Type.String({ minLength: 1, maxLength: 256 }) }),
        response: { 200: Type.Object({ end_user_id: Type.String(), deleted: Type.Integer() }) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const endUserId = endUserWithin(scope.key, request.params.end_user_id, 'end_user_id')!;
      const deleted = await memories.purgeEndUser(
        database,
        writeContextOf(request),
        {
          projectId: scope.projectId,
          tenantId: scope.tenantId,
          endUserId,
        },
        erase,
      );
      return { end_user_id: endUserId, deleted };
    },
  );

  app.get(
    '/memory/:memory_id',
    {
      config: read,
      schema: { tags, summary: 'Read a memory', params: IdParams, response: { 200: Memory } },
    },
    async (request) => memories.getMemory(database.db, ownerOf(request), request.params.memory_id),
  );

  app.patch(
    '/memory/:memory_id',
    {
      config: writeUser,
      schema: {
        tags,
        summary: 'Change a memory',
        description: 'Changes tags, importance, metadata (replaced whole) or source. Text is immutable.',
        params: IdParams,
        body: MemoryPatch,
        response: { 200: Memory },
      },
    },
    async (request) =>
      memories.updateMemory(
        database,
        writeContextOf(request),
        ownerOf(request),
        request.params.memory_id,
        request.body,
      ),
  );

  app.get(
    '/memory/:memory_id/history',
    {
      config: read,
      schema: {
        tags,
        summary: 'History of a memory',
        description: 'Every change, oldest first.',
        params: IdParams,
        response: { 200: HistoryResult },
      },
    },
    async (request) => memories.memoryHistory(database.db, ownerOf(request), request.params.memory_id),
  );
};
