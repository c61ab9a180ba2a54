/** The memories module's public face: what other modules, the worker and the CLI may use. */
export {
  changesSince, endUsersOf, exportMemories, forgottenSince, largeOwnersChangedAfter, getMemory, liveMemoryCount, liveMemoryCountOf, liveProjectMemories, listMemories, memoriesByIds, memoriesHeld, memoryCounts, ownerMemoriesAt, turnsStoredBy,
  memoryHistory, projectRevision, revisionOf, summaryBySetKey, type IndexedMemory, type Owner, type ScopedMemory,
  clientRefsOf, countForExport, exportPage, historyOfMemories, liveIdsByClientRef, ownersOfMemories, type ExportFilter, type PortableMemory,
} from './feed.js';
export {
  addMemory, addWithin, batchUpdate, bulkAdd, EraseHooks, forgetExpired, withExpiry, forget, forgetSelected, forgetWithin, insertSummary, insertTurn, insertTurnInOneStatement, liveMemoryIds, markSuperseded, nextSeq, purgeEndUser, recordHistory, rewriteSummary,
  tombstoneProjectMemories, touchMemories, updateMemory, type EndUserEraseHook, type EraseHook, type Erasure, type SummaryInput, type TurnCount, type TurnInput,
  importMemories, type ImportedMemory,
} from './writes.js';
export { listPage, selectedIds, type ListPage, type ListRequest } from './list.js';
export { Filters, filterConditions, filtersFrom, filtersReadText, matchesFilters, type FilterSubject, type FiltersInput } from './filters.js';
export { AddMemoryBody, ExpiresAt, LIMITS as MEMORY_LIMITS, Memory, MemoryId, TtlSeconds, type AddMemoryInput, type MemoryView } from './schemas.js';
