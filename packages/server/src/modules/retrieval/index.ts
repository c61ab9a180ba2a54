/** The retrieval module's public face: the engine other modules and the composition root use. */
export { feedbackOfMemories } from './feedback.js';
export {
  createRetrieval,
  eraseDerivedData,
  eraseVectors,
  REFRESH_JOB,
  refreshEmbeddingsJob,
  type RetrievalEngine,
} from './engine.js';
export { eraseEndUserSnapshot } from './snapshots.js';
export type { RetrievalScope, ScoredMemory } from './service.js';
export type { RetrievalService } from './thread.js';
export { JobResult } from './schemas.js';
export { Filters, MinScore, RETRIEVAL_LIMITS, ScoredMemory as ScoredMemorySchema } from './schemas.js';
