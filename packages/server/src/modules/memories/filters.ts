import { Type, type Static } from '@sinclair/typebox';
import { sql, type ExpressionBuilder, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import { canonicalJson } from '../../core/json.js';
import { bodyAjv, compileBody, validationError } from '../../core/validation.js';
import type { Dialect } from '../../store/database.js';
import type { DB } from '../../store/schema.js';

/**
 * The filter object every operation that selects memories takes (query, retrieve's callers, summarize, synthesize,
 * the list, export and forgetting by scope), in one place: its schema and language check (`checkFilters`, a 400
 * naming the path), its exact evaluation over a memory (`matchesFilters`, the reference) and the SQL that narrows
 * rows to candidates for it (`filterConditions`, never dropping a match).
 *
 * The language: a field is matched by a plain value (equality) or an object of operators ($eq, $ne, $in, $nin, $gt,
 * $gte, $lt, $lte, $exists, $contains); conditions side by side all hold; $and, $or (lists) and $not combine filter
 * objects. Fields: tags, text, source, session_id, importance, created_at, updated_at, is_summary, and metadata (each
 * key a path, dots between nested keys). The older keys (tags_any, tags_all, created_after, created_before) keep their
 * meaning.
 */

const OPERATORS = ['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte', '$exists', '$contains'] as const;
type Operator = (typeof OPERATORS)[number];

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

type ColumnField =
  | 'tags'
  | 'text'
  | 'source'
  | 'session_id'
  | 'importance'
  | 'created_at'
  | 'updated_at'
  | 'is_summary';
type Leaf = { kind: 'leaf'; field: ColumnField | 'metadata'; path: string[]; op: Operator; value: unknown };
type Node = Leaf | { kind: 'and' | 'or'; nodes: Node[] } | { kind: 'not'; node: Node };

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

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
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

function treeOf(f: FiltersInput): Node {
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

/** Compares strings by code point, as SQLite's BINARY and PostgreSQL's "C" collation order UTF-8. */
function compareText(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

const jsonEqual = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);

function metadataAt(metadata: Record<string, unknown>, path: string[]): { present: boolean; value?: unknown } {
  let value: unknown = metadata;
  for (const key of path) {
    if (!isPlainObject(value) || !Object.hasOwn(value, key)) return { present: false };
    value = value[key];
  }
  return { present: true, value };
}

function compareOrdered(op: Operator, d: number): boolean {
  return op === '$gt' ? d > 0 : op === '$gte' ? d >= 0 : op === '$lt' ? d < 0 : d <= 0;
}

function leafHolds(m: FilterSubject, leaf: Leaf): boolean {
  const { op, value } = leaf;
  switch (leaf.field) {
    case 'tags': {
      if (op === '$in') return (value as string[]).some((t) => m.tags.includes(t));
      if (op === '$nin') return !(value as string[]).some((t) => m.tags.includes(t));
      return m.tags.includes(value as string) === (op !== '$ne');
    }
    case 'metadata': {
      const at = metadataAt(m.metadata, leaf.path);
      const eq = (v: unknown) => at.present && jsonEqual(at.value, v);
      switch (op) {
        case '$eq':
          return eq(value);
        case '$ne':
          return !eq(value);
        case '$in':
          return (value as unknown[]).some(eq);
        case '$nin':
          return !(value as unknown[]).some(eq);
        case '$exists':
          return at.present === value;
        case '$contains':
          if (typeof at.value === 'string') return typeof value === 'string' && at.value.includes(value);
          return Array.isArray(at.value) && at.value.some((e) => jsonEqual(e, value));
        default:
          if (typeof value === 'number') return typeof at.value === 'number' && compareOrdered(op, at.value - value);
          return typeof at.value === 'string' && compareOrdered(op, compareText(at.value, value as string));
      }
    }
    default: {
      const actual = columnValue(m, leaf.field);
      const operand = (v: unknown) =>
        leaf.field === 'created_at' || leaf.field === 'updated_at' ? Date.parse(v as string) : v;
      switch (op) {
        case '$eq':
          return actual === operand(value);
        case '$ne':
          return actual !== operand(value);
        case '$in':
          return (value as unknown[]).some((v) => actual === operand(v));
        case '$nin':
          return !(value as unknown[]).some((v) => actual === operand(v));
        case '$exists':
          return (actual !== null) === value;
        case '$contains':
          return typeof actual === 'string' && actual.includes(value as string);
        default:
          return actual !== null && compareOrdered(op, (actual as number) - (operand(value) as number));
      }
    }
  }
}

function columnValue(m: FilterSubject, field: Exclude<ColumnField, 'tags'>): unknown {
  switch (field) {
    case 'text':
      if (m.text === undefined) throw new Error('a text filter was evaluated without the text');
      return m.text;
    case 'source':
      return m.source;
    case 'session_id':
      return m.sessionId;
    case 'importance':
      return m.importance;
    case 'created_at':
      return m.createdAt;
    case 'updated_at':
      return m.updatedAt;
    case 'is_summary':
      return m.isSummary;
  }
}

function holds(m: FilterSubject, node: Node): boolean {
  switch (node.kind) {
    case 'leaf':
      return leafHolds(m, node);
    case 'and':
      return node.nodes.every((n) => holds(m, n));
    case 'or':
      return node.nodes.some((n) => holds(m, n));
    case 'not':
      return !holds(m, node.node);
  }
}

/** Whether a memory passes the filters: the exact rule, which the SQL below only approximates from above. */
export function matchesFilters(m: FilterSubject, f: FiltersInput | undefined): boolean {
  if (!f) return true;
  return holds(m, treeOf(f));
}

const validFilters = compileBody<FiltersInput>(Filters);

/** Filters sent as text (a query-string parameter), parsed and validated as a body's would be; 400 naming `field/...`. */
export function filtersFrom(value: unknown, field: string): FiltersInput {
  if (validFilters(value)) return value;
  const error = validationError(validFilters.errors, field);
  throw error.field && error.field !== field ? Object.assign(error, { field: `${field}/${error.field}` }) : error;
}

type MemoryWhere = ExpressionBuilder<DB, 'memories'>;
type Narrowing = { sql: RawBuilder<SqlBool>; exact: boolean } | null;

/**
 * SQL conditions on `memories` that every memory passing the filters meets. Exact (`exact: true`) unless some
 * condition could not be said exactly in SQL (an object or array compared on SQLite, whose JSON text keeps its key
 * order; a metadata key SQLite's path syntax cannot name): then rows must also pass matchesFilters. Every condition
 * is true or false, never NULL, so $not negates exactly.
 */
export function filterConditions(
  dialect: Dialect,
  f: FiltersInput | undefined,
): { where: (eb: MemoryWhere) => Expression<SqlBool>; exact: boolean } {
  if (!f) return { where: (eb) => eb.and([]), exact: true };
  const narrowing = nodeSql(dialect, treeOf(f));
  if (!narrowing) return { where: (eb) => eb.and([]), exact: false };
  return { where: () => narrowing.sql, exact: narrowing.exact };
}

function nodeSql(dialect: Dialect, node: Node): Narrowing {
  switch (node.kind) {
    case 'leaf': {
      const condition = leafSql(dialect, node);
      return condition && { sql: sql<SqlBool>`COALESCE((${condition.sql}), FALSE)`, exact: condition.exact };
    }
    case 'and': {
      const parts = node.nodes.map((n) => nodeSql(dialect, n));
      if (parts.length === 0) return { sql: sql<SqlBool>`TRUE`, exact: true };
      const known = parts.filter((p): p is NonNullable<Narrowing> => p !== null);
      if (known.length === 0) return null;
      return {
        sql: sql<SqlBool>`(${sql.join(
          known.map((p) => p.sql),
          sql` AND `,
        )})`,
        exact: known.length === parts.length && known.every((p) => p.exact),
      };
    }
    case 'or': {
      const parts = node.nodes.map((n) => nodeSql(dialect, n));
      if (parts.some((p) => p === null)) return null;
      return {
        sql: sql<SqlBool>`(${sql.join(
          parts.map((p) => p!.sql),
          sql` OR `,
        )})`,
        exact: parts.every((p) => p!.exact),
      };
    }
    case 'not': {
      const inner = nodeSql(dialect, node.node);
      // Only an exact condition can be negated: NOT of a wider one would drop matches.
      return inner?.exact ? { sql: sql<SqlBool>`NOT ${inner.sql}`, exact: true } : null;
    }
  }
}

const COLUMNS: Record<Exclude<ColumnField, 'tags'>, RawBuilder<unknown>> = {
  text: sql.ref('memories.text'),
  source: sql.ref('memories.source'),
  session_id: sql.ref('memories.session_id'),
  importance: sql.ref('memories.importance'),
  created_at: sql.ref('memories.created_at'),
  updated_at: sql.ref('memories.updated_at'),
  is_summary: sql.ref('memories.is_summary'),
};
const SQL_COMPARISON: Record<'$gt' | '$gte' | '$lt' | '$lte', string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

function leafSql(dialect: Dialect, leaf: Leaf): Narrowing {
  if (leaf.field === 'tags') return { sql: tagsSql(dialect, leaf), exact: true };
  if (leaf.field === 'metadata') return metadataSql(dialect, leaf);
  const column = COLUMNS[leaf.field];
  const operand = (v: unknown): unknown => {
    if (leaf.field === 'created_at' || leaf.field === 'updated_at') return new Date(v as string).toISOString();
    if (leaf.field === 'is_summary' && dialect === 'sqlite') return v ? 1 : 0;
    return v;
  };
  const equals = (v: unknown) =>
    v === null ? sql<SqlBool>`${column} IS NULL` : sql<SqlBool>`${column} = ${operand(v)}`;
  const anyOf = (values: unknown[]) => sql<SqlBool>`(${sql.join(values.map(equals), sql` OR `)})`;
  switch (leaf.op) {
    case '$eq':
      return { sql: equals(leaf.value), exact: true };
    case '$ne':
      return { sql: sql<SqlBool>`NOT COALESCE(${equals(leaf.value)}, FALSE)`, exact: true };
    case '$in':
      return {
        sql: (leaf.value as unknown[]).length === 0 ? sql<SqlBool>`FALSE` : anyOf(leaf.value as unknown[]),
        exact: true,
      };
    case '$nin':
      return {
        sql:
          (leaf.value as unknown[]).length === 0
            ? sql<SqlBool>`TRUE`
            : sql<SqlBool>`NOT COALESCE(${anyOf(leaf.value as unknown[])}, FALSE)`,
        exact: true,
      };
    case '$exists':
      return { sql: leaf.value ? sql<SqlBool>`${column} IS NOT NULL` : sql<SqlBool>`${column} IS NULL`, exact: true };
    case '$contains':
      return {
        sql:
          dialect === 'postgres'
            ? sql<SqlBool>`strpos(${column}, ${leaf.value}) > 0`
            : sql<SqlBool>`instr(${column}, ${leaf.value}) > 0`,
        exact: true,
      };
    default:
      return { sql: sql<SqlBool>`${column} ${sql.raw(SQL_COMPARISON[leaf.op])} ${operand(leaf.value)}`, exact: true };
  }
}

function tagsSql(dialect: Dialect, leaf: Leaf): RawBuilder<SqlBool> {
  const hasAny = (tags: string[]) =>
    tags.length === 0
      ? sql<SqlBool>`FALSE`
      : dialect === 'postgres'
        ? sql<SqlBool>`memories.tags ?| ${sql.val(tags)}::text[]`
        : sql<SqlBool>`EXISTS (SELECT 1 FROM json_each(memories.tags) WHERE json_each.value IN (${sql.join(tags)}))`;
  switch (leaf.op) {
    case '$in':
      return hasAny(leaf.value as string[]);
    case '$nin':
      return sql<SqlBool>`NOT ${hasAny(leaf.value as string[])}`;
    case '$ne':
      return sql<SqlBool>`NOT ${hasAny([leaf.value as string])}`;
    default:
      return hasAny([leaf.value as string]);
  }
}

/** SQLite json_each's types for a JSON value, and its atom when it has one (objects and arrays have none). */
function sqliteJsonAtom(value: unknown): [string[], string | number | undefined] {
  if (value === null) return [['null'], undefined];
  if (typeof value === 'boolean') return [[value ? 'true' : 'false'], undefined];
  if (typeof value === 'number') return [Number.isInteger(value) ? ['integer', 'real'] : ['real', 'integer'], value];
  if (typeof value === 'string') return [['text'], value];
  return [[Array.isArray(value) ? 'array' : 'object'], undefined];
}

function metadataSql(dialect: Dialect, leaf: Leaf): Narrowing {
  return dialect === 'postgres' ? metadataPostgres(leaf) : metadataSqlite(leaf);
}

function metadataPostgres(leaf: Leaf): Narrowing {
  // `#>` would read a digit key of an array as its index, where the path names object keys only: left to matchesFilters.
  if (leaf.path.some((k) => /^-?\d+$/.test(k))) return null;
  const at = sql`(memories.metadata #> ${sql.val(leaf.path)}::text[])`;
  const equals = (v: unknown) => sql<SqlBool>`${at} = ${JSON.stringify(v)}::jsonb`;
  const anyOf = (values: unknown[]) =>
    values.length === 0
      ? sql<SqlBool>`FALSE`
      : sql<SqlBool>`${at} IN (${sql.join(values.map((v) => sql`${JSON.stringify(v)}::jsonb`))})`;
  switch (leaf.op) {
    case '$eq':
      return { sql: equals(leaf.value), exact: true };
    case '$ne':
      return { sql: sql<SqlBool>`NOT COALESCE(${equals(leaf.value)}, FALSE)`, exact: true };
    case '$in':
      return { sql: anyOf(leaf.value as unknown[]), exact: true };
    case '$nin':
      return { sql: sql<SqlBool>`NOT COALESCE(${anyOf(leaf.value as unknown[])}, FALSE)`, exact: true };
    case '$exists':
      return { sql: leaf.value ? sql<SqlBool>`${at} IS NOT NULL` : sql<SqlBool>`${at} IS NULL`, exact: true };
    case '$contains': {
      const v = leaf.value;
      const asString = typeof v === 'string' ? sql`WHEN 'string' THEN strpos(${at} #>> '{}', ${v}) > 0` : sql``;
      return {
        sql: sql<SqlBool>`CASE jsonb_typeof(${at}) ${asString} WHEN 'array' THEN ${at} @> jsonb_build_array(${JSON.stringify(v)}::jsonb) ELSE FALSE END`,
        exact: true,
      };
    }
    default: {
      const op = sql.raw(SQL_COMPARISON[leaf.op]);
      const v = leaf.value;
      return typeof v === 'number'
        ? {
            sql: sql<SqlBool>`CASE WHEN jsonb_typeof(${at}) = 'number' THEN (${at})::numeric ${op} ${String(v)}::numeric ELSE FALSE END`,
            exact: true,
          }
        : {
            sql: sql<SqlBool>`CASE WHEN jsonb_typeof(${at}) = 'string' THEN (${at} #>> '{}') COLLATE "C" ${op} ${v} ELSE FALSE END`,
            exact: true,
          };
    }
  }
}

function metadataSqlite(leaf: Leaf): Narrowing {
  // A key with a double quote cannot be named in SQLite's path syntax: such a condition is left to matchesFilters.
  if (leaf.path.some((k) => k.includes('"'))) return null;
  const path = `$${leaf.path.map((k) => `."${k}"`).join('')}`;
  const type = sql`json_type(memories.metadata, ${path})`;
  const value = sql`json_extract(memories.metadata, ${path})`;
  let exact = true;
  const equals = (v: unknown) => {
    const [types, atom] = sqliteJsonAtom(v);
    // An object or array's JSON text keeps its key order: only its type narrows.
    if (types[0] === 'array' || types[0] === 'object') exact = false;
    return sql<SqlBool>`(${type} IN (${sql.join(types)})${atom === undefined ? sql`` : sql` AND ${value} = ${atom}`})`;
  };
  const anyOf = (values: unknown[]) =>
    values.length === 0 ? sql<SqlBool>`FALSE` : sql<SqlBool>`(${sql.join(values.map(equals), sql` OR `)})`;
  let condition: RawBuilder<SqlBool>;
  switch (leaf.op) {
    case '$eq':
      condition = equals(leaf.value);
      break;
    case '$in':
      condition = anyOf(leaf.value as unknown[]);
      break;
    case '$ne':
    case '$nin': {
      const inner = leaf.op === '$ne' ? equals(leaf.value) : anyOf(leaf.value as unknown[]);
      if (!exact) return null;
      condition = sql<SqlBool>`NOT COALESCE(${inner}, FALSE)`;
      break;
    }
    case '$exists':
      condition = leaf.value ? sql<SqlBool>`${type} IS NOT NULL` : sql<SqlBool>`${type} IS NULL`;
      break;
    case '$contains': {
      const [types, atom] = sqliteJsonAtom(leaf.value);
      const element = sql<SqlBool>`EXISTS (SELECT 1 FROM json_each(memories.metadata, ${path}) e WHERE e.type IN (${sql.join(types)})${atom === undefined ? sql`` : sql` AND e.atom = ${atom}`})`;
      const asString =
        typeof leaf.value === 'string' ? sql`WHEN 'text' THEN instr(${value}, ${leaf.value}) > 0` : sql``;
      condition = sql<SqlBool>`CASE ${type} ${asString} WHEN 'array' THEN ${element} ELSE FALSE END`;
      break;
    }
    default: {
      const op = sql.raw(SQL_COMPARISON[leaf.op]);
      const types = typeof leaf.value === 'number' ? ['integer', 'real'] : ['text'];
      condition = sql<SqlBool>`(${type} IN (${sql.join(types)}) AND ${value} ${op} ${leaf.value})`;
    }
  }
  return { sql: condition, exact };
}
