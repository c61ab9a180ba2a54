import type { components } from './generated/openapi.js';
import { type Body, type CallOptions, type OperationId, type Query, type Result, Transport, type TransportOptions, EngramError } from './transport.js';

export type AddMemory = components['schemas']['AddMemory'];
export type Memory = components['schemas']['Memory'];

/** The outcome of addMany: totals and one result per item, indexed as the items were given. */
export interface AddManyResult {
  totals: { created: number; skipped: number; failed: number };
  results: Array<Result<'postMemoryBulkAdd'>['results'][number]>;
}

export interface ServiceClientOptions extends TransportOptions {
  /** An API key (X-API-Key). */
  apiKey: string;
  /** The project (X-Project-ID); not needed with a key locked to a project. */
  projectId?: string;
  /** The end user (X-End-User-ID) calls act for, unless a call names another. */
  endUserId?: string;
  /** The tenant (X-Tenant-ID), for cross-tenant operator keys. */
  tenantId?: string;
}

const BULK_SIZE = 50;

/**
 * The data plane and /v1 with an API key: memories, retrieval, feedback, relations, intelligence,
 * the tenant plane. Project, end user and tenant are set once here or per call (CallOptions).
 */
export class ServiceClient {
  readonly transport: Transport;
  private readonly defaults: CallOptions;

  constructor(options: ServiceClientOptions) {
    const { apiKey, projectId, endUserId, tenantId, ...transport } = options;
    this.transport = new Transport(transport, { headers: async () => ({ 'x-api-key': apiKey }) });
    this.defaults = { projectId, endUserId, tenantId };
  }

  /** Sends any operation of the document by its operationId, with this client's scoping. */
  call<K extends OperationId>(operationId: K, input: Parameters<Transport['call']>[1] = {}, options?: CallOptions): Promise<Result<K>> {
    return this.transport.call(operationId, input, this.scoped(options));
  }

  private scoped(options: CallOptions = {}): CallOptions {
    const merged: CallOptions = { ...options };
    for (const name of ['projectId', 'endUserId', 'tenantId'] as const) merged[name] ??= this.defaults[name];
    return merged;
  }

  private async addMany(items: AddMemory[], options?: CallOptions): Promise<AddManyResult> {
    const outcome: AddManyResult = { totals: { created: 0, skipped: 0, failed: 0 }, results: [] };
    for (let start = 0; start < items.length; start += BULK_SIZE) {
      const batch = items.slice(start, start + BULK_SIZE);
      try {
        const answer = await this.call('postMemoryBulkAdd', { body: batch }, options);
        for (const result of answer.results) {
          outcome.results.push({ ...result, index: start + result.index });
          outcome.totals[result.status]++;
        }
      } catch (error) {
        // The whole request failed (after retries): each of its items is reported failed, and the next batch goes on.
        if (!(error instanceof EngramError)) throw error;
        batch.forEach((_, i) => {
          outcome.results.push({ index: start + i, status: 'failed', error: { code: error.code, message: error.message, ...(error.field ? { field: error.field } : {}) } });
          outcome.totals.failed++;
        });
      }
    }
    return outcome;
  }

  readonly health = {
    live: (options?: CallOptions) => this.call('getHealthz', {}, options),
    ready: (options?: CallOptions) => this.call('getReadyz', {}, options),
  };

  readonly memories = {
    add: (body: Body<'postMemoryAdd'>, options?: CallOptions) => this.call('postMemoryAdd', { body }, options),
    bulkAdd: (body: Body<'postMemoryBulkAdd'>, options?: CallOptions) => this.call('postMemoryBulkAdd', { body }, options),
    export: (options?: CallOptions) => this.call('getMemoryExport', {}, options),
    batchUpdate: (body: Body<'postMemoryBatchUpdate'>, options?: CallOptions) => this.call('postMemoryBatchUpdate', { body }, options),
    forget: (body: Body<'deleteMemoryForget'>, options?: CallOptions) => this.call('deleteMemoryForget', { body }, options),
    forgetEndUser: (endUserId: string | number, options?: CallOptions) => this.call('deleteMemoryUserByEndUserId', { path: { end_user_id: endUserId } }, options),
    get: (memoryId: string | number, options?: CallOptions) => this.call('getMemoryByMemoryId', { path: { memory_id: memoryId } }, options),
    update: (memoryId: string | number, body: Body<'patchMemoryByMemoryId'>, options?: CallOptions) => this.call('patchMemoryByMemoryId', { path: { memory_id: memoryId }, body }, options),
    history: (memoryId: string | number, options?: CallOptions) => this.call('getMemoryByMemoryIdHistory', { path: { memory_id: memoryId } }, options),
    /** Ingests a file (multipart): text, Markdown, HTML, PDF, DOCX, CSV or JSON. */
    upload: (file: Blob | Uint8Array | string, filename: string, options?: CallOptions) => this.call('postMemoryUpload', { raw: { body: formWith(file, filename) } }, options),
    /** Adds any number of memories in requests of 50 (bulk-add), reporting each item's outcome. */
    addMany: (items: AddMemory[], options?: CallOptions) => this.addMany(items, options),
    uploadJob: (jobId: string | number, options?: CallOptions) => this.call('getMemoryUploadByJobId', { path: { job_id: jobId } }, options),
    query: (body: Body<'postMemoryQuery'>, options?: CallOptions) => this.call('postMemoryQuery', { body }, options),
    retrieve: (body: Body<'postMemoryRetrieve'>, options?: CallOptions) => this.call('postMemoryRetrieve', { body }, options),
    search: (body: Body<'postMemorySearch'>, options?: CallOptions) => this.call('postMemorySearch', { body }, options),
    compose: (body: Body<'postMemoryCompose'>, options?: CallOptions) => this.call('postMemoryCompose', { body }, options),
    refreshEmbeddings: (options?: CallOptions) => this.call('postMemoryRefresh', {}, options),
    refreshJob: (jobId: string | number, options?: CallOptions) => this.call('getMemoryRefreshByJobId', { path: { job_id: jobId } }, options),
    summarize: (body: Body<'postMemorySummarize'>, options?: CallOptions) => this.call('postMemorySummarize', { body }, options),
    synthesize: (body: Body<'postMemorySynthesize'>, options?: CallOptions) => this.call('postMemorySynthesize', { body }, options),
  };

