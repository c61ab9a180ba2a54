import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeLlm, type FakeLlm } from '../../testing/fake-llm.js';
import { createLlm, LlmError, openAiLlm, retryDelayMs } from './index.js';

const KEY = 'sk-test-SECRET-456';
let fake: FakeLlm;
beforeAll(async () => {
  fake = await startFakeLlm();
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.requests.length = 0;
  fake.script.length = 0;
  fake.fallback = () => ({ content: 'hello' });
});

const failure = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as LlmError,
  );

describe('openAiLlm', () => {
  it('posts {model, messages, temperature, max_tokens} to {baseUrl}/chat/completions with a bearer key and counts tokens', async () => {
    const llm = openAiLlm({ baseUrl: `${fake.baseUrl}/`, model: 'gpt-test', apiKey: KEY });
    const result = await llm.complete({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
      maxTokens: 50,
    });
    expect(result).toEqual({
      content: 'hello',
      model: 'gpt-test',
      usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
    });
    expect(fake.requests).toEqual([
      {
        path: '/v1/chat/completions',
        authorization: `Bearer ${KEY}`,
        body: {
          model: 'gpt-test',
          messages: [
            { role: 'system', content: 'be brief' },
            { role: 'user', content: 'hi' },
          ],
          temperature: 0,
          max_tokens: 50,
        },
      },
    ]);
    await llm.complete({ messages: [{ role: 'user', content: 'again' }] });
    expect(llm.totals).toEqual({ requests: 2, prompt_tokens: 22, completion_tokens: 14, total_tokens: 36 });
    expect(llm.id).toBe('openai:gpt-test');
  });

  it('retries 429 and 5xx, honouring Retry-After and retry-after-ms, then answers', async () => {
    fake.script.push(
      { status: 429, headers: { 'retry-after': '0' }, content: 'slow down' },
      { status: 503, headers: { 'retry-after-ms': '5' }, content: 'overloaded' },
    );
    const llm = openAiLlm({ baseUrl: fake.baseUrl, model: 'm', maxRetries: 2 });
    expect((await llm.complete({ messages: [{ role: 'user', content: 'x' }] })).content).toBe('hello');
    expect(fake.requests).toHaveLength(3);
    expect(fake.requests[0]!.authorization).toBeUndefined();
    expect(llm.totals.requests).toBe(3);
  });

  it('gives up after maxRetries, and at once when Retry-After asks for longer than it may wait', async () => {
    fake.fallback = () => ({ status: 500, headers: { 'retry-after': '0' }, content: 'boom' });
    const err = await failure(
      openAiLlm({ baseUrl: fake.baseUrl, model: 'm', maxRetries: 2 }).complete({ messages: [] }),
    );
    expect(err).toBeInstanceOf(LlmError);
    expect(err!.status).toBe(500);
    expect(fake.requests).toHaveLength(3);

    fake.requests.length = 0;
    fake.fallback = () => ({ status: 429, headers: { 'retry-after': '3600' }, content: 'quota' });
    expect(
      (await failure(openAiLlm({ baseUrl: fake.baseUrl, model: 'm', maxRetries: 5 }).complete({ messages: [] })))!
        .status,
    ).toBe(429);
    expect(fake.requests).toHaveLength(1);
  });

  it('does not retry a 4xx other than 408, 409 and 429, and never echoes the key', async () => {
    fake.fallback = () => ({ status: 401, content: `Incorrect API key provided: ${KEY}` });
    const err = await failure(openAiLlm({ baseUrl: fake.baseUrl, model: 'm', apiKey: KEY }).complete({ messages: [] }));
    expect(err!.message).toMatch(/HTTP 401/);
    expect(err!.message).not.toContain(KEY);
    expect(fake.requests).toHaveLength(1);
  });

  it('rejects malformed answers, and fails on a dead or silent endpoint', async () => {
    fake.script.push({ raw: '{"object":"chat.completion","choices":[]}' }, { raw: 'not json' });
    const llm = openAiLlm({ baseUrl: fake.baseUrl, model: 'm' });
    expect((await failure(llm.complete({ messages: [] })))!.message).toMatch(/no message content/);
    expect((await failure(llm.complete({ messages: [] })))!.message).toMatch(/not JSON/);

    const dead = await failure(
      openAiLlm({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm', apiKey: KEY, maxRetries: 1 }).complete({
        messages: [],
      }),
    );
    expect(dead).toBeInstanceOf(LlmError);
    expect(dead!.message).not.toContain(KEY);

    fake.requests.length = 0;
    fake.fallback = () => ({ hang: true });
    const silent = await failure(
      openAiLlm({ baseUrl: fake.baseUrl, model: 'm', timeoutMs: 50, maxRetries: 1 }).complete({ messages: [] }),
    );
    expect(silent!.message).toMatch(/no answer within 50 ms/);
    expect(fake.requests).toHaveLength(2);
  });
});

describe('retryDelayMs and createLlm', () => {
  it('reads seconds, HTTP dates and milliseconds', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryDelayMs(new Headers({ 'retry-after': '2' }), now)).toBe(2000);
    expect(retryDelayMs(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), now)).toBe(5000);
    expect(retryDelayMs(new Headers({ 'retry-after-ms': '120', 'retry-after': '9' }), now)).toBe(120);
    expect(retryDelayMs(new Headers({}), now)).toBeUndefined();
  });

  it('maps configuration to a provider, or none', () => {
    expect(createLlm(null)).toBeNull();
    expect(
      createLlm({ kind: 'openai', baseUrl: fake.baseUrl, model: 'llama3', timeoutMs: 1000, maxRetries: 0 })!.id,
    ).toBe('openai:llama3');
  });
});
