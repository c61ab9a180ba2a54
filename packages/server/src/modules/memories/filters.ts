import { Type, type Static } from '@sinclair/typebox';
import { bodyAjv, compileBody, validationError } from '../../core/validation.js';

/**
 * The filter object every operation that selects memories takes (query, retrieve's callers, summarize, synthesize,
 * the list, export and forgetting by scope), in one place: here its schema and language check (`filterProblem`, a
 * 400 naming the path) and its parsed tree; its exact evaluation over a memory (`matchesFilters`, the reference) is
 * in filter-match.ts and the SQL that narrows rows to candidates for it (`filterConditions`, never dropping a match)
 * in filter-sql.ts.
 *
 * The language: a field is matched by a plain value (equality) or an object of operators ($eq, $ne, $in, $nin, $gt,
 * $gte, $lt, $lte, $exists, $contains); conditions side by side all hold; $and, $or (lists) and $not combine filter
 * objects. Fields: tags, text, source, session_id, importance, created_at, updated_at, is_summary, and metadata (each
 * key a path, dots between nested keys). The older keys (tags_any, tags_all, created_after, created_before) keep their
 * meaning.
 */

const OPERATORS = ['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte', '$exists', '$contains'] as const;
export type Operator = (typeof OPERATORS)[number];

const Condition = (description: string) => Type.Unknown({ description });
const operatorText = 'a value (equality) or an object of operators';

export const Filters = Type.Object(
  {
    tags: Type.Optional(
      Condition(`Tags: ${operatorText}: a tag (has it), $eq, $ne, $contains, $in (any of), $nin (none of)`),
    ),
    tags_any: Type.Optional(
      Type.Array(Type.String(), { maxItems: 50, description: 'Has any of these tags (tags: {$in: [...]})' }),
    ),
    tags_all: Type.Optional(Type.Array(Type.String(), { maxItems: 50, description: 'Has every one of these tags' })),
    text: Type.Optional(
      Condition(`The text: ${operatorText}: $eq, $ne, $in, $nin, $contains (a substring, case-sensitive)`),
    ),
    source: Type.Optional(Condition(`The source (null: none): ${operatorText}: $eq, $ne, $in, $nin, $exists`)),
    session_id: Type.Optional(Condition(`The session (null: none): ${operatorText}: $eq, $ne, $in, $nin, $exists`)),
    importance: Type.Optional(Condition(`Importance: ${operatorText}: $eq, $ne, $in, $nin, $gt, $gte, $lt, $lte`)),
    created_at: Type.Optional(
      Condition(`When it happened (date-time): ${operatorText}: $eq, $ne, $gt, $gte, $lt, $lte`),
    ),
    updated_at: Type.Optional(
      Condition(`When it last changed (date-time): ${operatorText}: $eq, $ne, $gt, $gte, $lt, $lte`),
    ),
    created_after: Type.Optional(Type.String({ format: 'date-time', description: 'created_at: {$gt: ...}' })),
    created_before: Type.Optional(Type.String({ format: 'date-time', description: 'created_at: {$lt: ...}' })),
    metadata: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description:
            'Each key a path into the metadata (dots between nested keys), matched by a value (equality, objects and arrays ' +
            'included) or an object of operators: $eq, $ne, $in, $nin, $gt, $gte, $lt, $lte (numbers, or strings by code point), ' +
            '$exists, $contains (a substring of a string, an element of an array)',
        },
      ),
    ),
    is_summary: Type.Optional(Condition(`Whether it is a summary: ${operatorText}: $eq, $ne`)),
    $and: Type.Optional(
      Type.Array(Type.Object({}, { additionalProperties: true }), {
        maxItems: 20,
        description: 'Every one of these filter objects holds',
      }),
    ),
    $or: Type.Optional(
      Type.Array(Type.Object({}, { additionalProperties: true }), {
        maxItems: 20,
        description: 'At least one of these filter objects holds',
      }),
    ),
    $not: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: 'This filter object does not hold' }),
    ),
  },
  {
    additionalProperties: false,
    $id: 'Filters',
    'x-engram-filters': true,
    examples: [
      {
        tags: { $in: ['work', 'travel'] },
        importance: { $gte: 0.5 },
        metadata: { 'trip.year': { $gte: 2024 }, mood: { $ne: 'sad' } },
      },
      { $or: [{ source: 'chat' }, { text: { $contains: 'flight' } }], created_at: { $gte: '2025-01-01T00:00:00Z' } },
    ],
  },
);
export type FiltersInput = Static<typeof Filters>;

/** What filters read of a memory (retrieval keeps most of it beside its index, `text` only where the filters name it). */
export interface FilterSubject {
  tags: string[];
  source: string | null;
  /** Milliseconds since the epoch. */
  createdAt: number;
  metadata: Record<string, unknown>;
  isSummary: boolean;
  sessionId: string | null;
  importance: number;
  /** Milliseconds since the epoch. */
  updatedAt: number;
  text?: string;
}

