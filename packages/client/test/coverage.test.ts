import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

/**
 * Both clients against the committed OpenAPI document: every operation has a method in each, and no
 * method names an operation the document lacks. A method is one line of a group: in TypeScript
 * `name: (...) => this.call('operationId', ...)`, in Python `def name(self, ...): return self._call("operationId", ...)`.
 */
const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
const document = JSON.parse(read('../../server/openapi.json')) as { paths: Record<string, Record<string, { operationId: string }>> };
const operations = new Set(Object.values(document.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId)));

const bound = (sources: string[], pattern: RegExp) => new Set(sources.flatMap((source) => [...source.matchAll(pattern)].map((m) => m[1]!)));
const typescript = bound([read('../src/service.ts'), read('../src/control.ts')], /^ {4}\w+: \(.*?\) => this\.(?:call|transport\.\w+)\('(\w+)'/gm);
const python = bound([read('../../client-python/engram/service.py'), read('../../client-python/engram/control.py')], /^ {4}def \w+\(self.*?\bself\.(?:_call|_pages|_client\.transport\.\w+)\("(\w+)"/gm);

it.each([['TypeScript (packages/client/src)', typescript], ['Python (packages/client-python/engram)', python]] as const)(
  '%s has a method for every operation and none for an unknown one',
  (_, methods) => {
    expect([...operations].filter((id) => !methods.has(id)), 'operations without a method: add one line to the group of its tag').toEqual([]);
    expect([...methods].filter((id) => !operations.has(id)), 'methods naming no operation of openapi.json').toEqual([]);
  },
);
