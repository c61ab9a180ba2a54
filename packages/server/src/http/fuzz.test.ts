import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../testing/harness.js';
import { MCP_HEADERS, MCP_TOOLS, toolAnswer } from '../testing/mcp.js';
import { DECLARATIONS, fillPath, queryString } from '../testing/operations.js';
import { PROBE_CONFIG, type Built, type Credential, type World } from '../testing/probe-places.js';
import { buildWorld } from '../testing/probe-world.js';
import {
  answerProblems,
  deeplyNested,
  deleteAt,
  leaves,
  listen,
  seeded,
  servedOperations,
  setAt,
  validValue,
  wrongType,
  type JsonSchema,
  type Path,
  type RawRequest,
  type RawResponse,
  type ServedOperation,
} from '../testing/served.js';

/**
 * Schema-driven fuzzing of every operation of the served OpenAPI document, over real HTTP: wrong
 * types, missing fields, huge and deeply nested values, NUL and lone surrogates in every string,
 * huge numbers in integer queries, non-canonical path ids, repeated credential and scope headers,
 * wrong content types and malformed JSON. No answer may be a 5xx or lack the documented error
 * body; each kind of malformed input has the answer the contract gives it. The generator is
 * seeded, so a failure names a case that reproduces.
 */

const NESTING = 5_000;
/** Cases drawn per operation from the kinds that have many candidates (string leaves, properties). */
const PER_KIND = 12;

interface Case {
  name: string;
  request: RawRequest;
  /** The answer the contract gives this input, beyond "not 5xx, well formed". */
  expect?: { status: number[]; field?: (field: string) => boolean };
}

const fieldOf = (path: Path) => path.join('/');
/** The error names the probed place, a place that contains it, or a place inside it (what the probe put there). */
const names = (path: Path) => (field: string) => {
  const probed = fieldOf(path);
  if (probed === '') return field !== '';
  return field === probed || probed.startsWith(`${field}/`) || field.startsWith(`${probed}/`);
};
const sameHeader = (name: string) => (field: string) => field.toLowerCase() === name.toLowerCase();

function credentialFor(op: ServedOperation, w: World): Credential {
  const name = op.accepts.includes('api_key') ? 'unbound key with every scope' : 'owner token';
  return w.credentials.find((c) => c.name === name)!;
}