export type ColumnField =
  | 'tags'
  | 'text'
  | 'source'
  | 'session_id'
  | 'importance'
  | 'created_at'
  | 'updated_at'
  | 'is_summary';
export type Leaf = { kind: 'leaf'; field: ColumnField | 'metadata'; path: string[]; op: Operator; value: unknown };
export type Node = Leaf | { kind: 'and' | 'or'; nodes: Node[] } | { kind: 'not'; node: Node };

const FIELD_OPERATORS: Record<ColumnField | 'metadata', readonly Operator[]> = {
  tags: ['$eq', '$ne', '$contains', '$in', '$nin'],
  text: ['$eq', '$ne', '$in', '$nin', '$contains'],
  source: ['$eq', '$ne', '$in', '$nin', '$exists'],
  session_id: ['$eq', '$ne', '$in', '$nin', '$exists'],
  importance: ['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte'],
  created_at: ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte'],
  updated_at: ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte'],
  is_summary: ['$eq', '$ne'],
  metadata: OPERATORS,
};
const COLUMN_FIELDS = Object.keys(FIELD_OPERATORS).filter((f) => f !== 'metadata') as ColumnField[];
const MAX_DEPTH = 6;
const MAX_LIST = 100;
const MAX_CONDITIONS = 200;

class FilterError extends Error {
  constructor(
    readonly path: string[],
    message: string,
  ) {
    super(message);
  }
}

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);
const isDate = (v: unknown): v is string =>
  typeof v === 'string' &&
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(v) &&
  !Number.isNaN(Date.parse(v));

/** The type an operand of this field must have, as a check and the words of its 400. */
function operandRule(field: ColumnField | 'metadata', op: Operator): [(v: unknown) => boolean, string] {
  if (op === '$exists') return [(v) => typeof v === 'boolean', 'true or false'];
  switch (field) {
    case 'tags':
      return [(v) => typeof v === 'string', 'a tag (a string)'];
    case 'text':
      return [(v) => typeof v === 'string', 'a string'];
    case 'source':
    case 'session_id':
      return [(v) => typeof v === 'string' || v === null, 'a string or null'];
    case 'importance':
      return [(v) => typeof v === 'number' && Number.isFinite(v), 'a number'];
    case 'created_at':
    case 'updated_at':
      return [isDate, 'a date-time (RFC 3339)'];
    case 'is_summary':
      return [(v) => typeof v === 'boolean', 'true or false'];
    case 'metadata':
      if (op === '$gt' || op === '$gte' || op === '$lt' || op === '$lte') {
        return [(v) => (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'string', 'a number or a string'];
      }
      if (op === '$contains')
        return [
          (v) => v === null || ['string', 'number', 'boolean'].includes(typeof v),
          'a string, number, boolean or null',
        ];
      return [() => true, 'any JSON value'];
  }
}

/** The filter object as a tree of conditions, or a FilterError naming the first wrong path. */
function parse(f: unknown, at: string[], depth: number, counter: { n: number }): Node {
  if (!isPlainObject(f)) throw new FilterError(at, 'must be a filter object');
  if (depth > MAX_DEPTH) throw new FilterError(at, `nests more than ${MAX_DEPTH} levels`);
  const nodes: Node[] = [];
  const leaf = (field: Leaf['field'], path: string[], op: Operator, value: unknown, where: string[]) => {
    if (++counter.n > MAX_CONDITIONS)
      throw new FilterError(where, `filters hold more than ${MAX_CONDITIONS} conditions`);
    const [ok, words] = operandRule(field, op);
    if (op === '$in' || op === '$nin') {
      if (!Array.isArray(value)) throw new FilterError(where, 'must be a list');
      if (value.length > MAX_LIST) throw new FilterError(where, `must hold at most ${MAX_LIST} values`);
      value.forEach((v, i) => {
        if (!ok(v)) throw new FilterError([...where, String(i)], `must be ${words}`);
      });
    } else if (!ok(value)) {
      throw new FilterError(where, `must be ${words}`);
    }
    nodes.push({ kind: 'leaf', field, path, op, value });
  };
  const condition = (field: Leaf['field'], path: string[], value: unknown, where: string[]) => {
    const keys = isPlainObject(value) ? Object.keys(value) : [];
    const operators = keys.filter((k) => k.startsWith('$'));
    if (operators.length === 0) {
      // A plain value is equality (an object without operators too, on metadata).
      if (field === 'tags' && Array.isArray(value))
        throw new FilterError(
          where,
          'must be a tag or operators; for a list use {"$in": [...]} (any) or tags_all (every)',
        );
      return leaf(field, path, '$eq', value, where);
    }
    if (operators.length !== keys.length) {
      const plain = keys.find((k) => !k.startsWith('$'))!;
      throw new FilterError([...where, plain], 'cannot stand beside operators: use {"$eq": {...}} for an object value');
    }
    if (keys.length === 0) throw new FilterError(where, 'must name at least one operator');
    for (const op of keys) {
      if (!(OPERATORS as readonly string[]).includes(op))
        throw new FilterError([...where, op], `is not a filter operator (${OPERATORS.join(', ')})`);
      if (!FIELD_OPERATORS[field].includes(op as Operator)) {
        throw new FilterError([...where, op], `is not an operator of ${field} (${FIELD_OPERATORS[field].join(', ')})`);
      }
      leaf(field, path, op as Operator, (value as Record<string, unknown>)[op], [...where, op]);
    }
  };
  for (const [key, value] of Object.entries(f)) {
    if (value === undefined) continue;
    const where = [...at, key];
    if ((COLUMN_FIELDS as string[]).includes(key)) condition(key as ColumnField, [], value, where);
    else if (key === 'metadata') {
      if (!isPlainObject(value)) throw new FilterError(where, 'must be an object of metadata paths');
      for (const [path, v] of Object.entries(value)) {
        if (v === undefined) continue;
        const segments = path.split('.');
        if (segments.some((s) => s === ''))
          throw new FilterError([...where, path], 'is not a metadata path (keys joined by single dots)');
        condition('metadata', segments, v, [...where, path]);
      }
    } else if (key === 'tags_any' || key === 'tags_all' || key === 'created_after' || key === 'created_before') {
      if (key === 'tags_any' || key === 'tags_all') {
        if (!Array.isArray(value)) throw new FilterError(where, 'must be a list of tags');
        value.forEach((t, i) => {
          if (typeof t !== 'string') throw new FilterError([...where, String(i)], 'must be a tag (a string)');
        });
        if (key === 'tags_any' && value.length > 0) leaf('tags', [], '$in', value, where);
        if (key === 'tags_all') for (const t of value) leaf('tags', [], '$contains', t, where);
      } else {
        leaf('created_at', [], key === 'created_after' ? '$gt' : '$lt', value, where);
      }
    } else if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0)
        throw new FilterError(where, 'must be a non-empty list of filter objects');
      const children = value.map((v, i) => parse(v, [...where, String(i)], depth + 1, counter));
      nodes.push({ kind: key === '$and' ? 'and' : 'or', nodes: children });
    } else if (key === '$not') {
      nodes.push({ kind: 'not', node: parse(value, where, depth + 1, counter) });
    } else {
      throw new FilterError(
        where,
        key.startsWith('$')
          ? 'is not a filter operator here ($and, $or, $not combine filter objects)'
          : 'is not a recognised field',
      );
    }
  }
  return nodes.length === 1 ? nodes[0]! : { kind: 'and', nodes };
}

