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

/**
 * The filters' exact rule over one memory: the reference the SQL of filter-sql.ts only approximates from above.
 * A filter object is compiled once into a predicate (a closure per condition, operands read and parsed up front):
 * retrieval tests it on every candidate of a ranking, thousands a query.
 */

/** A memory passes or not; `text` is the memory's text where the subject holds none (retrieval keeps it apart). */
export type FilterPredicate = (m: FilterSubject, text?: string) => boolean;

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

/** A test of a stored JSON value against an operand: equality of canonical JSON (objects and arrays by content). */
function jsonEquals(operand: unknown): (v: unknown) => boolean {
  if (operand === null || typeof operand !== 'object') return (v) => v === operand;
  const canonical = canonicalJson(operand);
  return (v) => v !== null && typeof v === 'object' && canonicalJson(v) === canonical;
}

const anyOf =
  <T>(tests: Array<(v: T) => boolean>) =>
  (v: T) => {
    for (const test of tests) if (test(v)) return true;
    return false;
  };

/** What an ordering operator says of a difference (the value minus the operand). */
function ordered(op: Operator): (d: number) => boolean {
  switch (op) {
    case '$gt':
      return (d) => d > 0;
    case '$gte':
      return (d) => d >= 0;
    case '$lt':
      return (d) => d < 0;
    default:
      return (d) => d <= 0;
  }
}

const ABSENT = Symbol('absent');

/** The value at a metadata path, or ABSENT (a key missing, or a step through something not an object). */
function metadataReader(path: string[]): (metadata: Record<string, unknown>) => unknown {
  if (path.length === 1) {
    const [key] = path as [string];
    return (metadata) => (Object.hasOwn(metadata, key) ? metadata[key] : ABSENT);
  }
  return (metadata) => {
    let value: unknown = metadata;
    for (const key of path) {
      if (!isPlainObject(value) || !Object.hasOwn(value, key)) return ABSENT;
      value = value[key];
    }
    return value;
  };
}

function metadataLeaf(leaf: Leaf): FilterPredicate {
  const at = metadataReader(leaf.path);
  const { op, value } = leaf;
  const present = (test: (v: unknown) => boolean) => (m: FilterSubject) => {
    const v = at(m.metadata);
    return v !== ABSENT && test(v);
  };
  switch (op) {
    case '$eq':
      return present(jsonEquals(value));
    case '$ne': {
      const eq = present(jsonEquals(value));
      return (m) => !eq(m);
    }
    case '$in':
      return present(anyOf((value as unknown[]).map(jsonEquals)));
    case '$nin': {
      const some = present(anyOf((value as unknown[]).map(jsonEquals)));
      return (m) => !some(m);
    }
    case '$exists':
      return (m) => (at(m.metadata) !== ABSENT) === value;
    case '$contains':
      // An operand of $contains is a string, number, boolean or null: an array's element equals it as a primitive.
      return present((v) =>
        typeof v === 'string' ? typeof value === 'string' && v.includes(value) : Array.isArray(v) && v.includes(value),
      );
    default: {
      const holds = ordered(op);
      if (typeof value === 'number') return present((v) => typeof v === 'number' && holds(v - value));
      return present((v) => typeof v === 'string' && holds(compareText(v, value as string)));
    }
  }
}

function tagsLeaf(leaf: Leaf): FilterPredicate {
  const { op, value } = leaf;
  if (op === '$in' || op === '$nin') {
    const wanted = value as string[];
    const some = (m: FilterSubject) => {
      for (const tag of m.tags) if (wanted.includes(tag)) return true;
      return false;
    };
    return op === '$in' ? some : (m) => !some(m);
  }
  const has = op !== '$ne';
  return (m) => m.tags.includes(value as string) === has;
}

/** A column's value as filters compare it (times in milliseconds since the epoch). */
function columnReader(field: Exclude<ColumnField, 'tags'>): (m: FilterSubject, text?: string) => unknown {
  switch (field) {
    case 'text':
      return (m, text) => {
        const value = text ?? m.text;
        if (value === undefined) throw new Error('a text filter was evaluated without the text');
        return value;
      };
    case 'source':
      return (m) => m.source;
    case 'session_id':
      return (m) => m.sessionId;
    case 'importance':
      return (m) => m.importance;
    case 'created_at':
      return (m) => m.createdAt;
    case 'updated_at':
      return (m) => m.updatedAt;
    case 'is_summary':
      return (m) => m.isSummary;
  }
}

function columnLeaf(leaf: Leaf & { field: Exclude<ColumnField, 'tags'> }): FilterPredicate {
  const read = columnReader(leaf.field);
  const operand = (v: unknown) =>
    leaf.field === 'created_at' || leaf.field === 'updated_at' ? Date.parse(v as string) : v;
  const { op, value } = leaf;
  switch (op) {
    case '$eq': {
      const wanted = operand(value);
      return (m, text) => read(m, text) === wanted;
    }
    case '$ne': {
      const unwanted = operand(value);
      return (m, text) => read(m, text) !== unwanted;
    }
    case '$in':
    case '$nin': {
      const values = (value as unknown[]).map(operand);
      const within = op === '$in';
      return (m, text) => values.includes(read(m, text)) === within;
    }
    case '$exists':
      return (m, text) => (read(m, text) !== null) === value;
    case '$contains':
      return (m, text) => {
        const actual = read(m, text);
        return typeof actual === 'string' && actual.includes(value as string);
      };
    default: {
      const holds = ordered(op);
      const bound = operand(value) as number;
      return (m, text) => {
        const actual = read(m, text);
        return actual !== null && holds((actual as number) - bound);
      };
    }
  }
}

function compile(node: Node): FilterPredicate {
  switch (node.kind) {
    case 'leaf':
      if (node.field === 'tags') return tagsLeaf(node);
      if (node.field === 'metadata') return metadataLeaf(node);
      return columnLeaf(node as Leaf & { field: Exclude<ColumnField, 'tags'> });
    case 'and': {
      const parts = node.nodes.map(compile);
      if (parts.length === 1) return parts[0]!;
      return (m, text) => {
        for (const part of parts) if (!part(m, text)) return false;
        return true;
      };
    }
    case 'or': {
      const parts = node.nodes.map(compile);
      return (m, text) => {
        for (const part of parts) if (part(m, text)) return true;
        return false;
      };
    }
    case 'not': {
      const inner = compile(node.node);
      return (m, text) => !inner(m, text);
    }
  }
}

/** Predicates by filter object: a request's filters are compiled once, then tested on every memory it reads. */
const compiled = new WeakMap<object, FilterPredicate>();

/** The filters' predicate (everything passes without filters). */
export function filterPredicate(f: FiltersInput | undefined): FilterPredicate {
  if (!f) return () => true;
  let predicate = compiled.get(f);
  if (!predicate) {
    predicate = compile(treeOf(f));
    compiled.set(f, predicate);
  }
  return predicate;
}

/** Whether a memory passes the filters: the exact rule, which the SQL of filter-sql.ts only approximates from above. */
export function matchesFilters(m: FilterSubject, f: FiltersInput | undefined): boolean {
  return filterPredicate(f)(m);
}
