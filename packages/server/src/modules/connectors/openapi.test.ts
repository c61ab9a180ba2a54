import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';

forEachDialect('OpenAPI: upload, connectors and integrations', (dialect) => {
  const t = useTestApp(dialect);
  it('documents every operation with an operationId, tags and the project header', async () => {
    const paths = (await t.call('GET', '/openapi.json', { key: null, endUser: null, project: null })).body
      .paths as Record<string, Record<string, any>>;
    const operations: Array<[string, string]> = [
      ['post', '/memory/upload'],
      ['get', '/memory/upload/{job_id}'],
      ['get', '/connectors/providers'],
      ['get', '/connectors/providers/{provider}'],
      ['post', '/connectors/connections'],
      ['get', '/connectors/connections'],
      ['get', '/connectors/connections/{connection_id}'],
      ['patch', '/connectors/connections/{connection_id}'],
      ['post', '/connectors/connections/{connection_id}/repair'],
      ['post', '/connectors/connections/{connection_id}/authorize'],
      ['post', '/connectors/connections/{connection_id}/callback'],
      ['post', '/connectors/connections/{connection_id}/purge'],
      ['delete', '/connectors/connections/{connection_id}'],
      ['get', '/connectors/connections/{connection_id}/configuration'],
      ['put', '/connectors/connections/{connection_id}/configuration'],
      ['post', '/connectors/connections/{connection_id}/sync'],
      ['get', '/connectors/connections/{connection_id}/syncs'],
      ['get', '/connectors/syncs/{sync_id}'],
      ['post', '/connectors/syncs/{sync_id}/cancel'],
      ['get', '/connectors/connections/{connection_id}/objects'],
      ['get', '/connectors/insights'],
      ['get', '/integrations'],
      ['post', '/integrations/{provider}/enable'],
      ['post', '/integrations/{provider}/disable'],
      ['put', '/integrations/{provider}/oauth-client'],
      ['delete', '/integrations/{provider}/oauth-client'],
      ['get', '/integrations/overview'],
    ];
    const ids = new Set<string>();
    for (const [method, path] of operations) {
      const op = paths[path]?.[method];
      expect(op, `${method} ${path}`).toBeDefined();
      expect(op.operationId, path).toEqual(expect.any(String));
      expect(op.tags.length, path).toBeGreaterThan(0);
      ids.add(op.operationId);
    }
    expect(ids.size).toBe(operations.length);
    const create = paths['/connectors/connections']!.post;
    expect(
      create.parameters.filter((p: any) => p.in === 'header').map((p: any) => [p.name, p.required ?? false]),
    ).toContainEqual(['x-project-id', false]); // optional: a key locked to a project names it
    expect(Object.keys(paths['/memory/upload']!.post.requestBody.content)).toEqual(['multipart/form-data']);
    expect(Object.keys(paths['/connectors/connections/{connection_id}/authorize']!.post.responses)).toEqual(
      expect.arrayContaining(['200', '400', '404', '503']),
    );
    expect(paths['/connectors/connections/{connection_id}/callback']!.post.tags).toEqual(['connectors']);
  });
});
