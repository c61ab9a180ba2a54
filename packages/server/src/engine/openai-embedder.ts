// Embedder for any OpenAI-compatible /embeddings endpoint (OpenAI, Azure-style
// proxies, Ollama, vLLM, LM Studio ...). Only used when the operator configures one.
import type { Embedder } from './embedder.js';
import { errorDetail, keyScrubber } from './provider-http.js';

export interface OpenAiEmbedderConfig {
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Requested output size (sent as `dimensions`); also the reported size. */
  dimensions?: number;
  fetch?: typeof fetch;
  /** Inputs per request; providers cap this (OpenAI: 2048). */
  batchSize?: number;
  timeoutMs?: number;
}

interface EmbeddingsResponse {
  data?: { index?: number; embedding?: unknown }[];
}

export class EmbedderError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'EmbedderError';
  }
}

export function openAiEmbedder(cfg: OpenAiEmbedderConfig): Embedder {
  const url = `${cfg.baseUrl.replace(/\/+$/, '')}/embeddings`;
  const doFetch = cfg.fetch ?? fetch;
  const batchSize = Math.max(1, cfg.batchSize ?? 256);
  const timeoutMs = cfg.timeoutMs ?? 30_000;
  const apiKey = cfg.apiKey;
  const scrub = keyScrubber(apiKey);
  let dims = cfg.dimensions ?? 0;

  async function embedBatch(input: string[]): Promise<Float32Array[]> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    const body: Record<string, unknown> = { model: cfg.model, input };
    if (cfg.dimensions) body.dimensions = cfg.dimensions;
    let res: Response;
    try {
      res = await doFetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw new EmbedderError(
        `embedding request to ${url} failed: ${scrub(err instanceof Error ? err.message : String(err))}`,
      );
    }
    const text = await res.text();
    if (!res.ok) {
      const detail = errorDetail(text);
      throw new EmbedderError(`embedding request failed with HTTP ${res.status}: ${scrub(detail)}`, res.status);
    }
    let parsed: EmbeddingsResponse;
    try {
      parsed = JSON.parse(text) as EmbeddingsResponse;
    } catch {
      throw new EmbedderError('embedding response is not JSON');
    }
    const data = parsed.data;
    if (!Array.isArray(data) || data.length !== input.length) {
      throw new EmbedderError(
        `embedding response has ${Array.isArray(data) ? data.length : 'no'} items for ${input.length} inputs`,
      );
    }
    // Providers may return items out of order; `index` is authoritative.
    const sorted = data.map((d, i) => ({ index: typeof d.index === 'number' ? d.index : i, embedding: d.embedding }));
    sorted.sort((a, b) => a.index - b.index);
    return sorted.map((d) => {
      if (!Array.isArray(d.embedding) || d.embedding.some((x) => typeof x !== 'number')) {
        throw new EmbedderError('embedding response item has no numeric embedding');
      }
      const v = Float32Array.from(d.embedding as number[]);
      if (dims === 0) dims = v.length;
      else if (v.length !== dims) throw new EmbedderError(`embedding has ${v.length} dimensions, expected ${dims}`);
      return v;
    });
  }

  return {
    id: `openai:${cfg.model}${cfg.dimensions ? `@${cfg.dimensions}` : ''}`,
    get dimensions() {
      return dims;
    },
    async embed(texts: string[]): Promise<Float32Array[]> {
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += batchSize) out.push(...(await embedBatch(texts.slice(i, i + batchSize))));
      return out;
    },
  };
}
