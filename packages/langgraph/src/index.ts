import {
  BaseStore,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type MatchCondition,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchOperation,
} from '@langchain/langgraph';
import type { Memory, MemoryFilters, ServiceClient } from '@engram/client';

/** An item of a search, with its relevance score (the type @langchain/langgraph does not re-export). */
type SearchItem = Item & { score?: number };

/** The tag every memory this store writes carries, so its reads never see memories added another way. */
export const STORE_TAG = 'langgraph';
/** Metadata keys the store keeps beside the item's value (a value may not use them). */
export const NAMESPACE_KEY = 'langgraph_namespace';
export const ITEM_KEY = 'langgraph_key';
export const CREATED_KEY = 'langgraph_created_at';
const RESERVED = [NAMESPACE_KEY, ITEM_KEY, CREATED_KEY];
/** A tag is at most 64 characters; a segment's tag is `ns<depth>:<segment>`. */
const MAX_SEGMENT = 56;
const MAX_DEPTH = 48;
/** The server's page size and query `k` limit. */
const PAGE = 100;

export interface EngramStoreOptions {
  /** The official client; its key (or `projectId`) names the project. Its end user is ignored: namespaces name it. */
  client: ServiceClient;
  /** Fields of a value searched as its text when a put names none (the first string one found); default text, content, memory. */
  textFields?: string[];
}

type Filter = Record<string, unknown>;
const OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin']);

/**
 * A LangGraph BaseStore whose items are Engram memories. A namespace's first segment is the end user
 * (X-End-User-ID), the rest are the memory's tags (`ns1:<segment>`, `ns2:<segment>`...); the item's value
 * is the memory's metadata and its text what is searched. The project is the client's.
 */
export class EngramStore extends BaseStore {
  private readonly client: ServiceClient;
  private readonly textFields: string[];

  constructor(options: EngramStoreOptions) {
    super();
    this.client = options.client;
    this.textFields = options.textFields ?? ['text', 'content', 'memory'];
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    // In order: a get after a put of the same batch sees the put.
    const results: unknown[] = [];
    for (const op of operations) {
      if ('value' in op) results.push(await this.putItem(op as PutOperation));
      else if ('key' in op) results.push(await this.getItem(op as GetOperation));
      else if ('namespacePrefix' in op) results.push(await this.searchItems(op as SearchOperation));
      else results.push(await this.namespaces(op as ListNamespacesOperation));
    }
    return results as OperationResults<Op>;
  }

  private async find(namespace: string[], key: string): Promise<Memory | undefined> {
    const [endUserId, path] = split(namespace);
    const page = await this.client.memories.list(
      { limit: 1, filters: { tags_all: tagsOf(path), metadata: { [NAMESPACE_KEY]: path, [ITEM_KEY]: key } } },
      { endUserId },
    );
    return page.items[0] as Memory | undefined;
  }

  private async getItem(op: GetOperation): Promise<Item | null> {
    const memory = await this.find(op.namespace, op.key);
    return memory ? itemOf(memory) : null;
  }

  private async putItem(op: PutOperation): Promise<void> {
    const [endUserId, path] = split(op.namespace);
    const scope = { endUserId };
    if (op.value === null) {
      await this.client.memories.forget(
        { filters: { tags_all: tagsOf(path), metadata: { [NAMESPACE_KEY]: path, [ITEM_KEY]: op.key } } },
        scope,
      );
      return;
    }
    for (const name of RESERVED)
      if (name in op.value) throw new TypeError(`EngramStore: a value may not hold "${name}" (the store keeps it)`);
    const existing = await this.find(op.namespace, op.key);
    const text = this.textOf(op.value, op.index);
    const metadata = {
      ...op.value,
      [NAMESPACE_KEY]: path,
      [ITEM_KEY]: op.key,
      [CREATED_KEY]: (existing?.metadata as Filter | undefined)?.[CREATED_KEY] ?? new Date().toISOString(),
    };
    // A memory's text cannot change: the same text is an update of its value, another text a new memory.
    if (existing && (existing.text === text || existing.text === keyed(text, op.key))) {
      await this.client.memories.update(existing.id, { metadata }, scope);
      return;
    }
    if (existing) await this.client.memories.forget({ ids: [existing.id] }, scope);
    const body = { text, tags: tagsOf(path), metadata, source: 'langgraph' };
    let added = await this.client.memories.add(body, scope);
    // Engram keeps one memory per statement of an end user: the same text under another key is stored
    // with the key appended, so that both items exist.
    if ('status' in added && added.status === 'skipped' && added.reason === 'duplicate_text') {
      added = await this.client.memories.add({ ...body, text: keyed(text, op.key) }, scope);
    }
    if ('status' in added && added.status === 'skipped')
      throw new Error(`EngramStore: the put of "${op.key}" was skipped (${added.reason})`);
  }

