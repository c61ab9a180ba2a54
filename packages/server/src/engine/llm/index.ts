// LLM providers: one interface (base.ts), one file per vendor wire, one factory from configuration.
import type { LlmSettings } from '../../config.js';
import type { LlmProvider } from './base.js';
import { openAiLlm } from './openai.js';

export {
  LlmError,
  type ChatMessage,
  type ChatRequest,
  type ChatResult,
  type LlmProvider,
  type TokenUsage,
} from './base.js';
export { openAiLlm, retryDelayMs, type OpenAiLlmConfig } from './openai.js';

/** The configured provider, or null. */
export function createLlm(settings: LlmSettings): LlmProvider | null {
  if (settings === null) return null;
  switch (settings.kind) {
    case 'openai':
      return openAiLlm({
        baseUrl: settings.baseUrl,
        model: settings.model,
        timeoutMs: settings.timeoutMs,
        maxRetries: settings.maxRetries,
        ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
      });
  }
}
