/** The memories module's public face: what other modules, the worker and the CLI may use. */
export {
  changesSince,
  liveOwnerIds,
  liveOwnerPage,
  LIVE_PAGE_COLUMNS,
  endUsersOf,
  ownerChangesSince,
  forgottenSince,
  largeOwnersChangedAfter,
  liveProjectMemories,
  projectRevision,
  revisionOf,
  type IndexedMemory,
  type Owner,
} from './feed.js';
export {
  clientRefsOf,
  getMemory,
  historyOfMemories,
  liveIdsByClientRef,
  liveTextsOf,
  memoriesByIds,
  memoriesHeld,
  memoryHistory,
  ownerMemoriesAt,
  ownersOfMemories,
  summaryBySetKey,
  type ScopedMemory,
} from './reads.js';
export {
  countForExport,
  exportMemories,
  exportPage,
  type ExportFilter,
  type PortableMemory,
} from './export.js';
export { liveMemoryCount, liveMemoryCountOf, memoryCounts, turnsStoredBy } from './counts.js';
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
export { importMemories, prepareImport, type PreparedImport } from './import.js';
export { nextSeq } from './revisions.js';
export { recordHistory, withExpiry, type ImportedMemory } from './rows.js';
export { listMemories, listPage, selectedIds, type ListPage, type ListRequest } from './list.js';
export { Filters, filtersFrom, filtersReadText, type FilterSubject, type FiltersInput } from './filters.js';
export { filterPredicate, matchesFilters, type FilterPredicate } from './filter-match.js';
export { filterConditions } from './filter-sql.js';
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
