import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ownerOf, scopeOf, writeContextOf } from '../../http/auth.js';
import type { JobHandlers } from '../../jobs/runner.js';
import type { Database } from '../../store/database.js';
import { readOntology, replaceOntology } from './ontology.js';
import {
  ClustersQuery,
  ClustersResult,
  DecisionParams,
  DecisionsQuery,
  DecisionsResult,
  Decision,
  GraphQuery,
  GraphResult,
  InferBody,
  InferResult,
  INFER_LIMITS,
  IntelligenceResult,
  Ontology,
  OntologyResult,
  ResolveBody,
  StatsResult,
} from './schemas.js';
import type { Intelligence } from './service.js';
import type { LlmProvider } from '../../engine/llm/index.js';
import { inferFacts } from './infer.js';

const read = { auth: { scope: 'memories:read', endUser: 'required' } } as const;
const tags = ['intelligence'];

export interface IntelligenceOptions {
  database: Database;
  /** To start the reclassification job at once in this process (its handler is registered in services.ts). */
  jobs: JobHandlers;
  intelligence: Intelligence;
  /** The configured chat model, or null: facts are then extracted offline. */
  llm: LlmProvider | null;
}

export const intelligenceRoutes: FastifyPluginAsyncTypebox<IntelligenceOptions> = async (
  app,
  { database, jobs, intelligence, llm },
) => {
  const ontologyView = async (projectId: string) => {
    const stored = await readOntology(database.db, projectId);
    return {
      ...stored.ontology,
      revision: stored.revision,
      is_default: stored.revision === 0,
      updated_at: stored.updated_at,
      reclassification: stored.reclassification,
    };
  };

  app.get(
    '/memory/ontology',
    {
      config: { auth: { scope: 'memories:read', endUser: 'optional' } },
      schema: {
        tags,
        summary: 'Read the ontology',
        description:
          "The project's vocabulary: categories, entity types and relation types (the built-in default until replaced), with the progress of the last reclassification.",
        response: { 200: OntologyResult },
      },
    },
    async (request) => ontologyView(scopeOf(request).projectId),
  );

  app.put(
    '/memory/ontology',
    {
      config: { auth: { scope: 'memories:write', endUser: 'optional' } },
      schema: {
        tags,
        summary: 'Replace the ontology',
        description:
          'Replaces the whole ontology of the project (unknown entity types and duplicate names are 400 naming the field), audits it, emits ontology.updated and reclassifies existing memories in a background job.',
        body: Ontology,
        response: { 200: OntologyResult },
      },
    },
    async (request) => {
      const projectId = scopeOf(request).projectId;
      await replaceOntology(database, writeContextOf(request), projectId, request.body);
      jobs.enqueued();
      return ontologyView(projectId);
    },
  );

  app.get(
    '/memory/graph',
    {
      config: read,
      schema: {
        tags,
        summary: 'Entity and relation graph',
        description:
          "Entities of the end user's memories and the facts relating them. Every edge lists the memories that state it and when it became true (valid_at) and stopped being true (invalid_at, invalidated_by): a new value of a single-valued relation ends the old edge, which is kept. as_of answers what was true then.",
        querystring: GraphQuery,
        response: { 200: GraphResult },
      },
    },
    async (request) => intelligence.graph(ownerOf(request), request.query),
  );

  app.get(
    '/memory/clusters',
    {
      config: read,
      schema: {
        tags,
        summary: 'Thematic clusters',
        description:
          "Groups of the end user's memories about one theme (two or more members), largest first, each labelled with its top terms; deterministic for the same memories.",
        querystring: ClustersQuery,
        response: { 200: ClustersResult },
      },
    },
    async (request) => intelligence.clusters(ownerOf(request), request.query.limit),
  );

  app.get(
    '/memory/decisions',
    {
      config: read,
      schema: {
        tags,
        summary: 'Conflicting statements',
        description:
          'Pairs of memories that cannot both be true now: two values of a single-valued relation, or a statement and its negation. Each carries a suggested resolution (the newer statement, with the reason) and its status; newest first.',
        querystring: DecisionsQuery,
        response: { 200: DecisionsResult },
      },
    },
    async (request) => intelligence.decisions(ownerOf(request), request.query),
  );

  app.post(
    '/memory/decision/:decision_id/resolve',
    {
      config: { auth: { scope: 'memories:write', endUser: 'required' } },
      schema: {
        tags,
        summary: 'Record a resolution',
        description:
          'keep_one (with memory_id) marks the other memory superseded_by the kept one: it then ranks below it in retrieval and its history says why. keep_both and dismiss change no memory. Audited; emits decision.resolved. A decision is resolved once: a second resolution is 409.',
        params: DecisionParams,
        body: ResolveBody,
        response: { 200: Decision },
      },
    },
    async (request) =>
      intelligence.resolve(writeContextOf(request), ownerOf(request), request.params.decision_id, request.body),
  );

  app.get(
    '/memory/intelligence',
    {
      config: read,
      schema: {
        tags,
        summary: 'Combined report',
        description:
          'Top entities, the facts that changed most recently, the largest clusters and open decisions, in one read.',
        response: { 200: IntelligenceResult },
      },
    },
    async (request) => intelligence.report(ownerOf(request)),
  );

  app.get(
    '/memory/knowledge/stats',
    {
      config: read,
      schema: {
        tags,
        summary: 'Knowledge totals',
        description:
          'Memories, summaries, entities and relations by type, clusters, decisions by status and memories per category.',
        response: { 200: StatsResult },
      },
    },
    async (request) => intelligence.stats(ownerOf(request)),
  );

  app.post(
    '/memory/infer',
    {
      config: { auth: { scope: 'memories:write', endUser: 'required' } },
      schema: {
        tags: ['memories'],
        summary: 'Add the facts of a conversation',
        description: `Reads up to ${INFER_LIMITS.messages} messages and stores each fact the user states about themselves as a memory (source conversation, the session_id given, metadata.inferred_from naming the messages). A fact the end user's memories already state is a duplicate (that memory, nothing written); a fact that ends every fact of a stored memory (a new home, a new employer) marks that memory superseded_by the new one, with a history entry. With a chat model configured it is asked for the facts under a strict JSON schema, each citing its messages (an answer off the schema or citing no given message is asked again once, then the offline extractor stands; the model unreachable is 503, nothing written); without one the offline extractor reads the user's sentences. Audited memory.infer; emits memory.created and memory.updated.`,
        body: InferBody,
        response: { 200: InferResult },
      },
    },
    async (request) => inferFacts(database, intelligence, llm, writeContextOf(request), ownerOf(request), request.body),
  );
};
