import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { breakingChanges } from '../testing/openapi-breaking.js';

// openapi.json is what the server serves (openapi.test.ts); openapi.released.json is the document
// of the last release. A release copies the one onto the other (`npm run openapi:release`).
const read = (name: string) => JSON.parse(readFileSync(new URL(`../../${name}`, import.meta.url), 'utf8'));

describe('OpenAPI compatibility with the last released document', () => {
  it('removes no operation or field and makes nothing newly required', () => {
    expect(breakingChanges(read('openapi.released.json'), read('openapi.json'))).toEqual([]);
  });

  it('reports each kind of breaking change, and no addition', () => {
    const released = read('openapi.json');
    const clone = () => structuredClone(released);
    const add = released.paths['/memory/add'].post;
    const addBody = (document: any) =>
      schemaIn(document, document.paths['/memory/add'].post.requestBody.content['application/json'].schema);
    const removedOperation = clone();
    delete removedOperation.paths['/memory/add'].post;
    expect(breakingChanges(released, removedOperation)).toEqual(['POST /memory/add: operation removed']);

    const renamed = clone();
    renamed.paths['/memory/add'].post.operationId = 'somethingElse';
    expect(breakingChanges(released, renamed)).toEqual([
      `POST /memory/add: operationId ${add.operationId} renamed to somethingElse`,
    ]);

    // A request field removed, and another made required, inside the (possibly referenced) body schema.
    const body = clone();
    const target = addBody(body);
    delete target.properties.metadata;
    target.required = [...(target.required ?? []), 'session_id'];
    expect(breakingChanges(released, body).sort()).toEqual([
      'POST /memory/add request body: field metadata removed',
      'POST /memory/add request body: field session_id became required',
    ]);

    const answer = clone();
    const created = schemaIn(
      answer,
      answer.paths['/memory/add'].post.responses['201'].content['application/json'].schema,
    );
    created.required = created.required.filter((f: string) => f !== 'text');
    created.properties.new_field = { type: 'string' };
    expect(breakingChanges(released, answer)).toEqual(['POST /memory/add 201: field text is no longer always present']);

    const additions = clone();
    additions.paths['/brand-new'] = { get: { operationId: 'brandNew', responses: {} } };
    addBody(additions).properties.optional_new = { type: 'string' };
    expect(breakingChanges(released, additions)).toEqual([]);
  });
});

/** The schema itself, following a $ref into the document's components. */
function schemaIn(document: any, schema: any): any {
  return schema.$ref
    ? schema.$ref
        .split('/')
        .slice(1)
        .reduce((node: any, part: string) => node[part], document)
    : schema;
}
