import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { LlmProvider } from '../../engine/index.js';
import { ownerOf, writeContextOf } from '../../http/auth.js';
import { declaredErrors } from '../../http/openapi.js';
import type { Database } from '../../store/database.js';
import { MemoryId } from '../memories/index.js';
import type { RetrievalService } from '../retrieval/index.js';
import { synthesize } from './answers.js';
import { createRelation, deleteRelation, listRelations } from './relations.js';
import {
  Relation,
  RelationBody,
  RelationList,
  RELATION_TYPES,
  SUMMARIZES,
  SummarizeBody,
  SummarizeResult,
  SYNTHESIS_LIMITS,
  SynthesizeBody,
  SynthesizeResult,
} from './schemas.js';
import { summarize } from './summaries.js';

const read = { auth: { scope: 'memories:read', endUser: 'required' } } as const;
const writeUser = { auth: { scope: 'memories:write', endUser: 'required' } } as const;

export interface SynthesisOptions {
  database: Database;
  retrieval: RetrievalService;
  /** The configured LLM, or null for the built-in methods. */
  llm: LlmProvider | null;
}

/** Derived memories and answers: summaries, relations between memories, answers with citations. */
export const synthesisRoutes: FastifyPluginAsyncTypebox<SynthesisOptions> = async (
  app,
  { database, retrieval, llm },
) => {
  app.post(
    '/memory/summarize',
    {
      config: writeUser,
      schema: {
        tags: ['memories'],
        summary: 'Summarize a set',
        description:
          `Summarizes memory_ids, or the memories matching filters and session_id (all the end user's when neither is given; at most ${SYNTHESIS_LIMITS.summarySources}; summaries are never sources). ` +
          'Extractive (central sentences, no repetition) by default, abstractive through the configured LLM. Stored (unless store is false) as a memory with is_summary true, linked to each source by a summarizes relation. ' +
          '201 when stored now; 200 with status existing when the same set was summarized before, or not_stored.',
        body: SummarizeBody,
        response: { 201: SummarizeResult, 200: SummarizeResult, ...declaredErrors(503) },
      },
    },
    async (request, reply) => {
      const { result, created } = await summarize(
        database,
        retrieval,
        llm,
        writeContextOf(request),
        ownerOf(request),
        request.body,
      );
      return reply.status(created ? 201 : 200).send(result);
    },
  );

  app.post(
    '/memory/relations',
    {
      config: writeUser,
      schema: {
        tags: ['memories'],
        summary: 'Relate two memories',
        description: `A typed link (${RELATION_TYPES.join(', ')}) from source_id to target_id, both live memories of the end user. 201 when created; 200 with the existing relation when the same link exists.`,
        body: RelationBody,
        response: { 201: Relation, 200: Relation },
      },
    },
    async (request, reply) => {
      const { relation, created } = await createRelation(
        database,
        writeContextOf(request),
        ownerOf(request),
        request.body,
      );
      return reply.status(created ? 201 : 200).send(relation);
    },
  );

  app.get(
    '/memory/:memory_id/relations',
    {
      config: read,
      schema: {
        tags: ['memories'],
        summary: 'Relations of a memory',
        description: 'Links from and to the memory, oldest first.',
        params: Type.Object({ memory_id: MemoryId }),
        response: { 200: RelationList },
      },
    },
    async (request) => listRelations(database.db, ownerOf(request), request.params.memory_id),
  );

  app.delete(
    '/memory/relations/:relation_id',
    {
      config: writeUser,
      schema: {
        tags: ['memories'],
        summary: 'Remove a relation',
        description: `Answers the removed relation. A ${SUMMARIZES} link is kept while its summary lives (409).`,
        params: Type.Object({ relation_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) }),
        response: { 200: Relation },
      },
    },
    async (request) => deleteRelation(database, writeContextOf(request), ownerOf(request), request.params.relation_id),
  );

  app.post(
    '/memory/synthesize',
    {
      config: read,
      schema: {
        tags: ['retrieval'],
        summary: 'Answer from memories',
        description:
          'Retrieves k memories for the question (as query does, with session_id and filters), then answers with citations of the spans relied on: ' +
          'built-in, the best-supported sentence (a date for "when" questions, relative dates resolved against when they were said); through the configured LLM, a grounded answer citing only retrieved memories. ' +
          `found is false (answer "No answer found in the memories.") when nothing supports an answer.`,
        body: SynthesizeBody,
        response: { 200: SynthesizeResult, ...declaredErrors(503) },
      },
    },
    async (request) => synthesize(retrieval, llm, ownerOf(request), request.body),
  );
};
