// The LLM provider interface: chat completions, nothing vendor-specific. Every operation that can
// use an LLM has a built-in method too, so a provider is optional.

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatRequest {
  messages: ChatMessage[];
  /** Upper bound on the answer's tokens. */
  maxTokens?: number;
  /** 0 (default) for answers that should not vary between calls. */
  temperature?: number;
  /** An answer held to a JSON schema (`response_format: json_schema`, strict): the schema and its name. */
  jsonSchema?: { name: string; schema: Record<string, unknown> };
}

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatResult {
  content: string;
  /** The model that answered, as the provider names it. */
  model: string;
  usage: TokenUsage;
}

export interface LlmProvider {
  /** Names the provider and model in answers ("openai:gpt-4o-mini"). */
  readonly id: string;
  complete(request: ChatRequest): Promise<ChatResult>;
  /** Tokens spent by this process so far, for accounting. */
  readonly totals: Readonly<TokenUsage & { requests: number }>;
}

/** The provider could not give an answer (unreachable, refusing, timing out, malformed). */
export class LlmError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'LlmError';
  }
}