/** Malformed variants of one well-formed request. */
function casesFor(op: ServedOperation, built: Built, headers: Record<string, string>, seed: number): Case[] {
  const random = seeded(seed);
  const sample = <T>(items: T[]) => {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = random.int(i + 1);
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy.slice(0, PER_KIND);
  };
  const url = (params = built.params, query = built.query) => fillPath(op.path, params) + queryString(query);
  const base = (overrides: Partial<RawRequest> = {}): RawRequest => {
    // A raw payload (a multipart form) goes as built, with the Content-Type in its headers.
    if (built.payload) return { method: op.method, path: url(), headers, payload: built.payload, ...overrides };
    const body = built.body ?? (op.body ? validValue(op.body) : undefined);
    return {
      method: op.method,
      path: url(),
      headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
      ...overrides,
    };
  };
  const cases: Case[] = [{ name: 'well formed', request: base() }];
  const invalid = (path: Path) => ({ status: [400], field: names(path) });

  // ---- body -------------------------------------------------------------------------------------
  if (op.body) {
    const body = built.body ?? validValue(op.body);
    const withBody = (name: string, value: unknown, expect?: Case['expect']) =>
      cases.push({ name, request: base({ payload: JSON.stringify(value) }), ...(expect ? { expect } : {}) });
    const all = leaves(op.body, body);
    const strings = all.filter(
      (l) =>
        typeof l.schema.type === 'string' &&
        l.schema.type === 'string' &&
        l.schema.format === undefined &&
        !l.schema.enum,
    );
    const freeStrings = all.filter((l) => l.path.length > 0 && typeof getAt(body, l.path) === 'string');
    for (const leaf of sample([...new Map([...strings, ...freeStrings].map((l) => [fieldOf(l.path), l])).values()])) {
      const value = getAt(body, leaf.path) as string;
      withBody(`NUL in ${fieldOf(leaf.path)}`, setAt(body, leaf.path, `${value}\u0000x`), invalid(leaf.path));
      withBody(`only NUL in ${fieldOf(leaf.path)}`, setAt(body, leaf.path, '\u0000'), invalid(leaf.path));
      withBody(
        `lone surrogate in ${fieldOf(leaf.path)}`,
        setAt(body, leaf.path, `${value}\ud800x`),
        invalid(leaf.path),
      );
      withBody(`1 MB string in ${fieldOf(leaf.path)}`, setAt(body, leaf.path, 'x'.repeat(1_000_000)), {
        status: [400, 413],
      });
      if (leaf.schema.maxLength !== undefined)
        withBody(
          `over-long ${fieldOf(leaf.path)}`,
          setAt(body, leaf.path, 'y'.repeat(leaf.schema.maxLength + 1)),
          invalid(leaf.path),
        );
    }
    const typed = all.filter((l) => l.path.length > 0 && wrongType(l.schema) !== undefined);
    for (const leaf of sample(typed))
      withBody(
        `wrong type for ${fieldOf(leaf.path)}`,
        setAt(body, leaf.path, wrongType(leaf.schema)),
        invalid(leaf.path),
      );
    for (const leaf of sample(all.filter((l) => l.schema.type === 'integer' || l.schema.type === 'number'))) {
      for (const n of [1e20, -1e20, 1.5e308, 0.5]) {
        if (leaf.schema.type === 'number' && n === 0.5) continue;
        withBody(`${n} in ${fieldOf(leaf.path)}`, setAt(body, leaf.path, n));
      }
    }
    for (const leaf of all.filter((l) => l.path.length > 0)) {
      const parent = leaf.path.slice(0, -1);
      const parentSchema = all.find((l) => fieldOf(l.path) === fieldOf(parent))?.schema;
      const key = leaf.path[leaf.path.length - 1]!;
      if (typeof key === 'string' && parentSchema?.required?.includes(key))
        withBody(`missing ${fieldOf(leaf.path)}`, deleteAt(body, leaf.path), invalid(leaf.path));
    }
    // Deep nesting where JSON of any shape could go: the body, every object and array.
    const containers = all.filter((l) => l.schema.type === 'object' || l.schema.type === 'array');
    for (const leaf of containers) {
      for (const kind of ['object', 'array'] as const) {
        const marker = '"__deep__"';
        const text = JSON.stringify(setAt(body, leaf.path, '__deep__')).replace(marker, deeplyNested(NESTING, kind));
        cases.push({
          name: `${NESTING} levels of ${kind} at ${fieldOf(leaf.path) || 'the body'}`,
          request: base({ payload: text }),
          expect: invalid(leaf.path),
        });
        cases.push({
          name: `${NESTING} levels of ${kind} at ${fieldOf(leaf.path) || 'the body'}, with an Idempotency-Key`,
          request: base({
            payload: text,
            headers: { ...base().headers, 'idempotency-key': `fuzz-${seed}-${leaf.path.join('.')}-${kind}` },
          }),
          expect: invalid(leaf.path),
        });
      }
    }
    for (const other of [null, 'a string', 42, op.body.type === 'array' ? {} : []])
      withBody(`body is ${JSON.stringify(other)}`, other, invalid([]));
    cases.push({
      name: 'malformed JSON',
      request: base({ payload: '{"text": "unterminated' }),
      expect: { status: [400], field: (f) => f === 'body' },
    });
    cases.push({
      name: 'empty JSON body',
      request: base({ payload: '' }),
      expect: { status: [400], field: (f) => f === 'body' },
    });
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
    ]) {
      cases.push({
        name: `Content-Type ${type}`,
        request: base({ headers: { ...base().headers, 'content-type': type } }),
        expect: { status: [415] },
      });
    }
  }

  // ---- query ------------------------------------------------------------------------------------
  for (const p of op.parameters.filter((q) => q.in === 'query')) {
    const query = (value: string) => url(built.params, { ...(built.query ?? {}), [p.name]: value });
    const probe = (value: string, expect?: Case['expect']) =>
      cases.push({
        name: `query ${p.name}=${value}`,
        request: base({ path: query(value) }),
        ...(expect ? { expect } : {}),
      });
    if (p.schema.type === 'integer') {
      for (const v of [
        '1e20',
        'Infinity',
        '-Infinity',
        'NaN',
        '-1',
        '1.5',
        'abc',
        '99999999999999999999',
        '9223372036854775808',
        '',
      ]) {
        probe(v, { status: [400], field: (f) => f === p.name });
      }
    } else {
      cases.push({
        name: `query ${p.name} with NUL`,
        request: base({ path: `${url()}${url().includes('?') ? '&' : '?'}${p.name}=a%00b` }),
        expect: { status: [400], field: (f) => f === p.name },
      });
      cases.push({
        name: `query ${p.name} with a lone surrogate`,
        request: base({ path: `${url()}${url().includes('?') ? '&' : '?'}${p.name}=a%ED%A0%80b` }),
      });
      probe('x'.repeat(5000));
    }
  }

  // ---- path -------------------------------------------------------------------------------------
  for (const p of op.parameters.filter((q) => q.in === 'path')) {
    const real = String(built.params?.[p.name] ?? '1');
    const raw = (value: string) =>
      fillPath(op.path, { ...built.params }).replace(encodeURIComponent(real), value) + queryString(built.query);
    const variants =
      p.schema.type === 'integer'
        ? [
            `0${real}`,
            `+${real}`,
            `%20${real}`,
            `${real}%20`,
            `${real}.0`,
            `${real}e0`,
            '0',
            '-1',
            '9223372036854775808',
            '99999999999999999999',
            'abc',
            '%00',
            '0x1',
          ]
        : ['%00', `${real}%00`, '%ED%A0%80', 'x'.repeat(3000)];
    for (const v of variants) {
      // A non-canonical or out-of-range id names nothing: 404, or 400 naming the parameter.
      cases.push({
        name: `path ${p.name}=${v}`,
        request: base({ path: raw(v) }),
        expect: { status: [400, 404], field: (f) => f === p.name || f === 'path' },
      });
    }
  }

  // ---- headers ----------------------------------------------------------------------------------
  // The headers this request's credential family reads: each is 400 when repeated.
  // X-Tenant-ID only where the operation resolves a data scope (API keys only): the control plane ignores it.
  const repeatable = headers.authorization
    ? ['authorization', 'x-organization-id']
    : ['x-api-key', 'x-project-id', ...(op.accepts.includes('bearer') ? [] : ['x-tenant-id']), 'x-end-user-id'];
  if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(op.method) && op.accepts.length) repeatable.push('idempotency-key');
  for (const name of repeatable) {
    const declared = op.parameters.some((p) => p.in === 'header' && p.name === name);
    const present =
      headers[name] ??
      (declared && name !== 'x-end-user-id' ? `fuzz-${name}` : name === 'idempotency-key' ? `fuzz-${seed}` : undefined);
    if (present === undefined || !op.accepts.length) continue;
    for (const [label, values] of [
      ['the same value', [present, present]],
      ['two values', [present, `${present}-other`]],
    ] as const) {
      cases.push({
        name: `${name} sent twice (${label})`,
        request: base({ headers: { ...base().headers, [name]: [...values] } }),
        expect: { status: [400], field: sameHeader(name) },
      });
    }
  }
  return cases;
}

