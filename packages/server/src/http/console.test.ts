import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDialect, startTestApp, type TestApp } from '../testing/harness.js';
import { CONSOLE_CSP, CONSOLE_DIRECTORY } from './console.js';

describe('the built console', () => {
  it('is present after npm install (the console package builds itself in prepare)', () => {
    expect(existsSync(join(CONSOLE_DIRECTORY, 'index.html'))).toBe(true);
  });
});

forEachDialect('the console at /console', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(dialect);
  });
  afterAll(() => t.close());

  it('serves the page with no-cache and a Content-Security-Policy, and every console path as the page', async () => {
    for (const path of ['/console/', '/console/memories/42']) {
      const res = await t.call('GET', path, { key: null, endUser: null, project: null });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.text).toBe(readFileSync(join(CONSOLE_DIRECTORY, 'index.html'), 'utf8'));
    }
    const bare = await t.call('GET', '/console', { key: null, endUser: null, project: null });
    expect(bare.status).toBe(308);
    expect(bare.headers.location).toBe('/console/');
  });

  it('serves the page as the OAuth consent return, never cached (its address carries a code), with referrers off', async () => {
    const res = await t.call('GET', '/connectors/oauth/callback?code=abc&state=xyz', {
      key: null,
      endUser: null,
      project: null,
    });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(res.text).toBe(readFileSync(join(CONSOLE_DIRECTORY, 'index.html'), 'utf8'));
  });

  it('serves the hashed assets the page names as immutable, and nothing outside them', async () => {
    const page = (await t.call('GET', '/console/', { key: null, endUser: null, project: null })).text;
    const assets = [...page.matchAll(/\/console\/assets\/([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    for (const name of assets) {
      const res = await t.call('GET', `/console/assets/${name}`, { key: null, endUser: null, project: null });
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.headers['content-type']).toMatch(name.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      expect(res.text).toBe(readFileSync(join(CONSOLE_DIRECTORY, 'assets', name), 'utf8'));
    }
    for (const path of [
      '/console/assets/missing-abc123.js',
      '/console/assets/..%2Findex.html',
      '/console/assets/..%2F..%2F..%2Fserver%2Fpackage.json',
    ]) {
      const res = await t.call('GET', path, { key: null, endUser: null, project: null });
      expect(res.status, path).toBe(404);
      expect(res.headers['cache-control']).not.toMatch(/immutable/);
    }
  });
});
