import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for an OpenAI-compatible chat-completions endpoint, speaking its real wire
 * format, for tests. Each request is recorded; `reply` decides the answer (default: a scripted queue,
 * then `fallback`).
 */
export interface ChatCompletionRequest {
  model: string;
  messages: Array<{
    role: string;
    content: string;
    tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
    tool_call_id?: string;
  }>;
  temperature?: number;
  max_tokens?: number;
  tools?: Array<{ type: 'function'; function: { name: string; description?: string; parameters?: unknown } }>;
  /** Server-sent events: one chunk per delta, then `data: [DONE]`. */
  stream?: boolean;
  response_format?: { type: string; json_schema?: { name: string; strict?: boolean; schema: unknown } };
}

/** A tool call the fake model makes (its arguments are sent as JSON text, as the real API does). */
export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: unknown;
}

export interface FakeAnswer {
  status?: number;
  headers?: Record<string, string>;
  /** A message content (wrapped in the completion envelope), or a raw body when `raw` is set. */
  content?: string;
  raw?: string;
  /** Tool calls instead of (or beside) content; finish_reason becomes tool_calls. */
  toolCalls?: FakeToolCall[];
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

/** Each answer has its own id, as the real API's do (LangChain keys messages by it). */
let answers = 0;
const nextId = () => `chatcmpl-${++answers}`;
const USAGE = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };

function wireToolCalls(calls: FakeToolCall[]) {
  return calls.map((c, index) => ({
    index,
    id: c.id ?? `call_${index + 1}`,
    type: 'function' as const,
    function: { name: c.name, arguments: JSON.stringify(c.arguments) },
  }));
}

export function completion(content: string, model = 'fake-model', toolCalls: FakeToolCall[] = []) {
  const calls = wireToolCalls(toolCalls).map(({ index: _index, ...call }) => call);
  return {
    id: nextId(),
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: calls.length > 0 && content === '' ? null : content,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    usage: USAGE,
  };
}

/** The chunks of a streamed answer, as the API sends them: role, content in pieces, tool calls (name, then arguments), finish, usage. */
export function completionChunks(content: string, model = 'fake-model', toolCalls: FakeToolCall[] = []): unknown[] {
  const id = nextId();
  const chunk = (delta: unknown, finish: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const chunks: unknown[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of content.match(/.{1,8}/gs) ?? []) chunks.push(chunk({ content: piece }));
  for (const call of wireToolCalls(toolCalls)) {
    const half = Math.ceil(call.function.arguments.length / 2);
    chunks.push(
      chunk({
        tool_calls: [
          {
            index: call.index,
            id: call.id,
            type: 'function',
            function: { name: call.function.name, arguments: call.function.arguments.slice(0, half) },
          },
        ],
      }),
    );
    chunks.push(
      chunk({ tool_calls: [{ index: call.index, function: { arguments: call.function.arguments.slice(half) } }] }),
    );
  }
  chunks.push(chunk({}, toolCalls.length > 0 ? 'tool_calls' : 'stop'));
  chunks.push({ id, object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [], usage: USAGE });
  return chunks;
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
    if (body.stream && res.statusCode === 200 && answer.raw === undefined) {
      res.setHeader('content-type', 'text/event-stream');
      for (const chunk of completionChunks(answer.content ?? '', body.model, answer.toolCalls))
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      return void res.end('data: [DONE]\n\n');
    }
    res.setHeader('content-type', 'application/json');
    for (const [k, v] of Object.entries(answer.headers ?? {})) res.setHeader(k, v);
    res.end(
      answer.raw ??
        JSON.stringify(
          res.statusCode === 200
            ? completion(answer.content ?? '', body.model, answer.toolCalls)
            : { error: { message: answer.content ?? 'error', type: 'server_error' } },
        ),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  fake.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}
