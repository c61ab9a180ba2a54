/** The ingest module's public face: the document pipeline (connectors reuse it) and the upload job. */
export type { ReadDocument } from './document.js';
export { chunkMemories } from './provenance.js';
export { DocumentReader, type ParseSettings } from './reader.js';
export { eraseEndUserFiles, eraseForgottenFiles, UPLOAD_JOB, uploadJobHandler } from './service.js';
