/** The memories module's public face: what other modules, the worker and the CLI may use. */
export {
  changesSince,
  endUsersOf,
  ownerChangesSince,
  exportMemories,
  forgottenSince,
  largeOwnersChangedAfter,
  getMemory,
  liveMemoryCount,
  liveMemoryCountOf,
  liveProjectMemories,
  listMemories,
  memoriesByIds,
  memoriesHeld,
  memoryCounts,
  ownerMemoriesAt,
  turnsStoredBy,
  memoryHistory,
  projectRevision,
  revisionOf,
  summaryBySetKey,
  type IndexedMemory,
  type Owner,
  type ScopedMemory,
  clientRefsOf,
  countForExport,
  exportPage,
  historyOfMemories,
  liveIdsByClientRef,
  ownersOfMemories,
  type ExportFilter,
  type PortableMemory,
} from './feed.js';
export { addMemory, addWithin, bulkAdd } from './add.js';
export { batchUpdate, updateMemory } from './update.js';
export {
  EraseHooks,
  forget,
  forgetExpired,
  forgetSelected,
  forgetWithin,
  liveMemoryIds,
  purgeEndUser,
  type EndUserEraseHook,
  type EraseHook,
  type Erasure,
} from './erase.js';
export { insertTurn, insertTurnInOneStatement, type TurnCount, type TurnInput } from './turns.js';
export { insertSummary, rewriteSummary, type SummaryInput } from './summaries.js';
export { markSuperseded, tombstoneProjectMemories, touchMemories } from './marks.js';
export { importMemories } from './import.js';
export { nextSeq } from './revisions.js';
export { recordHistory, withExpiry, type ImportedMemory } from './rows.js';
export { listPage, selectedIds, type ListPage, type ListRequest } from './list.js';
export {
  Filters,
  filterConditions,
  filtersFrom,
  filtersReadText,
  matchesFilters,
  type FilterSubject,
  type FiltersInput,
} from './filters.js';
export {
  AddMemoryBody,
  ExpiresAt,
  LIMITS as MEMORY_LIMITS,
  Memory,
  MemoryId,
  TtlSeconds,
  type AddMemoryInput,
  type MemoryView,
} from './schemas.js';
