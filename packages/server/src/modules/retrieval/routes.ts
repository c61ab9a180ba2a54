import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../../config.js';
import { openAiEmbedder, type Embedder } from '../../engine/index.js';
import { ownerOf, scopeOf, withinBinding, writeContextOf } from '../../http/auth.js';
import { notFound } from '../../http/errors.js';
import { enqueueJob, getJob, type JobRunner } from '../../jobs/runner.js';
import type { Database } from '../../store/database.js';
import { write } from '../../core/unit-of-work.js';
import { changesSince, liveMemoryCount, liveProjectMemories, type IndexedMemory } from '../memories/service.js';
import { MemoryId } from '../memories/schemas.js';
import { EmbeddingStore } from './embeddings.js';
import { addFeedback, listFeedback, withdrawFeedback } from './feedback.js';
import { IndexCache } from './index-cache.js';
import {
  ComposeBody, ComposeResult, FeedbackBody, FeedbackResult, JobResult, QueryBody, QueryResult, RetrieveBody, RetrieveResult,
  SearchBody, SearchResult,
} from './schemas.js';
import { Retrieval, type RetrievalScope } from './service.js';

const read = { auth: { scope: 'memories:read', endUser: 'required' } } as const;
const tags = ['retrieval'];
const REFRESH_JOB = 'embeddings.refresh';

export function createEmbedder(config: Config['retrieval']['embedder']): Embedder | null {
  if (config.kind === 'builtin') return null;
  return openAiEmbedder({
    baseUrl: config.baseUrl, model: config.model,
    ...(config.apiKey ? { apiKey: config.apiKey } : {}), ...(config.dimensions ? { dimensions: config.dimensions } : {}),
  });
}

export interface RetrievalOptions {
  database: Database;
  config: Config['retrieval'];
  jobs: JobRunner;
}

/** The retrieval engine behind the shared per-end-user index cache; /v1 recall uses the same instance. */
export function createRetrieval(database: Database, config: Config['retrieval']) {
  const embeddings = new EmbeddingStore(createEmbedder(config.embedder));
  const cache = new IndexCache(database, embeddings, config.indexCacheBytes, config.projectIndexMaxMemories);
  return { embeddings, cache, retrieval: new Retrieval(database, cache, embeddings) };
}

