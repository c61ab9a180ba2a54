import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';

forEachDialect('OpenAPI document: retrieval and /v1 operations', (dialect) => {
  const t = useTestApp(dialect);

  it('lists every retrieval and tenant-plane operation with its request and response schemas', async () => {
    const res = await t.call('GET', '/openapi.json', { key: null, endUser: null, project: null });
    expect(res.status).toBe(200);
    const paths = res.body.paths as Record<string, Record<string, any>>;
    const operations: Array<[string, string, string]> = [
      ['post', '/memory/query', '200'],
      ['post', '/memory/retrieve', '200'],
      ['post', '/memory/search', '200'],
      ['post', '/memory/compose', '200'],
      ['post', '/memory/refresh', '202'],
      ['get', '/memory/refresh/{job_id}', '200'],
      ['post', '/memory/{memory_id}/feedback', '201'],
      ['get', '/memory/{memory_id}/feedback', '200'],
      ['delete', '/memory/{memory_id}/feedback/{feedback_id}', '200'],
      ['post', '/v1/memory/add_turn', '201'],
      ['post', '/v1/memory/recall', '200'],
      ['get', '/v1/memory/status', '200'],
      ['get', '/v1/memory/memories', '200'],
    ];
    for (const [method, path, status] of operations) {
      const op = paths[path]?.[method];
      expect(op, `${method.toUpperCase()} ${path}`).toBeDefined();
      expect(op.summary, path).toEqual(expect.any(String));
      expect(op.responses[status], `${path} ${status}`).toBeDefined();
      if (method === 'post' && path !== '/memory/refresh') expect(op.requestBody, path).toBeDefined();
    }
    const query = res.body.components.schemas.MemoriesQueryRequest;
    expect(Object.keys(query.properties)).toEqual(
      expect.arrayContaining(['query', 'k', 'session_id', 'filters', 'explain']),
    );
    expect(query.properties.k).toMatchObject({ minimum: 1, maximum: 100 });
    const search = res.body.components.schemas.MemoriesSearchRequest;
    expect(JSON.stringify(search.properties.route)).toContain('temporal');
  });
});
