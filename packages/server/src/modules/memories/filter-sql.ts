import { sql, type ExpressionBuilder, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import type { Dialect } from '../../store/database.js';
import type { DB } from '../../store/schema.js';
import { treeOf, type ColumnField, type FiltersInput, type Leaf, type Node } from './filters.js';

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
