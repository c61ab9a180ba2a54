import { canonicalJson } from '../../core/json.js';
import {
  isPlainObject,
  treeOf,
  type ColumnField,
  type FilterSubject,
  type FiltersInput,
  type Leaf,
  type Node,
  type Operator,
} from './filters.js';

/** The filters' exact rule over one memory: the reference the SQL of filter-sql.ts only approximates from above. */

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

/** Whether a memory passes the filters: the exact rule, which the SQL of filter-sql.ts only approximates from above. */
export function matchesFilters(m: FilterSubject, f: FiltersInput | undefined): boolean {
  if (!f) return true;
  return holds(m, treeOf(f));
}
