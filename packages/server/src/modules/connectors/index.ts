/** The connectors module's public face: the sync job and the schedule the composition root registers. */
export { queueDueSyncs } from './service.js';
export { SYNC_JOB, syncJobHandler, type SyncDeps } from './sync.js';
