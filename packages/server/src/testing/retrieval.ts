import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { CallOptions, Response, TestApp } from './harness.js';
import { addMemory } from './memories.js';
import { until } from './until.js';
import { loadConfig, type Config } from '../config.js';
import { LIVE_PAGE_COLUMNS, type IndexedMemory } from '../modules/memories/index.js';

/** Helpers shared by the retrieval and /v1 tenant-plane tests. */

/** Rows as liveOwnerPage gives them: LIVE_PAGE_COLUMNS' values, tags and metadata as JSON text (as SQLite holds them). */
export const pageValues = (rows: readonly IndexedMemory[]): unknown[][] =>
  rows.map((row) => LIVE_PAGE_COLUMNS.map((c) => (c === 'tags' || c === 'metadata' ? JSON.stringify(row[c]) : row[c])));

/** A unique end-user id, so that a test starts from an end user nobody has indexed yet. */
export const freshUser = (prefix = 'u'): string => `${prefix}-${Math.random().toString(36).slice(2, 10)}`;

/** Calls a retrieval operation and asserts 200; returns the body. */
export async function post200(t: TestApp, url: string, body: unknown, options: CallOptions = {}) {
  const res = await t.call('POST', url, { ...options, body });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** POST /memory/query; returns the ranked memories. */
export async function query(
  t: TestApp,
  body: string | Record<string, unknown>,
  options: CallOptions = {},
): Promise<any[]> {
  return (await post200(t, '/memory/query', typeof body === 'string' ? { query: body } : body, options)).memories;
}

export const idsOf = (memories: Array<{ id: number }>): number[] => memories.map((m) => m.id);

/** Adds several memories for one end user; returns them in order. */
export async function addAll(t: TestApp, items: Array<string | Record<string, unknown>>, options: CallOptions = {}) {
  const out = [];
  for (const item of items) out.push(await addMemory(t, item, options));
  return out;
}

/**
 * Sets stored columns the API cannot (created_at, is_summary). Only for end users whose index
 * has not been built yet: the change does not bump their revision.
 */
export async function setColumns(
  t: TestApp,
  id: number,
  values: { created_at?: string; is_summary?: boolean },
): Promise<void> {
  const set: Record<string, unknown> = {};
  if (values.created_at !== undefined) set.created_at = values.created_at;
  if (values.is_summary !== undefined) set.is_summary = t.database.bool(values.is_summary);
  await t.database.db.updateTable('memories').set(set).where('id', '=', id).execute();
}

/** Polls a refresh job until it is finished (bounded); returns its final state. */
export async function waitForJob(t: TestApp, id: number, options: CallOptions = {}) {
  return until(
    async () => {
      const res = await t.call('GET', `/memory/refresh/${id}`, options);
      expect(res.status, res.text).toBe(200);
      return res.body.status === 'succeeded' || res.body.status === 'failed' ? res.body : undefined;
    },
    `refresh job ${id}`,
    10_000,
  );
}

/** Sum of an explanation's contributions. */
export const explained = (explanation: Record<string, number>): number =>
  Object.values(explanation).reduce((a, b) => a + b, 0);

/** The error field of a 400 response (for tables of bad requests). */
export const fieldOfError = (res: Response): string | undefined =>
  res.status === 400 ? res.body?.error?.field : `status ${res.status}`;

/**
 * A local OpenAI-compatible embeddings server speaking the real wire: `POST /v1/embeddings`
 * `{model, input[]}` -> `{object: "list", data: [{object, index, embedding}], model, usage}`.
 * Words of one concept share a dimension, so "canine" and "hound" are close with no word in
 * common; `generation` changes every vector (an embedder change, for refresh).
 */
export interface FakeEmbedder {
  baseUrl: string;
  requests: Array<{ model: string; input: string[] }>;
  generation: number;
  /** When set, each request is answered once the promise it returns settles (a slow provider the test releases). */
  hold: ((input: string[]) => Promise<void>) | null;
  /** When set, a request it gives a status for is answered with that HTTP error (a failing provider). */
  fail: ((input: string[]) => number | null) | null;
  vector(text: string): number[];
  close(): Promise<void>;
}

const CONCEPTS: Record<string, number> = {
  dog: 0,
  dogs: 0,
  hound: 0,
  canine: 0,
  puppy: 0,
  car: 1,
  cars: 1,
  automobile: 1,
  vehicle: 1,
  sedan: 1,
  food: 2,
  meal: 2,
  cuisine: 2,
  sushi: 2,
  dinner: 2,
};
const DIMS = 16;

export async function startFakeEmbedder(): Promise<FakeEmbedder> {
  const fake: FakeEmbedder = {
    baseUrl: '',
    requests: [],
    generation: 0,
    hold: null,
    fail: null,
    vector(text) {
      const v = new Array<number>(DIMS).fill(0);
      for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
        let dim = CONCEPTS[word];
        if (dim === undefined) {
          let h = 0;
          for (const c of word) h = (h * 31 + c.charCodeAt(0)) >>> 0;
          dim = 3 + (h % (DIMS - 3));
        }
        v[(dim + fake.generation) % DIMS]! += 1;
      }
      v[(DIMS - 1 + fake.generation) % DIMS]! += 0.01;
      const norm = Math.hypot(...v);
      return v.map((x) => x / norm);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', async () => {
      if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'not found' } }));
        return;
      }
      const body = JSON.parse(raw) as { model: string; input: string[] };
      fake.requests.push(body);
      await fake.hold?.(body.input);
      const failed = fake.fail?.(body.input);
      if (failed) {
        res
          .writeHead(failed, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: `failed with ${failed}`, type: 'server_error' } }));
        return;
      }
      // Items in reverse order: `index` is authoritative on the real wire.
      const data = body.input
        .map((text, index) => ({ object: 'embedding', index, embedding: fake.vector(text) }))
        .reverse();
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 0, total_tokens: 0 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}

/** Retrieval configuration: the defaults with some settings changed. */
export const retrievalConfig = (overrides: Partial<Config['retrieval']>): { retrieval: Config['retrieval'] } => ({
  retrieval: { ...loadConfig({}).retrieval, ...overrides },
});
