import type { components } from './generated/openapi.js';
import {
  type Body,
  type CallOptions,
  type OperationId,
  type Query,
  type Result,
  Transport,
  type TransportOptions,
  EngramError,
} from './transport.js';

export type AddMemory = components['schemas']['AddMemory'];
export type Memory = components['schemas']['Memory'];
/** The filters of query, list and forget by scope. */
export type MemoryFilters = NonNullable<Body<'memories.query'>['filters']>;
/** GET /memory's parameters, with `filters` as an object (or the JSON text of one). */
export type ListQuery = Omit<Query<'memories.list'>, 'filters'> & { filters?: MemoryFilters | string };

const listQuery = ({ filters, ...rest }: ListQuery): Query<'memories.list'> =>
  (filters === undefined
    ? rest
    : { ...rest, filters: typeof filters === 'string' ? filters : JSON.stringify(filters) }) as Query<'memories.list'>;

/** The outcome of addMany: totals and one result per item, indexed as the items were given. */
export interface AddManyResult {
  totals: { created: number; skipped: number; failed: number };
  results: Array<Result<'memories.bulkAdd'>['results'][number]>;
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
  call<K extends OperationId>(
    operationId: K,
    input: Parameters<Transport['call']>[1] = {},
    options?: CallOptions,
  ): Promise<Result<K>> {
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
        const answer = await this.call('memories.bulkAdd', { body: batch }, options);
        for (const result of answer.results) {
          outcome.results.push({ ...result, index: start + result.index });
          outcome.totals[result.status]++;
        }
      } catch (error) {
        // The whole request failed (after retries): each of its items is reported failed, and the next batch goes on.
        if (!(error instanceof EngramError)) throw error;
        batch.forEach((_, i) => {
          outcome.results.push({
            index: start + i,
            status: 'failed',
            error: { code: error.code, message: error.message, ...(error.field ? { field: error.field } : {}) },
          });
          outcome.totals.failed++;
        });
      }
    }
    return outcome;
  }

  readonly health = {
    live: (options?: CallOptions) => this.call('health.live', {}, options),
    ready: (options?: CallOptions) => this.call('health.ready', {}, options),
  };

  readonly memories = {
    add: (body: Body<'memories.add'>, options?: CallOptions) => this.call('memories.add', { body }, options),
    bulkAdd: (body: Body<'memories.bulkAdd'>, options?: CallOptions) =>
      this.call('memories.bulkAdd', { body }, options),
    /** Stores the facts a conversation states about the end user (Mem0's add with infer): created or duplicate, each with the messages it came from. */
    infer: (body: Body<'memories.infer'>, options?: CallOptions) => this.call('memories.infer', { body }, options),
    /** A page of the end user's memories; `filters` is the filters object of query (sent as JSON), `cursor` the last page's next_cursor. */
    list: (query: ListQuery = {}, options?: CallOptions) =>
      this.call('memories.list', { query: listQuery(query) }, options),
    /** Every memory the list selects, page after page. */
    listAll: (query: ListQuery = {}, options?: CallOptions) =>
      this.transport.cursorPages('memories.list', { query: listQuery(query) }, this.scoped(options)),
    export: (options?: CallOptions) => this.call('memories.export', {}, options),
    batchUpdate: (body: Body<'memories.batchUpdate'>, options?: CallOptions) =>
      this.call('memories.batchUpdate', { body }, options),
    forget: (body: Body<'memories.forget'>, options?: CallOptions) => this.call('memories.forget', { body }, options),
    forgetEndUser: (endUserId: string | number, options?: CallOptions) =>
      this.call('memories.forgetEndUser', { path: { end_user_id: endUserId } }, options),
    get: (memoryId: string | number, options?: CallOptions) =>
      this.call('memories.get', { path: { memory_id: memoryId } }, options),
    update: (memoryId: string | number, body: Body<'memories.update'>, options?: CallOptions) =>
      this.call('memories.update', { path: { memory_id: memoryId }, body }, options),
    history: (memoryId: string | number, options?: CallOptions) =>
      this.call('memories.history', { path: { memory_id: memoryId } }, options),
    /**
     * Ingests a file (multipart): text, Markdown, HTML, PDF, DOCX, CSV or JSON. `file` is a path (read
     * from disk; its base name is the default filename), a Buffer/Uint8Array or a Blob.
     */
    upload: async (file: Blob | Uint8Array | string, filename?: string, options?: CallOptions) =>
      this.call('memories.upload', { raw: { body: await formWith(file, filename) } }, options),
    /** Adds any number of memories in requests of 50 (bulk-add), reporting each item's outcome. */
    addMany: (items: AddMemory[], options?: CallOptions) => this.addMany(items, options),
    uploadJob: (jobId: string | number, options?: CallOptions) =>
      this.call('memories.uploadJob', { path: { job_id: jobId } }, options),
    query: (body: Body<'memories.query'>, options?: CallOptions) => this.call('memories.query', { body }, options),
    retrieve: (body: Body<'memories.retrieve'>, options?: CallOptions) =>
      this.call('memories.retrieve', { body }, options),
    search: (body: Body<'memories.search'>, options?: CallOptions) => this.call('memories.search', { body }, options),
    compose: (body: Body<'memories.compose'>, options?: CallOptions) =>
      this.call('memories.compose', { body }, options),
    refreshEmbeddings: (options?: CallOptions) => this.call('memories.refreshEmbeddings', {}, options),
    refreshJob: (jobId: string | number, options?: CallOptions) =>
      this.call('memories.refreshJob', { path: { job_id: jobId } }, options),
    summarize: (body: Body<'memories.summarize'>, options?: CallOptions) =>
      this.call('memories.summarize', { body }, options),
    synthesize: (body: Body<'memories.synthesize'>, options?: CallOptions) =>
      this.call('memories.synthesize', { body }, options),
  };

  readonly feedback = {
    add: (memoryId: string | number, body: Body<'feedback.add'>, options?: CallOptions) =>
      this.call('feedback.add', { path: { memory_id: memoryId }, body }, options),
    list: (memoryId: string | number, options?: CallOptions) =>
      this.call('feedback.list', { path: { memory_id: memoryId } }, options),
    delete: (memoryId: string | number, feedbackId: string | number, options?: CallOptions) =>
      this.call('feedback.delete', { path: { memory_id: memoryId, feedback_id: feedbackId } }, options),
  };

  readonly relations = {
    create: (body: Body<'relations.create'>, options?: CallOptions) => this.call('relations.create', { body }, options),
    list: (memoryId: string | number, options?: CallOptions) =>
      this.call('relations.list', { path: { memory_id: memoryId } }, options),
    delete: (relationId: string | number, options?: CallOptions) =>
      this.call('relations.delete', { path: { relation_id: relationId } }, options),
  };

  readonly intelligence = {
    ontology: (options?: CallOptions) => this.call('intelligence.ontology', {}, options),
    replaceOntology: (body: Body<'intelligence.replaceOntology'>, options?: CallOptions) =>
      this.call('intelligence.replaceOntology', { body }, options),
    graph: (query: Query<'intelligence.graph'> = {}, options?: CallOptions) =>
      this.call('intelligence.graph', { query }, options),
    clusters: (query: Query<'intelligence.clusters'> = {}, options?: CallOptions) =>
      this.call('intelligence.clusters', { query }, options),
    decisions: (query: Query<'intelligence.decisions'> = {}, options?: CallOptions) =>
      this.call('intelligence.decisions', { query }, options),
    decisionsAll: (query: Query<'intelligence.decisions'> = {}, options?: CallOptions) =>
      this.transport.pages('intelligence.decisions', { query }, this.scoped(options)),
    resolveDecision: (decisionId: string | number, body: Body<'intelligence.resolveDecision'>, options?: CallOptions) =>
      this.call('intelligence.resolveDecision', { path: { decision_id: decisionId }, body }, options),
    report: (options?: CallOptions) => this.call('intelligence.report', {}, options),
    stats: (options?: CallOptions) => this.call('intelligence.stats', {}, options),
  };

  readonly v1 = {
    addTurn: (body: Body<'v1.addTurn'>, options?: CallOptions) => this.call('v1.addTurn', { body }, options),
    recall: (body: Body<'v1.recall'>, options?: CallOptions) => this.call('v1.recall', { body }, options),
    status: (options?: CallOptions) => this.call('v1.status', {}, options),
    memories: (query: Query<'v1.memories'> = {}, options?: CallOptions) => this.call('v1.memories', { query }, options),
    memoriesAll: (query: Query<'v1.memories'> = {}, options?: CallOptions) =>
      this.transport.pages('v1.memories', { query }, this.scoped(options)),
  };
}

/** A multipart form with one part `file`: the file at a path, or the given bytes. */
export async function formWith(file: Blob | Uint8Array | string, filename?: string): Promise<FormData> {
  let content: Blob;
  if (typeof file === 'string') {
    // Imported here so that the client still loads where there is no file system (a browser).
    const [{ readFile }, { basename }] = await Promise.all([import('node:fs/promises'), import('node:path')]);
    content = new Blob([await readFile(file)]);
    filename ??= basename(file);
  } else {
    content = file instanceof Blob ? file : new Blob([file as Uint8Array<ArrayBuffer>]);
  }
  if (!filename)
    throw new TypeError('upload: a filename is needed with bytes or a Blob (its extension tells the file type)');
  const form = new FormData();
  form.append('file', content, filename);
  return form;
}
