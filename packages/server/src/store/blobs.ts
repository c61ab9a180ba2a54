import type { Database } from './database.js';
import { DatabaseBlobStore } from './blobs/database-blobs.js';
import type { BlobConfig } from '../config.js';
import type { BlobStore } from './blobs/types.js';
import { S3BlobStore } from './blobs/s3-blobs.js';

export type { BlobInfo, BlobStore, ByteRange } from './blobs/types.js';
export type { BlobConfig };

export function openBlobStore(config: BlobConfig, database: Database): BlobStore {
  return config.kind === 's3' ? new S3BlobStore(config) : new DatabaseBlobStore(database);
}
