import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for an OpenAI-compatible chat-completions endpoint, speaking its real wire
 * format, for tests. Each request is recorded; `reply` decides the answer (default: a scripted queue,
 * then `fallback`).
 */
export interface ChatCompletionRequest {
  model: string;
  messages: Array<{ role: string; content: string }>;
  temperature?: number;
  max_tokens?: number;
}

export interface FakeAnswer {
  status?: number;
  headers?: Record<string, string>;
  /** A message content (wrapped in the completion envelope), or a raw body when `raw` is set. */
  content?: string;
  raw?: string;
  /** Never answer (to exercise timeouts). */
  hang?: boolean;
}

export interface FakeLlm {
  baseUrl: string;
  requests: Array<{ path: string; authorization: string | undefined; body: ChatCompletionRequest }>;
  /** Answers used in order, one per request, before `fallback`. */
  script: FakeAnswer[];
  /** The answer of a request the script does not cover; a promise holds it until it settles. */
  fallback: (body: ChatCompletionRequest) => FakeAnswer | Promise<FakeAnswer>;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = '';
    req.on('data', (c: Buffer) => (s += c.toString()));
    req.on('end', () => resolve(s));
  });
}

export function completion(content: string, model = 'fake-model') {
  return {
    id: 'chatcmpl-test', object: 'chat.completion', created: 1_700_000_000, model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
  };
}

export async function startFakeLlm(): Promise<FakeLlm> {
  const hanging: ServerResponse[] = [];
  const fake: FakeLlm = {
    baseUrl: '',
    requests: [],
    script: [],
    fallback: () => ({ content: 'ok' }),
    close: async () => {
      for (const res of hanging) res.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as ChatCompletionRequest;
    fake.requests.push({ path: req.url ?? '', authorization: req.headers.authorization, body });
    const answer = fake.script.shift() ?? (await fake.fallback(body));
    if (answer.hang) return void hanging.push(res);
    res.statusCode = answer.status ?? 200;
    res.setHeader('content-type', 'application/json');
    for (const [k, v] of Object.entries(answer.headers ?? {})) res.setHeader(k, v);
    res.end(answer.raw ?? JSON.stringify(res.statusCode === 200 ? completion(answer.content ?? '', body.model) : { error: { message: answer.content ?? 'error', type: 'server_error' } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  fake.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}
