import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ownerOf, scopeOf, writeContextOf } from '../../http/auth.js';
import { withinBinding } from '../../core/binding.js';
import { notFound } from '../../core/errors.js';
import { enqueueJob, getJob, type JobHandlers } from '../../jobs/runner.js';
import type { Database } from '../../store/database.js';
import { write } from '../../core/unit-of-work.js';
import { MemoryId } from '../memories/index.js';
import { addFeedback, listFeedback, withdrawFeedback } from './feedback.js';
import { REFRESH_JOB, type RetrievalEngine } from './engine.js';
import {
  ComposeBody,
  ComposeResult,
  FeedbackBody,
  FeedbackResult,
  JobResult,
  QueryBody,
  QueryResult,
  RetrieveBody,
  RetrieveResult,
  SearchBody,
  SearchResult,
} from './schemas.js';
import type { RetrievalScope } from './service.js';

const read = { auth: { scope: 'memories:read', endUser: 'required' } } as const;
const tags = ['retrieval'];

export const retrievalRoutes: FastifyPluginAsyncTypebox<{
  database: Database;
  jobs: JobHandlers;
  engine: RetrievalEngine;
}> = async (app, { database, jobs, engine: { retrieval } }) => {
  app.post(
    '/memory/query',
    {
      config: { auth: { ...read.auth, checksClock: true } },
      schema: {
        tags,
        summary: 'Query memories',
        description:
          "Ranks the end user's memories for a query (stemmed words, conversation context, recency, importance, feedback, and vectors when an embedder is configured), with optional filters and per-feature explanations.",
        body: QueryBody,
        response: { 200: QueryResult },
      },
    },
    async (request) => ({ memories: await retrieval.query(ownerOf(request), request.body, request.heldAt) }),
  );

  app.post(
    '/memory/retrieve',
    {
      config: read,
      schema: {
        tags,
        summary: 'Retrieve for a prompt',
        description:
          'Memories relevant to a whole prompt (long, several questions): each sentence is searched and the rankings fused; the best are returned within token_budget.',
        body: RetrieveBody,
        response: { 200: RetrieveResult },
      },
    },
    async (request) => {
      const result = await retrieval.retrieve({ kind: 'owner', owner: ownerOf(request) }, request.body);
      return { ...result, token_budget: request.body.token_budget ?? null };
    },
  );

  app.post(
    '/memory/search',
    {
      config: read,
      schema: {
        tags,
        summary: 'Routed search',
        description:
          'route auto (default) picks keyword, semantic, temporal (a time phrase becomes a period; a memory falls in it by its time or a date its text names, and an empty period falls back to any time) or recent, and says why in reason.',
        body: SearchBody,
        response: { 200: SearchResult },
      },
    },
    async (request) => retrieval.search(ownerOf(request), request.body),
  );

  app.post(
    '/memory/compose',
    {
      config: { auth: { scope: 'memories:read', endUser: 'optional' } },
      schema: {
        tags,
        summary: 'Build a prompt',
        description:
          "A ready prompt block citing the memories it used as [m:id]. Principal scope: the key's project, narrowed by the key's end-user binding or X-End-User-ID when sent.",
        body: ComposeBody,
        response: { 200: ComposeResult },
      },
    },
    async (request) => retrieval.compose(principalScope(request), request.body),
  );

  app.post(
    '/memory/refresh',
    {
      config: { auth: { scope: 'memories:write', endUser: 'optional' } },
      schema: {
        tags,
        summary: 'Rebuild embeddings',
        description:
          'Recomputes stored embeddings for the scope (the end user when X-End-User-ID is sent, else the project) with the configured embedder, as a background job; read its progress at GET /memory/refresh/{job_id}.',
        response: { 202: JobResult },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const id = await write(database, writeContextOf(request), async (trx, effects) => {
        const jobId = await enqueueJob(trx, {
          kind: REFRESH_JOB,
          projectId: scope.projectId,
          payload: { tenantId: scope.tenantId, endUserId: scope.endUserId },
        });
        effects.audit('memory.refresh', { type: 'job', id: jobId });
        return jobId;
      });
      jobs.enqueued();
      const { payload: _payload, ...job } = (await getJob(database.db, id, scope.projectId))!;
      return reply.status(202).send(job);
    },
  );

  app.get(
    '/memory/refresh/:job_id',
    {
      config: { auth: { scope: 'memories:read', endUser: 'none' } },
      schema: {
        tags,
        summary: 'Progress of a rebuild',
        params: Type.Object({ job_id: Type.Integer({ minimum: 1 }) }),
        response: { 200: JobResult },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const job = await getJob(database.db, request.params.job_id, scope.projectId, REFRESH_JOB);
      // A refresh job belongs to the tenant and end user it was started for; a narrower key sees only its own.
      const target = job?.payload as { tenantId: string; endUserId: string | null } | undefined;
      if (
        !job ||
        !target ||
        !withinBinding(scope.key, {
          projectId: scope.projectId,
          tenantId: target.tenantId,
          endUserId: target.endUserId,
        })
      ) {
        throw notFound('Job');
      }
      const { payload: _payload, ...view } = job;
      return view;
    },
  );

  const FeedbackParams = Type.Object({ memory_id: MemoryId });
  app.post(
    '/memory/:memory_id/feedback',
    {
      config: { auth: { scope: 'memories:write', endUser: 'required' } },
      schema: {
        tags,
        summary: 'Rate a retrieval result',
        description: "Moves the memory's rank for this end user (the feedback ranking feature) until withdrawn.",
        params: FeedbackParams,
        body: FeedbackBody,
        response: { 201: FeedbackResult },
      },
    },
    async (request, reply) =>
      reply
        .status(201)
        .send(
          await addFeedback(
            database,
            writeContextOf(request),
            ownerOf(request),
            request.params.memory_id,
            request.body,
          ),
        ),
  );

  app.get(
    '/memory/:memory_id/feedback',
    {
      config: read,
      schema: {
        tags,
        summary: 'Feedback on a memory',
        params: FeedbackParams,
        response: { 200: Type.Object({ items: Type.Array(FeedbackResult) }) },
      },
    },
    async (request) => ({ items: await listFeedback(database.db, ownerOf(request), request.params.memory_id) }),
  );

  app.delete(
    '/memory/:memory_id/feedback/:feedback_id',
    {
      config: { auth: { scope: 'memories:write', endUser: 'required' } },
      schema: {
        tags,
        summary: 'Withdraw feedback',
        params: Type.Object({ memory_id: MemoryId, feedback_id: Type.Integer({ minimum: 1 }) }),
        response: { 200: FeedbackResult },
      },
    },
    async (request) =>
      withdrawFeedback(
        database,
        writeContextOf(request),
        ownerOf(request),
        request.params.memory_id,
        request.params.feedback_id,
      ),
  );
};

function principalScope(request: Parameters<typeof scopeOf>[0]): RetrievalScope {
  const scope = scopeOf(request);
  return scope.endUserId
    ? { kind: 'owner', owner: { projectId: scope.projectId, tenantId: scope.tenantId, endUserId: scope.endUserId } }
    : { kind: 'project', projectId: scope.projectId, tenantId: scope.tenantId || null };
}
