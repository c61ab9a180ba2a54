import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { expect, it } from 'vitest';
import { forEachDialect, startTestApp, useTestApp } from '../testing/harness.js';
import { operationIdOf } from './openapi.js';

const COMMITTED = new URL('../../openapi.json', import.meta.url);
/** The reads sent as POST: a read-scoped credential may call them, so they change nothing and record no Idempotency-Key. */
const READS_AS_POST = [
  'memories.query',
  'memories.retrieve',
  'memories.search',
  'memories.compose',
  'memories.synthesize',
  'v1.recall',
  'keys.test',
];

forEachDialect('OpenAPI document and docs page', (dialect) => {
  const t = useTestApp(dialect);
  const anonymous = { key: null, endUser: null, project: null } as const;

  it('is OpenAPI 3.1 and describes every memory data-plane operation with its scoping headers', async () => {
    const res = await t.call('GET', '/openapi.json', anonymous);
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const paths = res.body.paths as Record<string, Record<string, any>>;
    const operations: Array<[string, string]> = [
      ['post', '/memory/add'],
      ['post', '/memory/bulk-add'],
      ['get', '/memory/{memory_id}'],
      ['patch', '/memory/{memory_id}'],
      ['post', '/memory/batch-update'],
      ['delete', '/memory/forget'],
      ['delete', '/memory/user/{end_user_id}'],
      ['get', '/memory/export'],
      ['get', '/memory/{memory_id}/history'],
      ['get', '/healthz'],
      ['get', '/readyz'],
    ];
    for (const [method, path] of operations) {
      const op = paths[path]?.[method];
      expect(op, `${method.toUpperCase()} ${path}`).toBeDefined();
      expect(op.summary, path).toEqual(expect.any(String));
    }
    const add = paths['/memory/add']!.post;
    expect(Object.keys(add.responses)).toEqual(expect.arrayContaining(['200', '201']));
    const headers = add.parameters
      .filter((p: { in: string }) => p.in === 'header')
      .map((p: { name: string; required?: boolean }) => [p.name, p.required ?? false]);
    expect(headers).toEqual(
      expect.arrayContaining([
        ['x-end-user-id', true],
        ['x-project-id', false],
      ]),
    );
    expect(res.body.components.schemas.MemoriesAddRequest.additionalProperties).toBe(false);
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
      expect(
        op.operationId,
        `${name}: name it area.method (the clients' method) in src/http/operation-names.ts`,
      ).toMatch(/^[a-z][A-Za-z0-9]*\.[a-z][A-Za-z0-9]*$/);
      ids.push(op.operationId);
      expect(op.tags, name).toHaveLength(1);
      expect(areas.has(op.tags[0]), `${name}: tag ${op.tags[0]} is declared`).toBe(true);
      const errors = Object.entries(op.responses as Record<string, any>).filter(([status]) => Number(status) >= 400);
      expect(
        errors.map(([status]) => status),
        name,
      ).toEqual(expect.arrayContaining(['400', '500']));
      for (const [status, response] of errors) {
        // The readiness probe answers 503 with its own small status body, for load balancers.
        if (name === 'GET /readyz' && status === '503') continue;
        expect(response.content['application/json'].schema, `${name} ${status}`).toEqual({
          $ref: '#/components/schemas/Error',
        });
      }
      if (op.security.length)
        expect(Object.keys(op.responses), name).toEqual(expect.arrayContaining(['401', '403', '404']));
    }
    expect(new Set(ids).size, 'operationIds are unique').toBe(ids.length);
    // One source for every id: src/http/operation-names.ts (a route that names its own breaks it).
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const derived = operationIdOf(method, path.replace(/\{([^}]+)\}/g, ':$1'));
        expect(
          op.operationId,
          `${method.toUpperCase()} ${path}: declare no operationId, it is ${derived} (src/http/operation-names.ts)`,
        ).toBe(derived);
        const headers = (op.parameters ?? [])
          .filter((p: { in: string }) => p.in === 'header')
          .map((p: { name: string }) => p.name);
        // Every write takes an Idempotency-Key; the reads sent as POST record none (http/auth.ts#changesNothing).
        if (method !== 'get' && !READS_AS_POST.includes(op.operationId))
          expect(headers, `${method.toUpperCase()} ${path} takes Idempotency-Key`).toContain('idempotency-key');
        if (READS_AS_POST.includes(op.operationId))
          expect(headers, `${method.toUpperCase()} ${path} records no Idempotency-Key`).not.toContain(
            'idempotency-key',
          );
      }
    }
    // The clients' method names (client.memories.history, client.v1.addTurn).
    expect(doc.paths['/memory/{memory_id}/history'].get.operationId).toBe('memories.history');
    expect(doc.paths['/v1/memory/add_turn'].post.operationId).toBe('v1.addTurn');
    expect(doc.paths['/org/webhooks/{endpoint_id}/replay'].post.operationId).toBe('webhooks.replay');
  });

  it('names every request and success body as a component and gives every operation an example that fits its schema', async () => {
    const doc = (await t.call('GET', '/openapi.json', anonymous)).body;
    const ajv = new Ajv({ strict: false, allErrors: true });
    (formats as unknown as { default: (ajv: Ajv) => void }).default(ajv);
    ajv.addSchema({ ...doc, $id: 'openapi.json' });
    const fits = (schema: any, value: unknown, where: string) => {
      const validate = ajv.compile(schema.$ref ? { $ref: `openapi.json${schema.$ref}` } : schema);
      expect(validate(value), `${where}: the example fits its schema ${JSON.stringify(validate.errors)}`).toBe(true);
    };
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const name = `${method.toUpperCase()} ${path}`;
        const examples: string[] = [];
        for (const [type, media] of Object.entries<any>(op.requestBody?.content ?? {})) {
          expect(media.schema.$ref, `${name} ${type} request body is a named component`).toMatch(
            /^#\/components\/schemas\/[A-Z]\w+$/,
          );
          if (type === 'application/json') {
            const given = media.examples
              ? Object.values<{ value: unknown }>(media.examples).map((e) => e.value)
              : [media.example];
            for (const value of given) fits(media.schema, value, `${name} request`);
            examples.push('request');
          }
        }
        for (const [status, response] of Object.entries<any>(op.responses)) {
          if (!status.startsWith('2')) continue;
          for (const [type, media] of Object.entries<any>(response.content ?? {})) {
            expect(media.schema.$ref, `${name} ${status} ${type} answer is a named component`).toMatch(
              /^#\/components\/schemas\/[A-Z]\w+$/,
            );
            if (type === 'application/json') {
              fits(media.schema, media.example, `${name} ${status}`);
              examples.push(status);
            }
          }
        }
        for (const parameter of op.parameters ?? []) {
          fits(parameter.schema, parameter.example, `${name} ${parameter.in} ${parameter.name}`);
          examples.push(parameter.name);
        }
        expect(examples.length, `${name} has an example`).toBeGreaterThan(0);
      }
    }
    // Named after the operation, not def-N.
    expect(doc.paths['/memory/add'].post.requestBody.content['application/json'].schema.$ref).toBe(
      '#/components/schemas/MemoriesAddRequest',
    );
    expect(doc.paths['/memory/add'].post.requestBody.content['application/json'].examples.example1.value.text).toEqual(
      expect.any(String),
    );
  });

  it("sends the memory API's request examples as a client would copy them: each is accepted", async () => {
    const doc = (await t.call('GET', '/openapi.json', anonymous)).body;
    /** The request examples of an operation, as the document gives them. */
    const examples = (path: string, method: string): any[] => {
      const media = doc.paths[path][method].requestBody.content['application/json'];
      return media.examples ? Object.values<{ value: unknown }>(media.examples).map((e) => e.value) : [media.example];
    };
    const endUser = 'examples-user';
    const accepted = async (what: string, res: { status: number; text: string }) =>
      expect(res.status, `${what}: ${res.text}`).toBeLessThan(300);
    const ids: number[] = [];
    for (const body of examples('/memory/add', 'post')) {
      const res = await t.call('POST', '/memory/add', { endUser, body });
      await accepted('add', res);
      ids.push(res.body.id);
    }
    await accepted(
      'bulk-add',
      await t.call('POST', '/memory/bulk-add', { endUser, body: examples('/memory/add', 'post') }),
    );
    for (const body of examples('/memory/{memory_id}', 'patch'))
      await accepted('patch', await t.call('PATCH', `/memory/${ids[0]}`, { endUser, body }));
    for (const body of examples('/memory/batch-update', 'post')) {
      const updates = body.updates.map((u: { id: number }, i: number) => ({ ...u, id: ids[i % ids.length] }));
      await accepted('batch-update', await t.call('POST', '/memory/batch-update', { endUser, body: { updates } }));
    }
    const filters = doc.paths['/memory'].get.parameters.find((p: { name: string }) => p.name === 'filters').example;
    await accepted('list', await t.call('GET', `/memory?filters=${encodeURIComponent(filters)}`, { endUser }));
    for (const body of examples('/memory/forget', 'delete')) {
      const sent = body.ids ? { ...body, ids: [ids[1]] } : body;
      await accepted('forget', await t.call('DELETE', '/memory/forget', { endUser, body: sent }));
    }
    for (const body of examples('/v1/memory/add_turn', 'post'))
      await accepted(
        'add_turn',
        await t.call('POST', '/v1/memory/add_turn', {
          endUser: null,
          headers: { 'X-Tenant-ID': body.tenant_id },
          body,
        }),
      );
    expect(ids.length).toBeGreaterThan(1);
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

  it('documents every authenticated route, but for the ones docs/api.md names as outside the document', async () => {
    // POST /mcp is one JSON-RPC endpoint whose operations are the MCP tools (docs/api.md, "The MCP endpoint").
    const OUTSIDE = ['POST /mcp'];
    const doc = (await t.call('GET', '/openapi.json', anonymous)).body;
    const documented = new Set(
      Object.entries(doc.paths as Record<string, object>).flatMap(([path, ops]) =>
        Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
      ),
    );
    const catalogue = (await t.call('GET', '/auth/catalogue', anonymous)).body.operations as {
      method: string;
      path: string;
    }[];
    const undocumented = catalogue
      .map((o) => `${o.method} ${o.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`)
      .filter((id) => !documented.has(id));
    expect(undocumented).toEqual(OUTSIDE);
    const api = readFileSync(new URL('../../../../docs/api.md', import.meta.url), 'utf8');
    for (const route of OUTSIDE) expect(api, `docs/api.md names ${route}`).toContain(`\`${route}\``);
  });

  it('serves a readable docs page', async () => {
    const res = await t.call('GET', '/docs/', anonymous);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.text).toContain('swagger');
  });
});
