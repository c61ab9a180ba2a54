/**
 * The finishing pass over the generated OpenAPI document (http/openapi.ts, `transformObject`), so that
 * every operation, including ones added later, gets the same treatment without declaring anything:
 * each request and success body becomes a named component (`MemoriesAddRequest`, `MemoriesAddResponse`),
 * for generators that would otherwise invent anonymous type names, and each body and parameter gets an
 * example made from its schema (a schema's own `examples`/`default` wins; several examples of a request body stay
 * its `examples`).
 */
type Json = Record<string, any>;

export function finishDocument(document: Json): Json {
  const schemas: Json = ((document.components ??= {}).schemas ??= {});
  for (const methods of Object.values<Json>(document.paths ?? {})) {
    for (const operation of Object.values<Json>(methods)) {
      const base = pascal(String(operation.operationId));
      for (const [type, media] of Object.entries<Json>(operation.requestBody?.content ?? {})) {
        media.schema = named(schemas, media.schema, `${base}Request`, type);
        // A schema with several examples has them as the body's `examples` (example and examples exclude each other).
        if (!media.examples) media.example ??= exampleOf(media.schema, document);
      }
      const successes = Object.entries<Json>(operation.responses ?? {}).filter(
        ([status, r]) => status.startsWith('2') && r.content,
      );
      for (const [status, response] of successes) {
        for (const [type, media] of Object.entries<Json>(response.content)) {
          media.schema = named(
            schemas,
            media.schema,
            successes.length > 1 ? `${base}Response${status}` : `${base}Response`,
            type,
          );
          if (type === 'application/json') media.example ??= exampleOf(media.schema, document);
        }
      }
      for (const parameter of operation.parameters ?? []) {
        if (parameter.schema && parameter.example === undefined)
          parameter.example = exampleOf(parameter.schema, document, parameter.name);
      }
    }
  }
  return document;
}

/** `memories.add` -> `MemoriesAdd`. */
export function pascal(operationId: string): string {
  return operationId
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

/** The schema moved into components under `name` (a reference stays as it is; a second media type gets its own name). */
function named(schemas: Json, schema: Json | undefined, name: string, type: string): Json | undefined {
  if (!schema || typeof schema.$ref === 'string') return schema;
  const suffix = type === 'application/json' ? '' : pascal(type.split('/')[1] ?? type);
  let unique = name + suffix;
  for (let i = 2; unique in schemas; i++) unique = `${name}${suffix}${i}`;
  schemas[unique] = { title: unique, ...schema };
  return { $ref: `#/components/schemas/${unique}` };
}

const WORDS: Record<string, string> = {
  text: 'Prefers a window seat on long flights',
  query: 'seating preference on flights',
  content: 'Prefers a window seat on long flights',
  message: 'Done',
  name: 'Travel assistant',
  email: 'ada@example.com',
  password: 'correct-horse-battery-staple',
  url: 'https://hooks.example.com/engram',
  source: 'chat',
  session_id: 'session-7',
  end_user_id: 'user-42',
  client_ref: 'crm-1042',
  slug: 'travel-assistant',
  description: 'Memories of the travel assistant',
  role: 'member',
  provider: 'slack',
  cursor: 'eyJvZmZzZXQiOjUwfQ',
};

/** A value that satisfies the schema, readable where the field's name says what it holds. */
export function exampleOf(schema: Json | undefined, document: Json, name = '', depth = 0): unknown {
  if (!schema || depth > 12) return undefined;
  if (typeof schema.$ref === 'string') {
    const target = schema.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((node: any, part: string) => node?.[part], document);
    return exampleOf(target, document, name, depth + 1);
  }
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined) return schema.default;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(schema[key])) {
      const member = schema[key].find((m: Json) => m.type !== 'null') ?? schema[key][0];
      return exampleOf(member, document, name, depth + 1);
    }
  }
  if (Array.isArray(schema.allOf)) {
    return Object.assign({}, ...schema.allOf.map((member: Json) => exampleOf(member, document, name, depth + 1)));
  }
  const type = Array.isArray(schema.type) ? (schema.type.find((t: string) => t !== 'null') ?? 'null') : schema.type;
  switch (type) {
    case 'null':
      return null;
    case 'boolean':
      return true;
    case 'integer':
    case 'number': {
      const low = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : undefined);
      let value = type === 'integer' ? (low !== undefined ? Math.max(low, 1) : 1) : (low ?? 0.5);
      if (schema.maximum !== undefined) value = Math.min(value, schema.maximum);
      return value;
    }
    case 'string':
      return stringExample(schema, name);
    case 'array': {
      const item = exampleOf(schema.items, document, name.replace(/s$/, ''), depth + 1);
      const count = Math.max(schema.minItems ?? 1, 1);
      return item === undefined ? [] : Array.from({ length: count }, () => item);
    }
    default: {
      // An unconstrained schema ({}) takes any value; an object stands for it.
      if (!schema.properties) return {};
      const out: Json = {};
      for (const [field, property] of Object.entries<Json>(schema.properties)) {
        const value = exampleOf(property, document, field, depth + 1);
        if (value !== undefined) out[field] = value;
      }
      return out;
    }
  }
}

function stringExample(schema: Json, name: string): string {
  const byFormat: Record<string, string> = {
    'date-time': '2026-01-15T09:30:00.000Z',
    date: '2026-01-15',
    uri: 'https://hooks.example.com/engram',
    url: 'https://hooks.example.com/engram',
    email: 'ada@example.com',
    uuid: '3f2b8c1e-9a4d-4e2b-8f6a-1c2d3e4f5a6b',
    binary: '',
  };
  const candidates = [
    byFormat[schema.format],
    WORDS[name],
    name.endsWith('_id') || name === 'id' ? '42' : undefined,
    name.endsWith('_at') ? byFormat['date-time'] : undefined,
    name ? name.replace(/_/g, '-') : undefined,
    'example',
    'a',
    '1',
  ].filter((v): v is string => v !== undefined);
  const pattern = typeof schema.pattern === 'string' ? safeRegExp(schema.pattern) : undefined;
  for (const candidate of candidates) {
    let value = candidate;
    if (schema.minLength && value.length < schema.minLength) value = value.padEnd(schema.minLength, 'x');
    if (schema.maxLength && value.length > schema.maxLength) value = value.slice(0, schema.maxLength);
    if (!pattern || pattern.test(value)) return value;
  }
  return candidates[0]!;
}

function safeRegExp(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, 'u');
  } catch {
    return undefined;
  }
}