  private async searchItems(op: SearchOperation): Promise<SearchItem[]> {
    const [endUserId, path] = split(op.namespacePrefix, 'a search');
    const limit = op.limit ?? 10;
    const offset = op.offset ?? 0;
    const { equal, conditions } = splitFilter(op.filter ?? {});
    const filters: MemoryFilters = {
      tags_all: tagsOf(path),
      ...(Object.keys(equal).length > 0 ? { metadata: equal } : {}),
    };
    const found: SearchItem[] = [];
    if (op.query) {
      // The server ranks at most 100; conditions it cannot evaluate are applied to those.
      const k = Math.min(PAGE, conditions.length > 0 ? PAGE : offset + limit);
      const answer = await this.client.memories.query({ query: op.query, k, filters }, { endUserId });
      for (const memory of answer.memories as Array<Memory & { score: number }>) {
        if (matches(memory, conditions)) found.push({ ...itemOf(memory), score: memory.score });
      }
      return found.slice(offset, offset + limit);
    }
    let skipped = 0;
    for await (const memory of this.client.memories.listAll(
      { filters, order_by: 'updated_at', limit: PAGE },
      { endUserId },
    )) {
      if (!matches(memory as Memory, conditions)) continue;
      if (skipped++ < offset) continue;
      found.push(itemOf(memory as Memory));
      if (found.length >= limit) break;
    }
    return found;
  }

  private async namespaces(op: ListNamespacesOperation): Promise<string[][]> {
    const prefix = op.matchConditions?.find((c) => c.matchType === 'prefix')?.path;
    const endUserId = prefix?.[0];
    const memories: Memory[] = [];
    if (endUserId !== undefined && endUserId !== '*') {
      for await (const memory of this.client.memories.listAll(
        { filters: { tags_all: [STORE_TAG] }, limit: PAGE },
        { endUserId },
      ))
        memories.push(memory as Memory);
    } else {
      // Every end user: the project's export (read once, a page of rows at a time on the server).
      const exported = await this.client.memories.export();
      for (const memory of exported.memories as Memory[]) if (memory.tags.includes(STORE_TAG)) memories.push(memory);
    }
    const seen = new Map<string, string[]>();
    for (const memory of memories) {
      let namespace = namespaceOf(memory);
      if (!(op.matchConditions ?? []).every((c) => matchesCondition(namespace, c))) continue;
      if (op.maxDepth !== undefined) namespace = namespace.slice(0, op.maxDepth);
      seen.set(JSON.stringify(namespace), namespace);
    }
    const sorted = [...seen.values()].sort((a, b) => (a.join('\u0000') < b.join('\u0000') ? -1 : 1));
    return sorted.slice(op.offset, op.offset + op.limit);
  }

  /** The text Engram searches: the fields `index` names, else the first text field, else the value as JSON. */
  private textOf(value: Record<string, unknown>, index: false | string[] | undefined): string {
    if (Array.isArray(index) && index.length > 0) {
      const parts = index
        .map((field) => value[field])
        .filter((v) => v !== undefined)
        .map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
      if (parts.length > 0) return parts.join('\n');
    }
    for (const field of this.textFields) {
      const v = value[field];
      if (typeof v === 'string' && v.trim() !== '') return v;
    }
    return JSON.stringify(value);
  }
}

