import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layering, checked from the source: no circular imports (type-only ones included), config.ts
 * imports nothing of the project, the transport-free layers (core, engine, store, jobs) import neither
 * HTTP nor modules, HTTP plugins import no module and modules not the composition root (app.ts and
 * services.ts wire them together), only route files and the app reach into http/, and modules meet
 * each other only at their index.ts.
 */

const SRC = dirname(fileURLToPath(import.meta.url));
const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'|^\s*import\s+'(\.[^']+)'/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'migrations' ? [] : sourceFiles(path);
    return /\.ts$/.test(entry.name) && !/\.(test|d)\.ts$/.test(entry.name) ? [relative(SRC, path)] : [];
  });
}

/** file -> the files it imports (relative imports only), as paths under src/. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(join(SRC, file), 'utf8');
    const targets = [...text.matchAll(IMPORT)].map((m) =>
      relative(SRC, resolve(SRC, dirname(file), (m[1] ?? m[2])!)).replace(/\.js$/, '.ts'),
    );
    graph.set(file, targets);
  }
  return graph;
}

/** Strongly connected components with more than one file (Tarjan), and files importing themselves. */
function cycles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const area = (file: string) => file.split('/')[0]!;
const moduleOf = (file: string) => (file.startsWith('modules/') ? file.split('/')[1] : undefined);
const isRouteFile = (file: string) => /^modules\/[^/]+\/routes(\.ts|\/)/.test(file);

describe('import graph', () => {
  const graph = importGraph();
  const edges = [...graph].flatMap(([from, targets]) => targets.map((to) => ({ from, to })));

  it('reads the whole tree', () => {
    expect(graph.size).toBeGreaterThan(40);
    expect(graph.get('app.ts')).toContain('services.ts');
  });

  it('has no circular imports', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('keeps core, engine, store and jobs free of HTTP and of modules', () => {
    const lower = new Set(['core', 'engine', 'store', 'jobs']);
    const offending = edges.filter(
      (e) =>
        lower.has(area(e.from)) &&
        (['http', 'modules'].includes(area(e.to)) || (!e.to.includes('/') && e.to !== 'config.ts')),
    );
    expect(offending).toEqual([]);
    const fastify = [...graph.keys()].filter(
      (f) =>
        lower.has(area(f)) &&
        /from '(fastify|fastify-plugin|@fastify\/[^']+)'/.test(readFileSync(join(SRC, f), 'utf8')),
    );
    expect(fastify).toEqual([]);
  });

  it('keeps config.ts at the bottom: the layers below HTTP read it, so it imports nothing of the project', () => {
    expect(graph.get('config.ts')).toEqual([]);
  });

  it('builds the service graph and runs the worker without loading any HTTP code', () => {
    const reached = new Set<string>();
    const walk = (file: string) => {
      if (reached.has(file) || !graph.has(file)) return;
      reached.add(file);
      for (const next of graph.get(file)!) walk(next);
    };
    walk('worker.ts');
    walk('services.ts');
    expect(reached.size).toBeGreaterThan(20);
    const http = [...reached].filter(
      (f) =>
        area(f) === 'http' ||
        f === 'app.ts' ||
        isRouteFile(f) ||
        /from '(fastify|fastify-plugin|@fastify\/[^']+)'/.test(readFileSync(join(SRC, f), 'utf8')),
    );
    expect(http).toEqual([]);
  });

  it('keeps HTTP plugins free of modules, and modules free of the composition root (both are wired in by app.ts)', () => {
    const offending = edges.filter(
      (e) =>
        (area(e.from) === 'http' && area(e.to) === 'modules') ||
        (area(e.from) === 'modules' && ['services.ts', 'app.ts'].includes(e.to)),
    );
    expect(offending).toEqual([]);
  });

  it('lets only the app, route files and HTTP plugins import http/', () => {
    const offending = edges.filter(
      (e) =>
        area(e.to) === 'http' &&
        area(e.from) !== 'http' &&
        !isRouteFile(e.from) &&
        !['app.ts', 'testing'].includes(area(e.from)),
    );
    expect(offending).toEqual([]);
  });

  it('reaches into a module only through its index.ts (the app also mounts route files)', () => {
    const offending = edges.filter((e) => {
      const target = moduleOf(e.to);
      if (target === undefined || moduleOf(e.from) === target || /^modules\/[^/]+\/index\.ts$/.test(e.to)) return false;
      return !(e.from === 'app.ts' && isRouteFile(e.to)) && area(e.from) !== 'testing';
    });
    expect(offending).toEqual([]);
  });
});

/** Files over this many lines are too big to hold in the head: split by concern or operation (issue 52). */
const MOST_LINES = 600;
/** Production files still over MOST_LINES, each to be split (the limit is not raised): the count they may not pass. */
const TO_BE_SPLIT: Record<string, number> = {};

describe('file sizes', () => {
  const lines = (file: string) => readFileSync(join(SRC, file), 'utf8').split('\n').length - 1;
  const files = sourceFiles(SRC);

  it(`keeps every production source file (tests, migrations and declarations aside) within ${MOST_LINES} lines`, () => {
    const over = files.filter((file) => lines(file) > (TO_BE_SPLIT[file] ?? MOST_LINES));
    expect(over.map((file) => `${file}: ${lines(file)} lines`)).toEqual([]);
  });

  it('keeps no exception for a file that was split (or is gone)', () => {
    const done = Object.keys(TO_BE_SPLIT).filter((file) => !files.includes(file) || lines(file) <= MOST_LINES);
    expect(done).toEqual([]);
  });
});
