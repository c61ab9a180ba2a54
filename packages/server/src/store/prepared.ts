import type { Compilable, CompiledQuery, OperationNodeSource } from 'kysely';
import type { Executor } from './database.js';

/**
 * A query built and compiled once per dialect, then run with new parameter values. On the
 * hottest paths (every authenticated request, every retrieval, every add) building and compiling a
 * Kysely query costs more than SQLite takes to run it. `build` receives a marker for each argument
 * and must use each only as a bound value, never to choose the query's shape.
 */
export function prepared<A extends unknown[], R>(arity: number, build: (db: Executor, ...args: A) => Compilable<R>) {
  const compile = compiledOnce(arity, build);
  return async (db: Executor, ...args: A): Promise<R[]> => (await db.executeQuery<R>(compile(db, args))).rows;
}

/**
 * A statement of fixed shape among a write's pending statements (core/unit-of-work.ts), compiled
 * once per dialect as `prepared` is; the Kysely query is built only when the unit of work combines
 * it into another statement (PostgreSQL).
 */
export function preparedWrite<A extends unknown[]>(arity: number, build: (db: Executor, ...args: A) => Compilable & OperationNodeSource) {
  const compile = compiledOnce(arity, build);
  return (db: Executor, ...args: A): Compilable & OperationNodeSource => ({
    compile: () => compile(db, args),
    toOperationNode: () => build(db, ...args).toOperationNode(),
  });
}

function compiledOnce<A extends unknown[], R>(arity: number, build: (db: Executor, ...args: A) => Compilable<R>) {
  const compiledByDialect = new Map<unknown, { compiled: CompiledQuery<R>; slots: number[] }>();
  return (db: Executor, args: A): CompiledQuery<R> => {
    const dialect = db.getExecutor().adapter.constructor;
    let entry = compiledByDialect.get(dialect);
    if (!entry) {
      const markers = Array.from({ length: arity }, (_, i) => `\u0000prepared-argument-${i}\u0000`);
      const compiled = build(db, ...(markers as unknown as A)).compile();
      const slots = compiled.parameters.map((p) => markers.indexOf(p as string));
      if (new Set(slots.filter((s) => s >= 0)).size !== arity) throw new Error('prepared: every argument must be bound exactly once');
      entry = { compiled, slots };
      compiledByDialect.set(dialect, entry);
    }
    const { compiled, slots } = entry;
    return { ...compiled, parameters: compiled.parameters.map((value, i) => (slots[i]! >= 0 ? args[slots[i]!] : value)) };
  };
}
