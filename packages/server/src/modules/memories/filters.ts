import { Type, type Static } from '@sinclair/typebox';
import { sql, type ExpressionBuilder, type Expression, type SqlBool } from 'kysely';
import { canonicalJson } from '../../core/json.js';
import { compileBody, validationError } from '../../core/validation.js';
import type { Dialect } from '../../store/database.js';
import type { DB } from '../../store/schema.js';

/**
 * The filter object every operation that selects memories takes (query, retrieve's callers, summarize, synthesize,
 * the list and forgetting by scope), in one place: its schema, its exact evaluation over a memory (`matchesFilters`,
 * the reference) and the SQL that narrows rows to candidates for it (`filterConditions`, never dropping a match).
 */
export const Filters = Type.Object(
  {
    tags_any: Type.Optional(Type.Array(Type.String(), { maxItems: 50 })),
    tags_all: Type.Optional(Type.Array(Type.String(), { maxItems: 50 })),
    source: Type.Optional(Type.String()),
    created_after: Type.Optional(Type.String({ format: 'date-time' })),
    created_before: Type.Optional(Type.String({ format: 'date-time' })),
    metadata: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Equality on each key' })),
    is_summary: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type FiltersInput = Static<typeof Filters>;

/** What filters read of a memory (retrieval keeps it beside its index; a listed row gives it too). */
export interface FilterSubject {
  tags: string[];
  source: string | null;
  /** Milliseconds since the epoch. */
  createdAt: number;
  metadata: Record<string, unknown>;
  isSummary: boolean;
}

/** Whether a memory passes the filters: the exact rule, which the SQL below only approximates from above. */
export function matchesFilters(m: FilterSubject, f: FiltersInput | undefined): boolean {
  if (!f) return true;
  if (f.tags_any && f.tags_any.length > 0 && !f.tags_any.some((t) => m.tags.includes(t))) return false;
  if (f.tags_all && !f.tags_all.every((t) => m.tags.includes(t))) return false;
  if (f.source !== undefined && m.source !== f.source) return false;
  if (f.created_after !== undefined && !(m.createdAt > Date.parse(f.created_after))) return false;
  if (f.created_before !== undefined && !(m.createdAt < Date.parse(f.created_before))) return false;
  if (f.is_summary !== undefined && m.isSummary !== f.is_summary) return false;
  if (f.metadata) {
    for (const [key, value] of Object.entries(f.metadata)) {
      if (canonicalJson(m.metadata[key]) !== canonicalJson(value)) return false;
    }
  }
  return true;
}

const validFilters = compileBody<FiltersInput>(Filters);

/** Filters sent as text (a query-string parameter), parsed and validated as a body's would be; 400 naming `field/...`. */
export function filtersFrom(value: unknown, field: string): FiltersInput {
  if (validFilters(value)) return value;
  const error = validationError(validFilters.errors, field);
  throw error.field && error.field !== field ? Object.assign(error, { field: `${field}/${error.field}` }) : error;
}

type MemoryWhere = ExpressionBuilder<DB, 'memories'>;

/**
 * SQL conditions on `memories` that every memory passing the filters meets. Exact (`exact: true`) unless a metadata
 * value is an object or array on SQLite, whose JSON text keeps its key order: then rows must also pass matchesFilters.
 */
export function filterConditions(dialect: Dialect, f: FiltersInput | undefined): { where: (eb: MemoryWhere) => Expression<SqlBool>; exact: boolean } {
  let exact = true;
  const parts: Array<(eb: MemoryWhere) => Expression<SqlBool>> = [];
  if (f?.tags_any && f.tags_any.length > 0) {
    const tags = f.tags_any;
    parts.push(() => dialect === 'postgres'
      ? sql<SqlBool>`memories.tags ?| ${sql.val(tags)}::text[]`
      : sql<SqlBool>`EXISTS (SELECT 1 FROM json_each(memories.tags) WHERE json_each.value IN (${sql.join(tags)}))`);
  }
  if (f?.tags_all && f.tags_all.length > 0) {
    const tags = f.tags_all;
    parts.push(() => dialect === 'postgres'
      ? sql<SqlBool>`memories.tags @> ${JSON.stringify(tags)}::jsonb`
      : sql<SqlBool>`(SELECT count(DISTINCT json_each.value) FROM json_each(memories.tags) WHERE json_each.value IN (${sql.join(tags)})) = ${new Set(tags).size}`);
  }
  if (f?.source !== undefined) parts.push((eb) => eb('memories.source', '=', f.source!));
  if (f?.created_after !== undefined) parts.push((eb) => eb('memories.created_at', '>', new Date(f.created_after!).toISOString()));
  if (f?.created_before !== undefined) parts.push((eb) => eb('memories.created_at', '<', new Date(f.created_before!).toISOString()));
  if (f?.is_summary !== undefined) {
    parts.push(() => (dialect === 'postgres' ? sql<SqlBool>`memories.is_summary = ${f.is_summary}` : sql<SqlBool>`memories.is_summary = ${f.is_summary ? 1 : 0}`));
  }
  for (const [key, value] of Object.entries(f?.metadata ?? {})) {
    if (value === undefined) continue;
    if (dialect === 'postgres') {
      parts.push(() => sql<SqlBool>`memories.metadata -> ${key} = ${JSON.stringify(value)}::jsonb`);
      continue;
    }
    const [type, atom] = sqliteJsonAtom(value);
    if (type[0] === 'array' || type[0] === 'object') exact = false;
    parts.push(() => sql<SqlBool>`EXISTS (SELECT 1 FROM json_each(memories.metadata) WHERE json_each.key = ${key} AND json_each.type IN (${sql.join(type)})${
      atom === undefined ? sql`` : sql` AND json_each.atom = ${atom}`})`);
  }
  return { where: (eb) => eb.and(parts.map((part) => part(eb))), exact };
}

/** SQLite json_each's types for a JSON value, and its atom when it has one (objects and arrays have none). */
function sqliteJsonAtom(value: unknown): [string[], string | number | undefined] {
  if (value === null) return [['null'], undefined];
  if (typeof value === 'boolean') return [[value ? 'true' : 'false'], undefined];
  if (typeof value === 'number') return [['integer', 'real'], value];
  if (typeof value === 'string') return [['text'], value];
  return [[Array.isArray(value) ? 'array' : 'object'], undefined];
}
