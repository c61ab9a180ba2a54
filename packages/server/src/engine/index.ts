// Public API of the retrieval engine (a pure library: no HTTP, no database).
export type { EngineDoc, Explanation, SearchHit, SearchOptions } from './types.js';
export type { Embedder, BuiltinEmbedder } from './embedder.js';
export { builtinEmbedder } from './embedder.js';
export { openAiEmbedder, EmbedderError, type OpenAiEmbedderConfig } from './openai-embedder.js';
export { MemoryIndex, DEFAULT_WEIGHTS, FEATURES, type MemoryIndexOptions, type RankingWeights } from './memory-index.js';
export { parseTemporal, type TemporalRange } from './temporal.js';
export { estimateTokens, normalizeText, tokenize, analyze, stem, isStopWord } from './text.js';