function getAt(document: unknown, path: Path): unknown {
  return path.reduce<any>((node, key) => node?.[key], document);
}

function check(c: Case, res: RawResponse): string[] {
  const problems = answerProblems(res);
  // A batch reports an invalid item in its own result (207), leaving the rest of the batch to stand.
  const itemRefused =
    res.status === 207 && (res.body?.results ?? []).some((r: any) => r?.error?.code === 'validation_error');
  if (c.expect && !(itemRefused && c.expect.status.includes(400))) {
    if (!c.expect.status.includes(res.status))
      problems.push(`answered ${res.status}, expected ${c.expect.status.join(' or ')}`);
    else if (res.status === 400 && c.expect.field && !c.expect.field(String(res.body?.error?.field ?? ''))) {
      problems.push(`400 names field ${JSON.stringify(res.body?.error?.field)}`);
    }
  }
  return problems.map((p) => `${c.name}: ${p} ${res.text.slice(0, 140)}`);
}

/** A raw request line and headers the HTTP parser refuses, and what the server answered. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (d) => (answer += d));
    socket.on('close', () => resolve(answer));
    socket.on('error', () => resolve(answer));
    socket.write(text);
    setTimeout(() => socket.end(), 500).unref();
  });
}

function parseRaw(answer: string): RawResponse {
  const [head = '', ...rest] = answer.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const text = rest.join('\r\n\r\n');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, text, body };
}

forEachDialect('fuzzing the served operations', (dialect) => {
  const t = useTestApp(dialect, PROBE_CONFIG);
  let world: World;
  let operations: ServedOperation[];
  let client: Awaited<ReturnType<typeof listen>>;

  beforeAll(async () => {
    world = await buildWorld(t);
    operations = servedOperations((await t.call('GET', '/openapi.json')).body);
    client = await listen(t.app);
  });
  afterAll(() => client?.close());

  it('marks no parameter with a default as required', () => {
    const wrong = operations.flatMap((op) =>
      op.parameters
        .filter((p) => p.required && p.schema.default !== undefined)
        .map((p) => `${op.id} ${p.in} ${p.name}`),
    );
    expect(wrong).toEqual([]);
  });

  it('answers every malformed input to every operation with a well-formed 4xx', async () => {
    const failures: string[] = [];
    let sent = 0;
    for (const [index, op] of operations.entries()) {
      const d = DECLARATIONS[op.id];
      expect(d, `${op.id} has no declaration in testing/operations.ts`).toBeDefined();
      const c = credentialFor(op, world);
      const built: Built = d!.build ? await d!.build(world, 'own', c) : {};
      const headers = op.accepts.length ? { ...(built.headers ?? {}), ...c.headers } : {};
      // A fresh session per operation: a probe of the one before may have ended the last one.
      if (op.accepts.length && c.kind === 'bearer') headers.authorization = `Bearer ${await c.relogin!()}`;
      for (const fuzz of casesFor(op, built, headers, 1_000 + index)) {
        // Operations that end the session get a fresh one per case (a repeated header stays repeated).
        if (d!.consumesSession && c.relogin) {
          const fresh = `Bearer ${await c.relogin()}`;
          const sent = fuzz.request.headers?.authorization;
          fuzz.request.headers = {
            ...fuzz.request.headers,
            authorization: Array.isArray(sent)
              ? sent.map((v, i) => (i === 0 ? fresh : v === sent[0] ? fresh : v))
              : fresh,
          };
        }
        const res = await client.send(fuzz.request);
        sent++;
        failures.push(...check(fuzz, res).map((f) => `${op.id} ${f}`));
      }
    }
    expect(sent).toBeGreaterThan(1000);
    expect(failures).toEqual([]);
  }, 240_000);

  it('answers malformed MCP tool arguments with tool errors, and a malformed MCP exchange with a well-formed 4xx (POST /mcp)', async () => {
    const key = world.credentials.find((c) => c.name === 'unbound key with every scope')!;
    const headers = {
      ...key.headers,
      'x-end-user-id': 'alice',
      'x-tenant-id': 'acme',
      'content-type': 'application/json',
      ...MCP_HEADERS,
    };
    let id = 0;
    const rpc = (method: string, params: unknown) => JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params });
    const post = (payload: string, extra: Record<string, string | string[]> = {}) =>
      client.send({ method: 'POST', path: '/mcp', headers: { ...headers, ...extra }, payload });
    const listed = await post(rpc('tools/list', {}));
    const tools = listed.body.result.tools as { name: string; inputSchema: JsonSchema }[];
    expect(tools.map((tool) => tool.name).sort()).toEqual(Object.keys(MCP_TOOLS).sort());
    const failures: string[] = [];
    /** Arguments the tool refuses: a tool error (the connection goes on), from the input schema or from the operation it sends. */
    const refusedArguments = (name: string, label: string, res: RawResponse) => {
      const problems = answerProblems(res);
      if (res.status !== 200 || !toolAnswer(res).result?.isError) problems.push(`HTTP ${res.status}, not a tool error`);
      failures.push(...problems.map((p) => `${name} ${label}: ${p} ${res.text.slice(0, 140)}`));
    };
    for (const tool of tools) {
      const args = (await MCP_TOOLS[tool.name]!.build(world, 'own', key)).args;
      const call = (value: unknown) => post(rpc('tools/call', { name: tool.name, arguments: value }));
      for (const [property, schema] of Object.entries<JsonSchema>(tool.inputSchema.properties ?? {})) {
        const bad = wrongType(schema);
        if (bad !== undefined)
          refusedArguments(tool.name, `wrong type for ${property}`, await call({ ...args, [property]: bad }));
        if (schema.type === 'string') {
          refusedArguments(tool.name, `NUL in ${property}`, await call({ ...args, [property]: `probe\u0000x` }));
          const big = await call({ ...args, [property]: 'x'.repeat(1_000_000) });
          // Within the body limit a tool error (the operation's 400 or the schema's), over it 413.
          if (big.status !== 413) refusedArguments(tool.name, `1 MB string in ${property}`, big);
          else failures.push(...answerProblems(big).map((p) => `${tool.name} 1 MB string in ${property}: ${p}`));
        }
        if (schema.type === 'integer' || schema.type === 'number') {
          for (const n of [1e20, -1, 0.5]) {
            const res = await call({ ...args, [property]: n });
            failures.push(...answerProblems(res).map((p) => `${tool.name} ${n} in ${property}: ${p}`));
            if (res.status !== 200 && res.status !== 400)
              failures.push(`${tool.name} ${n} in ${property}: HTTP ${res.status}`);
          }
        }
      }
      for (const required of tool.inputSchema.required ?? []) {
        const { [required]: _, ...rest } = args;
        refusedArguments(tool.name, `missing ${required}`, await call(rest));
      }
      for (const other of [null, 'a string', 42, []]) {
        const res = await call(other);
        // Arguments that are not an object: a tool error or the JSON-RPC error for invalid params, never a 5xx.
        const answered = res.status === 200 && (toolAnswer(res).result?.isError || toolAnswer(res).rpcError);
        if (!answered || answerProblems(res).length)
          failures.push(
            `${tool.name} arguments ${JSON.stringify(other)}: HTTP ${res.status} ${res.text.slice(0, 140)}`,
          );
      }
      // Nesting in the arguments reaches the operation (which refuses it, 400 naming the place) or is dropped with an undeclared property.
      const deep = await post(
        rpc('tools/call', { name: tool.name, arguments: { ...args, deep: '__deep__' } }).replace(
          '"__deep__"',
          deeplyNested(NESTING, 'object'),
        ),
      );
      if (deep.status !== 200 || !(deep.body?.result || deep.body?.error))
        failures.push(
          `${tool.name} ${NESTING} levels in the arguments: HTTP ${deep.status} ${deep.text.slice(0, 140)}`,
        );
      failures.push(...answerProblems(deep).map((p) => `${tool.name} ${NESTING} levels in the arguments: ${p}`));
    }
    // The exchange itself: each is answered without a 5xx, with the API's error body for a refusal.
    const exchange: Array<[string, Promise<RawResponse>, number[]]> = [
      ['an unknown tool', post(rpc('tools/call', { name: 'no_such_tool', arguments: {} })), [200]],
      ['an unknown method', post(rpc('no/such/method', {})), [200]],
      ['a body that is not JSON-RPC', post('{"hello": "world"}'), [400]],
      // No request in it: nothing to answer (the SDK's transport answers 202, as for notifications).
      ['an empty batch', post('[]'), [202]],
      ['malformed JSON', post('{"jsonrpc": "2.0", "id": 1, "method"'), [400]],
      ['NUL in the method', post(rpc('tools/list\u0000', {})), [400]],
      [
        `${NESTING} levels in params`,
        post(rpc('tools/list', '__deep__').replace('"__deep__"', deeplyNested(NESTING, 'array'))),
        [400],
      ],
      ['Content-Type text/plain', post(rpc('tools/list', {}), { 'content-type': 'text/plain' }), [415]],
      ['Accept without text/event-stream', post(rpc('tools/list', {}), { accept: 'application/json' }), [400]],
      [
        'an unsupported MCP-Protocol-Version',
        post(rpc('tools/list', {}), { 'mcp-protocol-version': '1999-01-01' }),
        [400],
      ],
      [
        'X-API-Key sent twice',
        post(rpc('tools/list', {}), { 'x-api-key': [key.headers['x-api-key']!, 'egm_other'] }),
        [400],
      ],
      ['X-End-User-ID sent twice', post(rpc('tools/list', {}), { 'x-end-user-id': ['alice', 'bob'] }), [400]],
      ['GET', client.send({ method: 'GET', path: '/mcp', headers }), [405]],
      [
        'DELETE',
        client.send({ method: 'DELETE', path: '/mcp', headers: { ...headers, 'content-type': undefined } }),
        [405],
      ],
    ];
    for (const [label, sent, statuses] of exchange) {
      const res = await sent;
      if (!statuses.includes(res.status))
        failures.push(
          `MCP exchange with ${label}: HTTP ${res.status} (expected ${statuses.join(' or ')}) ${res.text.slice(0, 140)}`,
        );
      failures.push(...answerProblems(res).map((p) => `MCP exchange with ${label}: ${p} ${res.text.slice(0, 140)}`));
      if (res.status === 200 && !res.body?.error && !res.body?.result?.isError)
        failures.push(`MCP exchange with ${label}: answered as a success`);
    }
    expect(failures).toEqual([]);
  }, 240_000);

  it("answers what Node's HTTP parser refuses with the documented error body", async () => {
    const host = `Host: 127.0.0.1:${client.port}\r\n`;
    const probes = {
      'a control character in a header': `GET /healthz HTTP/1.1\r\n${host}X-End-User-ID: a\u0001b\r\n\r\n`,
      'a header over 16 KB': `GET /healthz HTTP/1.1\r\n${host}X-Filler: ${'f'.repeat(17_000)}\r\n\r\n`,
      'a Content-Length shorter than the body': `POST /memory/add HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: 5\r\n\r\n{"text": "longer than five"}`,
      'a malformed request line': `GET /healthz HTTP/1.1 extra\r\n${host}\r\n`,
    };
    const failures: string[] = [];
    for (const [name, text] of Object.entries(probes)) {
      const answers = (await rawExchange(client.port, text))
        .split(/(?=HTTP\/1\.1 )/)
        .filter(Boolean)
        .map(parseRaw);
      for (const res of answers.filter((r) => r.status >= 400))
        failures.push(...answerProblems(res).map((p) => `${name}: ${p} ${res.text.slice(0, 100)}`));
      if (!answers.some((r) => r.status >= 400))
        failures.push(`${name}: no error answer (${answers.map((r) => r.status).join(', ') || 'none'})`);
    }
    expect(failures).toEqual([]);
  });
});
