import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

/**
 * Both clients against the committed OpenAPI document: every operation has a method in each, and no
 * method names an operation the document lacks. A method is one line of a group: in TypeScript
 * `name: (...) => this.call('operationId', ...)`, in Python `def name(self, ...): return self._call("operationId", ...)`.
 * The operationId is the method's name (`memories.bulkAdd` is `client.memories.bulkAdd` and, in Python,
 * `client.memories.bulk_add`); the paged variants (`decisionsAll`, `list_all`) add all to it.
 */
const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
const document = JSON.parse(read('../../server/openapi.json')) as {
  paths: Record<string, Record<string, { operationId: string }>>;
};
const operations = new Set(
  Object.values(document.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId)),
);

const bound = (sources: string[], pattern: RegExp) =>
  new Set(sources.flatMap((source) => [...source.matchAll(pattern)].map((m) => m[1]!)));
const typescriptSources = [read('../src/service.ts'), read('../src/control.ts')];
const pythonSources = [read('../../client-python/engram/service.py'), read('../../client-python/engram/control.py')];
const typescript = bound(
  typescriptSources,
  /^ {4}(?:\w+): (?:async )?\((?:[^()]|\([^()]*\))*\) =>\s*this\.(?:call|transport\.\w+)\(\s*'([\w.]+)'/gm,
);
const python = bound(
  pythonSources,
  /^ {4}def \w+\(\s*self[^)]*\)[^:\n]*:\s*(?:return (?:await )?)?self\.(?:_call|_pages|_client\.transport\.\w+)\(\s*"([\w.]+)"/gm,
);
const snake = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
/** A paged variant (decisionsAll, allInvitations, list_all, all_invitations) names the operation it pages through. */
const unpaged = (name: string) =>
  name
    .replace(/All$|_all$/, '')
    .replace(/^all([A-Z])/, (_, c: string) => c.toLowerCase())
    .replace(/^all_/, '');

it('names each operation after the method that sends it, in both clients', () => {
  const misnamed: string[] = [];
  for (const source of typescriptSources) {
    for (const m of source.matchAll(
      /^ {4}(\w+): (?:async )?\((?:[^()]|\([^()]*\))*\) =>\s*this\.(?:call|transport\.\w+)\(\s*'([\w.]+)'/gm,
    )) {
      const group = [...source.slice(0, m.index).matchAll(/^ {2}readonly (\w+) = \{/gm)].at(-1)?.[1] ?? '';
      if (`${group}.${unpaged(m[1]!)}` !== m[2]) misnamed.push(`TypeScript ${group}.${m[1]} sends ${m[2]}`);
    }
  }
  for (const source of pythonSources) {
    for (const [, name, id] of source.matchAll(
      /^ {4}def (\w+)\(\s*self[^)]*\)[^:\n]*:\s*(?:return (?:await )?)?self\.(?:_call|_pages|_client\.transport\.\w+)\(\s*"([\w.]+)"/gm,
    )) {
      if (unpaged(name!) !== snake(id!.split('.')[1]!)) misnamed.push(`Python ${name} sends ${id}`);
    }
  }
  expect(misnamed).toEqual([]);
});

it.each([
  ['TypeScript (packages/client/src)', typescript],
  ['Python (packages/client-python/engram)', python],
] as const)('%s has a method for every operation and none for an unknown one', (_, methods) => {
  expect(
    [...operations].filter((id) => !methods.has(id)),
    'operations without a method: add one line to the group of its tag',
  ).toEqual([]);
  expect(
    [...methods].filter((id) => !operations.has(id)),
    'methods naming no operation of openapi.json',
  ).toEqual([]);
});
