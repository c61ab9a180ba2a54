/**
 * The breaking changes between two OpenAPI documents, for the compatibility check against the last
 * released document (openapi.released.json): a removed operation, a renamed operationId, a removed
 * request or answer field, a request field or parameter that became required, an answer field that
 * is no longer always present, a removed success status. Additions are never breaking.
 */
type Json = Record<string, any>;

export function breakingChanges(released: Json, current: Json): string[] {
  const problems: string[] = [];
  for (const [path, methods] of Object.entries<Json>(released.paths ?? {})) {
    for (const [method, before] of Object.entries<Json>(methods)) {
      const name = `${method.toUpperCase()} ${path}`;
      const after = current.paths?.[path]?.[method];
      if (!after) {
        problems.push(`${name}: operation removed`);
        continue;
      }
      if (before.operationId !== after.operationId)
        problems.push(`${name}: operationId ${before.operationId} renamed to ${after.operationId}`);
      const paramsAfter = new Map<string, Json>((after.parameters ?? []).map((p: Json) => [`${p.in}:${p.name}`, p]));
      const paramsBefore = new Set<string>((before.parameters ?? []).map((p: Json) => `${p.in}:${p.name}`));
      for (const p of before.parameters ?? []) {
        const now = paramsAfter.get(`${p.in}:${p.name}`);
        if (!now) problems.push(`${name}: ${p.in} parameter ${p.name} removed`);
        else if (now.required && !p.required) problems.push(`${name}: ${p.in} parameter ${p.name} became required`);
      }
      for (const [key, p] of paramsAfter)
        if (!paramsBefore.has(key) && p.required) problems.push(`${name}: new required ${p.in} parameter ${p.name}`);
      const bodyBefore = before.requestBody?.content?.['application/json']?.schema;
      const bodyAfter = after.requestBody?.content?.['application/json']?.schema;
      if (bodyBefore && bodyAfter)
        compare(resolve(released, bodyBefore), resolve(current, bodyAfter), 'request', `${name} request body`);
      for (const [status, response] of Object.entries<Json>(before.responses ?? {})) {
        if (!status.startsWith('2')) continue;
        const now = after.responses?.[status];
        if (!now) {
          problems.push(`${name}: response ${status} removed`);
          continue;
        }
        const schemaBefore = response.content?.['application/json']?.schema;
        const schemaAfter = now.content?.['application/json']?.schema;
        if (schemaBefore && schemaAfter)
          compare(resolve(released, schemaBefore), resolve(current, schemaAfter), 'response', `${name} ${status}`);
      }
    }
  }
  return problems;

  /** Field by field, through objects and array items (unions are compared member by member when both sides have them). */
  function compare(before: Json, after: Json, side: 'request' | 'response', where: string, depth = 0): void {
    if (!before || !after || depth > 12) return;
    const resolveSide = (doc: Json, s: Json) => (s && typeof s.$ref === 'string' ? resolve(doc, s) : s);
    if (before.properties && after.properties) {
      const requiredBefore = new Set<string>(before.required ?? []);
      const requiredAfter = new Set<string>(after.required ?? []);
      for (const [field, schema] of Object.entries<Json>(before.properties)) {
        const now = after.properties[field];
        if (!now) {
          problems.push(`${where}: field ${field} removed`);
          continue;
        }
        if (side === 'request' && requiredAfter.has(field) && !requiredBefore.has(field))
          problems.push(`${where}: field ${field} became required`);
        if (side === 'response' && requiredBefore.has(field) && !requiredAfter.has(field))
          problems.push(`${where}: field ${field} is no longer always present`);
        compare(resolveSide(released, schema), resolveSide(current, now), side, `${where}.${field}`, depth + 1);
      }
      if (side === 'request') {
        for (const field of requiredAfter)
          if (!(field in before.properties)) problems.push(`${where}: new required field ${field}`);
      }
    }
    if (before.items && after.items)
      compare(resolveSide(released, before.items), resolveSide(current, after.items), side, `${where}[]`, depth + 1);
    for (const key of ['anyOf', 'oneOf'] as const) {
      if (Array.isArray(before[key]) && Array.isArray(after[key]) && before[key].length === after[key].length) {
        before[key].forEach((member: Json, i: number) =>
          compare(resolveSide(released, member), resolveSide(current, after[key][i]), side, where, depth + 1),
        );
      }
    }
  }
}

function resolve(document: Json, schema: Json): Json {
  let node = schema;
  for (let hops = 0; node && typeof node.$ref === 'string' && hops < 10; hops++) {
    node = node.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((at: any, part: string) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], document);
  }
  return node;
}
