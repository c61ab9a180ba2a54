import type { Compilable, CompiledQuery } from 'kysely';
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
 * An INSERT of rows (and what follows its VALUES: ON CONFLICT, RETURNING) compiled once per dialect
 * and row count, then run with new values: the inserts of a write, whose rows vary only in number.
 * Each row has every column of `columns`; `build` must use their values, and its `arity` further
 * arguments (values the statement needs besides its rows, given before them), only as bound values.
 */
export function preparedInsert<Row extends Record<string, unknown>, R = unknown, A extends unknown[] = []>(
  columns: ReadonlyArray<keyof Row & string>,
  build: (db: Executor, rows: Row[], ...args: A) => Compilable<R>,
  arity = 0,
) {
  const byCount = new Map<number, (db: Executor, args: unknown[]) => CompiledQuery<R>>();
  const compilerFor = (count: number) => {
    let compile = byCount.get(count);
    if (!compile) {
      const width = columns.length;
      compile = compiledOnce(arity + count * width, (db, ...values: unknown[]) =>
        build(
          db,
          Array.from(
            { length: count },
            (_, r) => Object.fromEntries(columns.map((column, c) => [column, values[arity + r * width + c]])) as Row,
          ),
          ...(values.slice(0, arity) as A),
        ),
      );
      // Counts vary with the size of a bulk request: the first ones seen are kept, the rest compiled each time.
      if (byCount.size < 64) byCount.set(count, compile);
    }
    return compile;
  };
  const valuesOf = (rows: Row[], args: A) => {
    const values: unknown[] = [...args];
    for (const row of rows) for (const column of columns) values.push(row[column]);
    return values;
  };
  return (db: Executor, rows: Row[], ...args: A): Compilable<R> => {
    if (args.length !== arity) throw new Error(`preparedInsert: ${arity} arguments besides the rows`);
    return { compile: () => compilerFor(rows.length)(db, valuesOf(rows, args)) };
  };
}

function compiledOnce<A extends unknown[], R>(arity: number, build: (db: Executor, ...args: A) => Compilable<R>) {
  const compiledByDialect = new Map<
    unknown,
    { compiled: CompiledQuery<R>; slots: number[]; argumentsInOrder: boolean }
  >();
  return (db: Executor, args: A): CompiledQuery<R> => {
    const dialect = db.getExecutor().adapter.constructor;
    let entry = compiledByDialect.get(dialect);
    if (!entry) {
      const markers = Array.from({ length: arity }, (_, i) => `\u0000prepared-argument-${i}\u0000`);
      const compiled = build(db, ...(markers as unknown as A)).compile();
      const markerIndex = new Map(markers.map((marker, i) => [marker, i]));
      const slots = compiled.parameters.map((p) => markerIndex.get(p as string) ?? -1);
      if (new Set(slots.filter((s) => s >= 0)).size !== arity)
        throw new Error('prepared: every argument must be bound exactly once');
      // An INSERT's VALUES bind exactly the arguments, in order: its parameters are then the arguments themselves.
      entry = { compiled, slots, argumentsInOrder: slots.length === arity && slots.every((slot, i) => slot === i) };
      compiledByDialect.set(dialect, entry);
    }
    const { compiled, slots, argumentsInOrder } = entry;
    return {
      ...compiled,
      parameters: argumentsInOrder
        ? args
        : compiled.parameters.map((value, i) => (slots[i]! >= 0 ? args[slots[i]!] : value)),
    };
  };
}
