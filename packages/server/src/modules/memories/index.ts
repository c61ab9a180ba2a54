/** The memories module's public face: what other modules, the worker and the CLI may use. */
export {
  changesSince, exportMemories, getMemory, liveMemoryCount, liveProjectMemories, listMemories, memoriesByIds, memoryCounts,
  memoryHistory, projectRevision, revisionOf, type IndexedMemory, type Owner,
  countForExport, exportPage, historyOfMemories, ownersOfMemories, type ExportFilter, type PortableMemory,
} from './feed.js';
export {
  addMemory, addWithin, batchUpdate, bulkAdd, EraseHooks, forget, forgetWithin, insertTurn, liveMemoryIds, nextSeq, purgeEndUser,
  tombstoneProjectMemories, touchMemories, updateMemory,
  type EraseHook, type TurnInput, importMemories, type ImportedMemory,
} from './writes.js';
export { AddMemoryBody, Memory, MemoryId, type AddMemoryInput, type MemoryView } from './schemas.js';