  readonly feedback = {
    add: (memoryId: string | number, body: Body<'postMemoryByMemoryIdFeedback'>, options?: CallOptions) => this.call('postMemoryByMemoryIdFeedback', { path: { memory_id: memoryId }, body }, options),
    list: (memoryId: string | number, options?: CallOptions) => this.call('getMemoryByMemoryIdFeedback', { path: { memory_id: memoryId } }, options),
    delete: (memoryId: string | number, feedbackId: string | number, options?: CallOptions) => this.call('deleteMemoryByMemoryIdFeedbackByFeedbackId', { path: { memory_id: memoryId, feedback_id: feedbackId } }, options),
  };

  readonly relations = {
    create: (body: Body<'postMemoryRelations'>, options?: CallOptions) => this.call('postMemoryRelations', { body }, options),
    list: (memoryId: string | number, options?: CallOptions) => this.call('getMemoryByMemoryIdRelations', { path: { memory_id: memoryId } }, options),
    delete: (relationId: string | number, options?: CallOptions) => this.call('deleteMemoryRelationsByRelationId', { path: { relation_id: relationId } }, options),
  };

  readonly intelligence = {
    ontology: (options?: CallOptions) => this.call('getMemoryOntology', {}, options),
    replaceOntology: (body: Body<'putMemoryOntology'>, options?: CallOptions) => this.call('putMemoryOntology', { body }, options),
    graph: (query: Query<'getMemoryGraph'> = {}, options?: CallOptions) => this.call('getMemoryGraph', { query }, options),
    clusters: (query: Query<'getMemoryClusters'> = {}, options?: CallOptions) => this.call('getMemoryClusters', { query }, options),
    decisions: (query: Query<'getMemoryDecisions'> = {}, options?: CallOptions) => this.call('getMemoryDecisions', { query }, options),
    decisionsAll: (query: Query<'getMemoryDecisions'> = {}, options?: CallOptions) => this.transport.pages('getMemoryDecisions', { query }, this.scoped(options)),
    resolveDecision: (decisionId: string | number, body: Body<'postMemoryDecisionByDecisionIdResolve'>, options?: CallOptions) => this.call('postMemoryDecisionByDecisionIdResolve', { path: { decision_id: decisionId }, body }, options),
    report: (options?: CallOptions) => this.call('getMemoryIntelligence', {}, options),
    stats: (options?: CallOptions) => this.call('getMemoryKnowledgeStats', {}, options),
  };

  readonly v1 = {
    addTurn: (body: Body<'postV1MemoryAddTurn'>, options?: CallOptions) => this.call('postV1MemoryAddTurn', { body }, options),
    recall: (body: Body<'postV1MemoryRecall'>, options?: CallOptions) => this.call('postV1MemoryRecall', { body }, options),
    status: (options?: CallOptions) => this.call('getV1MemoryStatus', {}, options),
    memories: (query: Query<'getV1MemoryMemories'> = {}, options?: CallOptions) => this.call('getV1MemoryMemories', { query }, options),
    memoriesAll: (query: Query<'getV1MemoryMemories'> = {}, options?: CallOptions) => this.transport.pages('getV1MemoryMemories', { query }, this.scoped(options)),
  };
}

/** A multipart form with one part `file`. */
export function formWith(file: Blob | Uint8Array | string, filename: string): FormData {
  const form = new FormData();
  form.append('file', file instanceof Blob ? file : new Blob([file]), filename);
  return form;
}
