/** The connectors module's public face: the sync job, the schedule and the syncs' retention the composition root registers. */
export { purgeFinishedSyncs, queueDueSyncs } from './syncs.js';
export { SYNC_JOB, syncJobHandler, type SyncDeps } from './sync.js';
export { eraseSyncedObjectTitles } from './erase.js';
