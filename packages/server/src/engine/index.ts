// Public API of the retrieval engine (a pure library: no HTTP, no database).
export type { EngineDoc, Explanation, SearchHit, SearchOptions } from './types.js';
export type { Embedder, BuiltinEmbedder } from './embedder.js';
export { builtinEmbedder } from './embedder.js';
export { openAiEmbedder, EmbedderError, type OpenAiEmbedderConfig } from './openai-embedder.js';
export { MemoryIndex, type MemoryIndexOptions } from './memory-index.js';
export { SearchBuffers } from './search-buffers.js';
export { TEXT_FLAGS, type BuiltDocs } from './built-docs.js';
export { DEFAULT_WEIGHTS, FEATURES, relevanceOf, type RankingWeights } from './ranking-weights.js';
export { parseTemporal, type TemporalRange } from './temporal.js';
export {
  ARRAY_BYTES,
  ARRAY_SLOT_BYTES,
  HEAP_NUMBER_BYTES,
  jsonBytes,
  MAP_ENTRY_BYTES,
  objectBytes,
  stringBytes,
  TYPED_ARRAY_BYTES,
} from './heap-bytes.js';
export {
  runInSlices,
  SLICE_MS,
  SNAPSHOT_FORMAT,
  PIECE_SLACK,
  type ArrayKind,
  snapshotArrays,
  snapshotCuts,
  SnapshotReader,
  SnapshotWriter,
  type Steps,
} from './snapshot.js';
export {
  estimateTokens,
  normalizeText,
  tokenize,
  analyze,
  scanText,
  scanNumbered,
  TermNumbering,
  forgetWords,
  leaveBufferPool,
  splitSentences,
  stem,
  isStopWord,
  type TextScan,
} from './text.js';
export {
  createLlm,
  LlmError,
  openAiLlm,
  retryDelayMs,
  type ChatMessage,
  type ChatResult,
  type LlmProvider,
  type TokenUsage,
} from './llm/index.js';
export { extractiveSummary, type SummarySentence, type SummarySource } from './summarize.js';
export { extractiveAnswer, describeRange, resolveWhen, type Evidence, type ExtractiveAnswer } from './answer.js';
