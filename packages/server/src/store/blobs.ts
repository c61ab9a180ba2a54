import type { Readable } from 'node:stream';

/**
 * Where large byte artifacts live (export files, uploaded documents, connector payloads) so that
 * every process can serve them: in the database by default, or in S3-compatible object storage.
 * Keys are opaque paths chosen by the caller (`<project_id>/exports/12-1`); a blob is visible to
 * `get` and `stat` only once `put` has finished writing it. Backends: `blobs/database-blobs.ts`,
 * `blobs/s3-blobs.ts`; `blobs/open.ts` picks one from the configuration.
 */
export interface BlobStore {
  /** Stores the stream under `key` (replacing any blob there) and reports its size and SHA-256 (hex). */
  put(key: string, body: AsyncIterable<Uint8Array>): Promise<BlobInfo>;
  /** The blob's bytes, or the `range` of them; undefined when there is no such blob. */
  get(key: string, range?: ByteRange): Promise<Readable | undefined>;
  stat(key: string): Promise<{ size: number } | undefined>;
  /** Removes the blob; removing a missing blob is not an error. */
  delete(key: string): Promise<void>;
}

export interface BlobInfo {
  size: number;
  sha256: string;
}

/** `length` bytes from `offset` (to the end when omitted). */
export interface ByteRange {
  offset: number;
  length?: number;
}
