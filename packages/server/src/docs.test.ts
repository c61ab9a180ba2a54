import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { routesTable } from '../scripts/routes-table.js';
import { EVENT_TYPES } from './core/events.js';

/**
 * The documents stay true of the code: every setting the configuration reads is in the README's table
 * (tests' own hooks aside), every event kind of the catalogue is named in docs/api.md, the route table is
 * the one `npm run openapi` writes, and the README's repository layout names what is there and nothing else.
 */
const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');

it('README documents every ENGRAM_* setting config.ts reads', () => {
  const readme = read('../../../README.md');
  const settings = new Set(read('./config.ts').match(/ENGRAM_[A-Z0-9_]+/g));
  settings.delete('ENGRAM_TEST_FAILPOINT');
  expect([...settings].filter((name) => !readme.includes(`\`${name}\``))).toEqual([]);
});

it('docs/api.md names every event kind of the catalogue', () => {
  const api = read('../../../docs/api.md');
  expect(Object.keys(EVENT_TYPES).filter((type) => !api.includes(`\`${type}\``))).toEqual([]);
});

it('docs/routes.md is the route table of the committed openapi.json (regenerate it with `npm run openapi`)', () => {
  const openapi = JSON.parse(read('../openapi.json'));
  expect(read('../../../docs/routes.md')).toBe(routesTable(openapi, fileURLToPath(new URL('.', import.meta.url))));
});

it("README's repository layout names every folder of the repository, the server's sources and packages/, and only what exists", () => {
  const readme = read('../../../README.md');
  const block = /## Repository layout\s+```\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(block).toBeDefined();
  // A line's first word is a path: from the repository's root, or (indented) from packages/server/.
  const named = block!
    .split('\n')
    .filter((line) => line.trim() !== '' && !/^\s{4,}/.test(line))
    .map((line) => {
      const path = line.trim().split(/\s+/)[0]!;
      return /^\s/.test(line) ? `packages/server/${path}` : path;
    });
  const root = new URL('../../../', import.meta.url);
  expect(named.filter((path) => !path.includes('<') && !existsSync(new URL(path, root)))).toEqual([]);
  const folders = (dir: string) =>
    readdirSync(new URL(dir, root), { withFileTypes: true })
      .filter(
        (entry) =>
          entry.isDirectory() &&
          !entry.name.startsWith('.') &&
          !['node_modules', 'dist', 'data', '__pycache__'].includes(entry.name),
      )
      .map((entry) => `${dir}${entry.name}/`);
  const required = [
    ...folders('').filter((dir) => dir !== 'packages/'),
    ...folders('packages/'),
    ...folders('packages/server/src/').filter((dir) => !dir.endsWith('/modules/')),
  ];
  expect(required.filter((dir) => !named.includes(dir) && !named.includes(dir.replace(/\/$/, '')))).toEqual([]);
});

it("docs/architecture.md's layout names every source file of the lower layers and HTTP plugins", () => {
  const layout = /## Layout\s+```\n([\s\S]*?)```/.exec(read('../../../docs/architecture.md'))?.[1];
  expect(layout).toBeDefined();
  const files = ['core', 'engine', 'store', 'jobs', 'http'].flatMap((dir) =>
    readdirSync(new URL(`./${dir}/`, import.meta.url))
      .filter((name) => name.endsWith('.ts') && !/\.(test|d)\.ts$/.test(name))
      .map((name) => `${dir}/${name}`),
  );
  expect(files.length).toBeGreaterThan(40);
  const named = (file: string) => {
    const name = file.split('/')[1]!.replace(/\.ts$/, '');
    return new RegExp(`(^|[^\\w-])${name.replace(/[-.]/g, '\\$&')}($|[^\\w-])`).test(layout!);
  };
  expect(files.filter((file) => !named(file))).toEqual([]);
});

it('docs/specification.txt is the shared specification, where that is beside the repository', () => {
  const shared = new URL('../../../../shared/spec/000_a8d4fe45183a4112.txt', import.meta.url);
  if (!existsSync(shared)) return;
  expect(read('../../../docs/specification.txt')).toBe(readFileSync(shared, 'utf8'));
});
