import type { BlobConfig } from '../../config.js';
import type { BlobStore } from '../blobs.js';
import type { Database } from '../database.js';
import { DatabaseBlobStore } from './database-blobs.js';
import { S3BlobStore } from './s3-blobs.js';

/** The configured blob store: S3-compatible storage when ENGRAM_BLOB_URL names a bucket, else the database. */
export function openBlobStore(config: BlobConfig, database: Database): BlobStore {
  return config.kind === 's3' ? new S3BlobStore(config) : new DatabaseBlobStore(database);
}
