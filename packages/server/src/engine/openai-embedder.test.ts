import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAiEmbedder } from './openai-embedder.js';

// A local stand-in for an OpenAI-compatible /embeddings endpoint, speaking the real wire format.
interface Seen {
  url: string;
  auth: string | undefined;
  body: { model: string; input: string[]; dimensions?: number };
}
const seen: Seen[] = [];
let server: Server;
let baseUrl = '';
const KEY = 'sk-test-SECRET-123';

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = '';
    req.on('data', (c: Buffer) => (s += c.toString()));
    req.on('end', () => resolve(s));
  });
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as Seen['body'];
    seen.push({ url: req.url ?? '', auth: req.headers.authorization, body });
    res.setHeader('content-type', 'application/json');
    if (body.model === 'broken') {
      res.statusCode = 401;
      // Some providers echo (part of) the key back in the error text.
      res.end(
        JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}`, type: 'invalid_request_error' } }),
      );
      return;
    }
    if (body.model === 'garbage') {
      res.end('{"object":"list"}');
      return;
    }
    // Embedding of text i: [length, i]; returned in reverse order to exercise sorting by index.
    const data = body.input.map((t, i) => ({ object: 'embedding', index: i, embedding: [t.length, i] })).reverse();
    res.end(JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('openAiEmbedder', () => {
  it('posts {model, input} to {baseUrl}/embeddings with a bearer key and orders by index', async () => {
    seen.length = 0;
    const e = openAiEmbedder({ baseUrl, model: 'text-embedding-3-small', apiKey: KEY });
    const out = await e.embed(['a', 'bbb', 'cc']);
    expect(out.map((v) => Array.from(v))).toEqual([
      [1, 0],
      [3, 1],
      [2, 2],
    ]);
    expect(e.dimensions).toBe(2);
    expect(e.id).toBe('openai:text-embedding-3-small');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe('/v1/embeddings');
    expect(seen[0]!.auth).toBe(`Bearer ${KEY}`);
    expect(seen[0]!.body).toEqual({ model: 'text-embedding-3-small', input: ['a', 'bbb', 'cc'] });
  });

  it('batches inputs and sends no Authorization header without a key', async () => {
    seen.length = 0;
    const e = openAiEmbedder({ baseUrl, model: 'm', batchSize: 2, dimensions: 2 });
    const out = await e.embed(['1', '22', '333', '4444', '55555']);
    expect(out.map((v) => v[0])).toEqual([1, 2, 3, 4, 5]);
    expect(seen.map((s) => s.body.input.length)).toEqual([2, 2, 1]);
    expect(seen[0]!.auth).toBeUndefined();
    expect(seen[0]!.body.dimensions).toBe(2);
  });

  it('reports HTTP errors without leaking the key', async () => {
    const e = openAiEmbedder({ baseUrl, model: 'broken', apiKey: KEY });
    const err = await e.embed(['x']).then(
      () => null,
      (x: unknown) => x as Error & { status?: number },
    );
    expect(err).toBeInstanceOf(Error);
    expect(err!.message).toMatch(/401/);
    expect(err!.message).not.toContain(KEY);
    expect(err!.status).toBe(401);
  });

  it('rejects malformed responses and unreachable servers', async () => {
    await expect(openAiEmbedder({ baseUrl, model: 'garbage' }).embed(['x'])).rejects.toThrow(/no items/);
    const dead = openAiEmbedder({ baseUrl: 'http://127.0.0.1:1', model: 'm', apiKey: KEY });
    const err = await dead.embed(['x']).catch((x: Error) => x);
    expect(String(err)).toMatch(/failed/);
    expect(String(err)).not.toContain(KEY);
  });
});