/** Parsed filter trees by filter object: a request's filters are checked by validation, then read by every row it tests. */
const parsed = new WeakMap<object, Node>();

export function treeOf(f: FiltersInput): Node {
  let node = parsed.get(f);
  if (!node) {
    node = parse(f, [], 0, { n: 0 });
    parsed.set(f, node);
  }
  return node;
}

/** The 400 for a filter object outside the language, or null: path and message, for the validator below. */
export function filterProblem(f: unknown): { path: string[]; message: string } | null {
  try {
    if (isPlainObject(f)) treeOf(f as FiltersInput);
    else parse(f, [], 0, { n: 0 });
    return null;
  } catch (error) {
    if (error instanceof FilterError) return { path: error.path, message: error.message };
    throw error;
  }
}

// Every schema that embeds Filters checks the language where it validates, so each route's 400 names the path.
if (!bodyAjv.getKeyword('x-engram-filters')) {
  const check = (_schema: unknown, data: unknown, _parent: unknown, cxt?: { instancePath: string }): boolean => {
    const problem = filterProblem(data);
    if (!problem) return true;
    const pointer = problem.path.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
    check.errors = [
      {
        instancePath: `${cxt?.instancePath ?? ''}/${pointer}`,
        keyword: 'filters',
        params: {},
        message: problem.message,
      },
    ];
    return false;
  };
  check.errors = [] as unknown[];
  for (const ajv of [bodyAjv]) ajv.addKeyword({ keyword: 'x-engram-filters', errors: true, validate: check as never });
}

/** Whether the filters read a memory's text (retrieval keeps none beside its index: it asks SQL for those). */
export function filtersReadText(f: FiltersInput | undefined): boolean {
  if (!f) return false;
  const reads = (n: Node): boolean =>
    n.kind === 'leaf' ? n.field === 'text' : n.kind === 'not' ? reads(n.node) : n.nodes.some(reads);
  return reads(treeOf(f));
}

const validFilters = compileBody<FiltersInput>(Filters);

/** Filters sent as text (a query-string parameter), parsed and validated as a body's would be; 400 naming `field/...`. */
export function filtersFrom(value: unknown, field: string): FiltersInput {
  if (validFilters(value)) return value;
  const error = validationError(validFilters.errors, field);
  throw error.field && error.field !== field ? Object.assign(error, { field: `${field}/${error.field}` }) : error;
}
