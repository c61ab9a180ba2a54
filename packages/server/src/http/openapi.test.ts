import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { forEachDialect, startTestApp, useTestApp } from '../testing/harness.js';
import { operationIdOf } from './openapi.js';

const COMMITTED = new URL('../../openapi.json', import.meta.url);
/** The reads sent as POST: a read-scoped credential may call them, so they change nothing and record no Idempotency-Key. */
const READS_AS_POST = ['postMemoryQuery', 'postMemoryRetrieve', 'postMemorySearch', 'postMemoryCompose', 'postMemorySynthesize', 'postV1MemoryRecall', 'postOrgApiKeysByKeyIdTest'];

forEachDialect('OpenAPI document and docs page', (dialect) => {
  const t = useTestApp(dialect);
  const anonymous = { key: null, endUser: null, project: null } as const;

  it('is OpenAPI 3.1 and describes every memory data-plane operation with its scoping headers', async () => {
    const res = await t.call('GET', '/openapi.json', anonymous);
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const paths = res.body.paths as Record<string, Record<string, any>>;
    const operations: Array<[string, string]> = [
      ['post', '/memory/add'], ['post', '/memory/bulk-add'], ['get', '/memory/{memory_id}'], ['patch', '/memory/{memory_id}'],
      ['post', '/memory/batch-update'], ['delete', '/memory/forget'], ['delete', '/memory/user/{end_user_id}'],
      ['get', '/memory/export'], ['get', '/memory/{memory_id}/history'], ['get', '/healthz'], ['get', '/readyz'],
    ];
    for (const [method, path] of operations) {
      const op = paths[path]?.[method];
      expect(op, `${method.toUpperCase()} ${path}`).toBeDefined();
      expect(op.summary, path).toEqual(expect.any(String));
    }
    const add = paths['/memory/add']!.post;
    expect(Object.keys(add.responses)).toEqual(expect.arrayContaining(['200', '201']));
    const headers = add.parameters.filter((p: { in: string }) => p.in === 'header').map((p: { name: string; required?: boolean }) => [p.name, p.required ?? false]);
    expect(headers).toEqual(expect.arrayContaining([['x-end-user-id', true], ['x-project-id', false]]));
    expect(add.requestBody.content['application/json'].schema.additionalProperties).toBe(false);
  });

  it('names, tags and types the errors of every operation, for generated clients', async () => {
    const doc = (await t.call('GET', '/openapi.json', anonymous)).body;
    expect(doc.components.schemas.Error.properties.error.required).toEqual(['code', 'message', 'request_id']);
    const areas = new Set(doc.tags.map((tag: { name: string }) => tag.name));
    const ids: string[] = [];
    const operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
    );
    expect(operations.length).toBeGreaterThan(40);
    for (const { name, op } of operations) {
      expect(op.operationId, name).toMatch(/^[a-z][A-Za-z0-9]+$/);
      ids.push(op.operationId);
      expect(op.tags, name).toHaveLength(1);
      expect(areas.has(op.tags[0]), `${name}: tag ${op.tags[0]} is declared`).toBe(true);
      const errors = Object.entries(op.responses as Record<string, any>).filter(([status]) => Number(status) >= 400);
      expect(errors.map(([status]) => status), name).toEqual(expect.arrayContaining(['400', '500']));
      for (const [status, response] of errors) {
        // The readiness probe answers 503 with its own small status body, for load balancers.
        if (name === 'GET /readyz' && status === '503') continue;
        expect(response.content['application/json'].schema, `${name} ${status}`).toEqual({ $ref: '#/components/schemas/Error' });
      }
      if (op.security.length) expect(Object.keys(op.responses), name).toEqual(expect.arrayContaining(['401', '403', '404']));
    }
    expect(new Set(ids).size, 'operationIds are unique').toBe(ids.length);
    // One rule for every id: method and path (a route that names its own breaks it).
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const derived = operationIdOf(method, path.replace(/\{([^}]+)\}/g, ':$1'));
        expect(op.operationId, `${method.toUpperCase()} ${path}: declare no operationId, it is ${derived}`).toBe(derived);
        const headers = (op.parameters ?? []).filter((p: { in: string }) => p.in === 'header').map((p: { name: string }) => p.name);
        // Every write takes an Idempotency-Key; the reads sent as POST record none (http/auth.ts#changesNothing).
        if (method !== 'get' && !READS_AS_POST.includes(op.operationId)) expect(headers, `${method.toUpperCase()} ${path} takes Idempotency-Key`).toContain('idempotency-key');
        if (READS_AS_POST.includes(op.operationId)) expect(headers, `${method.toUpperCase()} ${path} records no Idempotency-Key`).not.toContain('idempotency-key');
      }
    }
    // Stable: derived from method and path, so clients generated today keep their method names.
    expect(doc.paths['/memory/{memory_id}/history'].get.operationId).toBe('getMemoryByMemoryIdHistory');
    expect(doc.paths['/v1/memory/add_turn'].post.operationId).toBe('postV1MemoryAddTurn');
  });

  it('is the committed packages/server/openapi.json (regenerate it with `npm run openapi`)', async () => {
    // Its own app, started inside the test: every route declaration (schemas, limits, access) runs
    // under this test, so a mutation test of a routes file sees the contract it changed.
    const own = await startTestApp(dialect);
    try {
      const served = (await own.call('GET', '/openapi.json', anonymous)).body;
      const committed = JSON.parse(readFileSync(COMMITTED, 'utf8'));
      expect(served, 'openapi.json is stale: run `npm run openapi`').toEqual(committed);
    } finally {
      await own.close();
    }
  });

  it('serves a readable docs page', async () => {
    const res = await t.call('GET', '/docs/', anonymous);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.text).toContain('swagger');
  });
});