function keyed(text: string, key: string): string {
  return `${text} [${key}]`;
}

/** The end user and the tag path of a namespace. */
function split(namespace: string[], what = 'an item'): [string, string[]] {
  const [endUserId, ...path] = namespace;
  if (!endUserId)
    throw new TypeError(`EngramStore: ${what}'s namespace starts with the end user, e.g. ["user-42", "memories"]`);
  if (path.length > MAX_DEPTH) throw new TypeError(`EngramStore: a namespace has at most ${MAX_DEPTH + 1} segments`);
  for (const segment of path) {
    if (segment.length === 0 || segment.length > MAX_SEGMENT)
      throw new TypeError(
        `EngramStore: a namespace segment has 1-${MAX_SEGMENT} characters ("${segment.slice(0, 80)}")`,
      );
  }
  return [endUserId, path];
}

/** The tags of a namespace path: the store's own, then each segment with its depth, so that a prefix is a tags_all. */
function tagsOf(path: string[]): string[] {
  return [STORE_TAG, ...path.map((segment, i) => `ns${i + 1}:${segment}`)];
}

function namespaceOf(memory: Memory): string[] {
  const path = (memory.metadata as Filter)[NAMESPACE_KEY];
  return [String(memory.end_user_id), ...(Array.isArray(path) ? path.map(String) : [])];
}

function itemOf(memory: Memory): Item {
  const { [NAMESPACE_KEY]: _namespace, [ITEM_KEY]: key, [CREATED_KEY]: created, ...value } = memory.metadata as Filter;
  return {
    namespace: namespaceOf(memory),
    key: String(key),
    value,
    createdAt: new Date(typeof created === 'string' ? created : memory.created_at),
    updatedAt: new Date(memory.updated_at),
  };
}

/** Plain values (and $eq) are sent to the server as metadata equality; other operators are checked here. */
function splitFilter(filter: Filter): { equal: Filter; conditions: Array<[string, string, unknown]> } {
  const equal: Filter = {};
  const conditions: Array<[string, string, unknown]> = [];
  for (const [field, wanted] of Object.entries(filter)) {
    if (
      wanted !== null &&
      typeof wanted === 'object' &&
      !Array.isArray(wanted) &&
      Object.keys(wanted).some((k) => k.startsWith('$'))
    ) {
      for (const [operator, operand] of Object.entries(wanted)) {
        if (!OPERATORS.has(operator))
          throw new TypeError(`EngramStore: unsupported filter operator ${operator} (on ${field})`);
        if (operator === '$eq') equal[field] = operand;
        else conditions.push([field, operator, operand]);
      }
    } else {
      equal[field] = wanted;
    }
  }
  return { equal, conditions };
}

function matches(memory: Memory, conditions: Array<[string, string, unknown]>): boolean {
  const value = memory.metadata as Filter;
  return conditions.every(([field, operator, operand]) => {
    const actual = value[field] as never;
    switch (operator) {
      case '$ne':
        return JSON.stringify(actual) !== JSON.stringify(operand);
      case '$gt':
        return actual > (operand as never);
      case '$gte':
        return actual >= (operand as never);
      case '$lt':
        return actual < (operand as never);
      case '$lte':
        return actual <= (operand as never);
      case '$in':
        return Array.isArray(operand) && operand.some((o) => JSON.stringify(o) === JSON.stringify(actual));
      default:
        return Array.isArray(operand) && !operand.some((o) => JSON.stringify(o) === JSON.stringify(actual));
    }
  });
}

function matchesCondition(namespace: string[], condition: MatchCondition): boolean {
  const { path } = condition;
  if (path.length > namespace.length) return false;
  const part =
    condition.matchType === 'prefix'
      ? namespace.slice(0, path.length)
      : namespace.slice(namespace.length - path.length);
  return path.every((segment, i) => segment === '*' || segment === part[i]);
}
