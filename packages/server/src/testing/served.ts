import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * The probes' view of the service: the operations of the served OpenAPI document, values made
 * from their schemas, and a client speaking real HTTP (node:http, so that a header can be sent
 * twice, which fetch and inject cannot do).
 */

export type JsonSchema = Record<string, any>;

export interface ServedParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: JsonSchema;
}

export interface ServedOperation {
  /** `METHOD /path/{param}`, the key of the declaration tables. */
  id: string;
  method: string;
  path: string;
  parameters: ServedParameter[];
  body: JsonSchema | undefined;
  /** Credential families from `security`: empty for a public operation. */
  accepts: ('api_key' | 'bearer')[];
}

export function servedOperations(document: any): ServedOperation[] {
  const resolve = (schema: JsonSchema | undefined): JsonSchema | undefined => resolveRefs(schema, document, 0);
  const operations: ServedOperation[] = [];
  for (const [path, methods] of Object.entries<any>(document.paths)) {
    for (const [method, operation] of Object.entries<any>(methods)) {
      const accepts = ((operation.security ?? []) as Record<string, unknown>[])
        .flatMap((requirement) => Object.keys(requirement))
        .map((scheme) => (scheme === 'bearer' ? 'bearer' : 'api_key') as 'api_key' | 'bearer');
      operations.push({
        id: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        parameters: (operation.parameters ?? []).map((p: any) => ({
          name: p.name,
          in: p.in,
          required: !!p.required,
          schema: resolve(p.schema) ?? {},
        })),
        body: resolve(operation.requestBody?.content?.['application/json']?.schema),
        accepts,
      });
    }
  }
  return operations;
}

function resolveRefs(schema: JsonSchema | undefined, document: any, depth: number): JsonSchema | undefined {
  if (schema === undefined || depth > 20) return schema;
  if (Array.isArray(schema)) return schema.map((s) => resolveRefs(s, document, depth + 1)) as never;
  if (typeof schema !== 'object' || schema === null) return schema;
  if (typeof schema.$ref === 'string') {
    const target = schema.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((node: any, part: string) => node?.[part], document);
    return resolveRefs(target, document, depth + 1);
  }
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(schema))
    out[k] = typeof v === 'object' && v !== null ? resolveRefs(v, document, depth + 1) : v;
  return out;
}

/** A small deterministic generator (mulberry32): the same seed gives the same cases on every run. */
export function seeded(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!,
  };
}

const isFreeForm = (schema: JsonSchema) =>
  schema.type === 'object' &&
  schema.additionalProperties !== false &&
  Object.keys(schema.properties ?? {}).length === 0;

/** A value the schema accepts, with every declared property filled in (so that every string can be probed). */
export function validValue(schema: JsonSchema, word = 'probe'): unknown {
  const options = schema.anyOf ?? schema.oneOf;
  if (options) return validValue(options[0], word);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  switch (schema.type) {
    case 'string': {
      if (schema.format === 'date-time') return new Date(Date.UTC(2024, 0, 2, 3, 4, 5)).toISOString();
      const min = schema.minLength ?? 1;
      const text = `${word} value`.padEnd(min, 'x');
      return schema.maxLength !== undefined ? text.slice(0, Math.max(min, schema.maxLength)) : text;
    }
    case 'integer':
      return Math.max(schema.minimum ?? 1, 1);
    case 'number':
      return schema.minimum !== undefined && schema.maximum !== undefined ? (schema.minimum + schema.maximum) / 2 : 1;
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, (_, i) =>
        validValue(schema.items ?? { type: 'string' }, `${word}${i}`),
      );
    case 'object': {
      if (isFreeForm(schema)) return { note: `${word} note` };
      const out: Record<string, unknown> = {};
      for (const [name, property] of Object.entries<JsonSchema>(schema.properties ?? {}))
        out[name] = validValue(property, `${word}-${name}`);
      return out;
    }
    default:
      return `${word}`;
  }
}

/** Where in a document a probe goes: the path of keys, as the error's `field` names it (`items/0/text`). */
export type Path = (string | number)[];

export interface Leaf {
  path: Path;
  schema: JsonSchema;
}

/** Every place in `value` (made by validValue from `schema`) with the schema that governs it. */
export function leaves(schema: JsonSchema, value: unknown, path: Path = []): Leaf[] {
  const options = schema.anyOf ?? schema.oneOf;
  const governing = options ? options[0] : schema;
  const out: Leaf[] = [{ path, schema: governing }];
  if (Array.isArray(value)) value.forEach((item, i) => out.push(...leaves(governing.items ?? {}, item, [...path, i])));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) out.push(...leaves(governing.properties?.[k] ?? {}, v, [...path, k]));
  }
  return out;
}

export function setAt(document: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const copy: any = structuredClone(document);
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key];
  node[path[path.length - 1]!] = value;
  return copy;
}

export function deleteAt(document: unknown, path: Path): unknown {
  const copy: any = structuredClone(document);
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key];
  delete node[path[path.length - 1]!];
  return copy;
}

/** JSON text nested `depth` levels deep, built as text (JSON.stringify itself would overflow). */
export function deeplyNested(depth: number, kind: 'object' | 'array'): string {
  return kind === 'object'
    ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
    : `${'['.repeat(depth)}1${']'.repeat(depth)}`;
}

/** A value of another JSON type than the schema's. */
export function wrongType(schema: JsonSchema): unknown {
  switch (schema.type) {
    case 'string':
      return 12345;
    case 'integer':
    case 'number':
      return 'not a number';
    case 'boolean':
      return 'true';
    case 'array':
      return { not: 'an array' };
    case 'object':
      return ['not', 'an', 'object'];
    default:
      return undefined;
  }
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

export interface RawRequest {
  method: string;
  path: string;
  /** A value given as an array is sent as that many header lines. */
  headers?: Record<string, string | string[] | undefined>;
  /** Sent as is. */
  payload?: string | Buffer;
}

/** The app listening on an ephemeral port, and a keep-alive client for it. */
export async function listen(app: FastifyInstance) {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const send = (request: RawRequest): Promise<RawResponse> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(request.headers ?? {})) if (value !== undefined) headers[name] = value;
      if (request.payload !== undefined) headers['content-length'] = String(Buffer.byteLength(request.payload));
      const req = http.request(
        { host: '127.0.0.1', port, method: request.method, path: request.path, headers, agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: unknown;
            try {
              body = text ? JSON.parse(text) : undefined;
            } catch {
              body = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      if (request.payload !== undefined) req.write(request.payload);
      req.end();
    });
  return { port, send, close: () => agent.destroy() };
}

/**
 * What every answer must be: an X-Request-ID header, and for an error the documented body
 * (`error.code`, `error.request_id` equal to the header, `error.field` for a validation error).
 * Returns the problems found (empty when the answer is well formed).
 */
export function answerProblems(res: { status: number; headers: Record<string, unknown>; body: any }): string[] {
  const problems: string[] = [];
  const requestId = res.headers['x-request-id'];
  if (typeof requestId !== 'string' || requestId === '') problems.push('no X-Request-ID header');
  if (res.status >= 500) problems.push(`server error ${res.status}`);
  if (res.status >= 400) {
    const error = res.body?.error;
    if (typeof error?.code !== 'string') problems.push('error body without error.code');
    if (typeof error?.request_id !== 'string') problems.push('error body without error.request_id');
    else if (error.request_id !== requestId) problems.push('error.request_id differs from X-Request-ID');
    if (error?.code === 'validation_error' && (typeof error.field !== 'string' || error.field === ''))
      problems.push('validation error without error.field');
  }
  return problems;
}
