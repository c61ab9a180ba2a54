/** The ingest module's public face: the document pipeline (connectors reuse it) and the upload job. */
export { chunkMemories, readDocument, type ReadDocument } from './document.js';
export { eraseEndUserFiles, eraseForgottenFiles, UPLOAD_JOB, uploadJobHandler } from './service.js';
