import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { EVENT_TYPES } from './core/events.js';

/**
 * The documents stay true of the code: every setting the configuration reads is in the README's table
 * (tests' own hooks aside), and every event kind of the catalogue is named in docs/api.md.
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
