import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../testing/harness.js';

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

  it('serves a readable docs page', async () => {
    const res = await t.call('GET', '/docs/', anonymous);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.text).toContain('swagger');
  });
});
