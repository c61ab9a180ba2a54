/** The exports module's public face: what the composition root registers (jobs, erase hook, sweep). */
export { exportJob } from './export-job.js';
export { IMPORT_JOB, importJob } from './imports.js';
export {
  EXPORT_JOB,
  purgeDeletedArtifacts,
  renameEndUserInExports,
  sweepExports,
  withdrawArtifactsHolding,
} from './service.js';