export const retrievalRoutes: FastifyPluginAsyncTypebox<RetrievalOptions & { engine: ReturnType<typeof createRetrieval> }> = async (
  app,
  { database, jobs, engine },
) => {
  const { retrieval, embeddings, cache } = engine;

  jobs.register(REFRESH_JOB, async (job) => {
    const { tenantId, endUserId } = job.payload as { tenantId: string; endUserId: string | null };
    const projectId = job.projectId!;
    const rows: AsyncIterable<IndexedMemory> | IndexedMemory[] = endUserId
      ? await changesSince(database.db, { projectId, tenantId, endUserId }, 0)
      : liveProjectMemories(database.db, projectId, tenantId || null);
    const total = Array.isArray(rows) ? rows.length : await liveMemoryCount(database.db, [projectId]);
    let done = 0;
    let batch: IndexedMemory[] = [];
    const flush = async () => {
      await embeddings.store(database.db, projectId, batch);
      done += batch.length;
      batch = [];
      await job.progress(total === 0 ? 1 : done / total);
    };
    for await (const row of rows) {
      batch.push(row);
      if (batch.length === 100) await flush();
    }
    await flush();
    cache.invalidateProject(projectId);
    return { memories: done, embedder: embeddings.id };
  });

  app.post('/memory/query', {
    config: read,
    schema: {
      tags, summary: 'Query memories',
      description: "Ranks the end user's memories for a query (stemmed words, conversation context, recency, importance, feedback, and vectors when an embedder is configured), with optional filters and per-feature explanations.",
      body: QueryBody, response: { 200: QueryResult },
    },
  }, async (request) => ({ memories: await retrieval.query(ownerOf(request), request.body) }));

  app.post('/memory/retrieve', {
    config: read,
    schema: {
      tags, summary: 'Retrieve for a prompt',
      description: 'Memories relevant to a whole prompt (long, several questions): each sentence is searched and the rankings fused; the best are returned within token_budget.',
      body: RetrieveBody, response: { 200: RetrieveResult },
    },
  }, async (request) => {
    const result = await retrieval.retrieve({ kind: 'owner', owner: ownerOf(request) }, request.body);
    return { ...result, token_budget: request.body.token_budget ?? null };
  });

  app.post('/memory/search', {
    config: read,
    schema: {
      tags, summary: 'Routed search',
      description: 'route auto (default) picks keyword, semantic, temporal (a time phrase becomes a created_at range) or recent, and says why.',
      body: SearchBody, response: { 200: SearchResult },
    },
  }, async (request) => retrieval.search(ownerOf(request), request.body));

  app.post('/memory/compose', {
    config: { auth: { scope: 'memories:read', endUser: 'optional' } },
    schema: {
      tags, summary: 'Build a prompt',
      description: "A ready prompt block citing the memories it used as [m:id]. Principal scope: the key's project, narrowed by the key's end-user binding or X-End-User-ID when sent.",
      body: ComposeBody, response: { 200: ComposeResult },
    },
  }, async (request) => retrieval.compose(principalScope(request), request.body));

  app.post('/memory/refresh', {
    config: { auth: { scope: 'memories:write', endUser: 'optional' } },
    schema: {
      tags, summary: 'Rebuild embeddings',
      description: 'Recomputes stored embeddings for the scope (the end user when X-End-User-ID is sent, else the project) with the configured embedder, as a background job; read its progress at GET /memory/refresh/{job_id}.',
      response: { 202: JobResult },
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    const id = await write(database, writeContextOf(request), async (trx, effects) => {
      const jobId = await enqueueJob(trx, {
        kind: REFRESH_JOB, projectId: scope.projectId, payload: { tenantId: scope.tenantId, endUserId: scope.endUserId },
      });
      effects.audit('memory.refresh', { type: 'job', id: jobId });
      return jobId;
    });
    jobs.kick();
    const { payload: _payload, ...job } = (await getJob(database.db, id, scope.projectId))!;
    return reply.status(202).send(job);
  });

  app.get('/memory/refresh/:job_id', {
    config: { auth: { scope: 'memories:read', endUser: 'none' } },
    schema: { tags, summary: 'Progress of a rebuild', params: Type.Object({ job_id: Type.Integer({ minimum: 1 }) }), response: { 200: JobResult } },
  }, async (request) => {
    const scope = scopeOf(request);
    const job = await getJob(database.db, request.params.job_id, scope.projectId, REFRESH_JOB);
    // A refresh job belongs to the tenant and end user it was started for; a narrower key sees only its own.
    const target = job?.payload as { tenantId: string; endUserId: string | null } | undefined;
    if (!job || !target || !withinBinding(scope.key, { projectId: scope.projectId, tenantId: target.tenantId, endUserId: target.endUserId })) {
      throw notFound('Job');
    }
    const { payload: _payload, ...view } = job;
    return view;
  });

  const FeedbackParams = Type.Object({ memory_id: MemoryId });
  app.post('/memory/:memory_id/feedback', {
    config: { auth: { scope: 'memories:write', endUser: 'required' } },
    schema: {
      tags, summary: 'Rate a retrieval result',
      description: "Moves the memory's rank for this end user (the feedback ranking feature) until withdrawn.",
      params: FeedbackParams, body: FeedbackBody, response: { 201: FeedbackResult },
    },
  }, async (request, reply) =>
    reply.status(201).send(await addFeedback(database, writeContextOf(request), ownerOf(request), request.params.memory_id, request.body)));

  app.get('/memory/:memory_id/feedback', {
    config: read,
    schema: { tags, summary: 'Feedback on a memory', params: FeedbackParams, response: { 200: Type.Object({ items: Type.Array(FeedbackResult) }) } },
  }, async (request) => ({ items: await listFeedback(database.db, ownerOf(request), request.params.memory_id) }));

  app.delete('/memory/:memory_id/feedback/:feedback_id', {
    config: { auth: { scope: 'memories:write', endUser: 'required' } },
    schema: {
      tags, summary: 'Withdraw feedback',
      params: Type.Object({ memory_id: MemoryId, feedback_id: Type.Integer({ minimum: 1 }) }),
      response: { 200: FeedbackResult },
    },
  }, async (request) =>
    withdrawFeedback(database, writeContextOf(request), ownerOf(request), request.params.memory_id, request.params.feedback_id));
};

function principalScope(request: Parameters<typeof scopeOf>[0]): RetrievalScope {
  const scope = scopeOf(request);
  return scope.endUserId
    ? { kind: 'owner', owner: { projectId: scope.projectId, tenantId: scope.tenantId, endUserId: scope.endUserId } }
    : { kind: 'project', projectId: scope.projectId, tenantId: scope.tenantId || null };
}
