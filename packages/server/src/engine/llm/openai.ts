// Chat completions from any OpenAI-compatible endpoint (OpenAI, Azure-style proxies, Ollama,
// vLLM, LM Studio): POST {baseUrl}/chat/completions, no streaming.
import { LlmError, type ChatRequest, type ChatResult, type LlmProvider, type TokenUsage } from './base.js';
import { errorDetail, keyScrubber } from '../provider-http.js';
import { retryAfterMs, withRetries } from '../../core/retry.js';

export interface OpenAiLlmConfig {
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Per attempt. */
  timeoutMs?: number;
  /** Further attempts after a 429, a 5xx or a connection failure. */
  maxRetries?: number;
  /** A Retry-After longer than this is not waited for: the call fails at once. */
  maxRetryWaitMs?: number;
  fetch?: typeof fetch;
}

interface CompletionResponse {
  model?: string;
  choices?: { message?: { content?: unknown } }[];
  usage?: Partial<TokenUsage>;
}

const RETRYABLE = new Set([408, 409, 429, 500, 502, 503, 504]);

/** Milliseconds the provider asks us to wait: `retry-after-ms` (OpenAI), else `Retry-After` in seconds or as an HTTP date. */
export function retryDelayMs(headers: Headers, now = Date.now()): number | undefined {
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.has('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  return retryAfterMs(headers.get('retry-after'), now);
}

export function openAiLlm(cfg: OpenAiLlmConfig): LlmProvider {
  const url = `${cfg.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const doFetch = cfg.fetch ?? fetch;
  const timeoutMs = cfg.timeoutMs ?? 30_000;
  const maxRetries = cfg.maxRetries ?? 2;
  const maxRetryWaitMs = cfg.maxRetryWaitMs ?? 10_000;
  const apiKey = cfg.apiKey;
  const scrub = keyScrubber(apiKey);
  const totals = { requests: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

  type Attempt = { ok: true; result: ChatResult } | { ok: false; error: LlmError; retry: boolean; waitMs?: number };

  async function attempt(body: string): Promise<Attempt> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    let res: Response;
    try {
      res = await doFetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      const reason =
        err instanceof Error && err.name === 'TimeoutError'
          ? `no answer within ${timeoutMs} ms`
          : scrub(err instanceof Error ? err.message : String(err));
      return { ok: false, error: new LlmError(`chat completion request failed: ${reason}`), retry: true };
    }
    const text = await res.text();
    if (!res.ok) {
      const detail = errorDetail(text);
      const waitMs = retryDelayMs(res.headers);
      return {
        ok: false,
        error: new LlmError(`chat completion failed with HTTP ${res.status}: ${scrub(detail)}`, res.status),
        retry: RETRYABLE.has(res.status),
        ...(waitMs !== undefined ? { waitMs } : {}),
      };
    }
    let parsed: CompletionResponse;
    try {
      parsed = JSON.parse(text) as CompletionResponse;
    } catch {
      return { ok: false, error: new LlmError('chat completion response is not JSON'), retry: false };
    }
    const content = parsed.choices?.[0]?.message?.content;
    if (typeof content !== 'string')
      return { ok: false, error: new LlmError('chat completion response has no message content'), retry: false };
    const usage = {
      prompt_tokens: parsed.usage?.prompt_tokens ?? 0,
      completion_tokens: parsed.usage?.completion_tokens ?? 0,
      total_tokens:
        parsed.usage?.total_tokens ?? (parsed.usage?.prompt_tokens ?? 0) + (parsed.usage?.completion_tokens ?? 0),
    };
    return { ok: true, result: { content, model: parsed.model ?? cfg.model, usage } };
  }

  return {
    id: `openai:${cfg.model}`,
    get totals() {
      return { ...totals };
    },
    async complete(request: ChatRequest): Promise<ChatResult> {
      const body = JSON.stringify({
        model: cfg.model,
        messages: request.messages,
        temperature: request.temperature ?? 0,
        ...(request.maxTokens ? { max_tokens: request.maxTokens } : {}),
        ...(request.jsonSchema
          ? { response_format: { type: 'json_schema', json_schema: { ...request.jsonSchema, strict: true } } }
          : {}),
      });
      // Exponential backoff unless the provider said how long; a wait longer than we may hold a request fails now.
      const result = await withRetries(
        { maxAttempts: maxRetries + 1, baseMs: 250, maxWaitMs: maxRetryWaitMs },
        async () => {
          const outcome = await attempt(body);
          totals.requests++;
          return outcome.ok ? { ok: true, value: outcome.result } : outcome;
        },
      );
      for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const) totals[k] += result.usage[k];
      return result;
    },
  };
}
