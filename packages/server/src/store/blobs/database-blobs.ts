import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { deflateRaw, inflateRaw } from 'node:zlib';
import type { BlobInfo, BlobStore, ByteRange } from '../blobs.js';
import { nowIso, type Database } from '../database.js';
import { fixedPieces, sha256 } from './hashing.js';

const CHUNK_BYTES = 1024 * 1024;
const deflate = promisify(deflateRaw);
const inflate = promisify(inflateRaw);

/**
 * Blobs in the database, in 1 MiB chunks (`blob_chunks`), listed in `blobs` once complete. Each
 * chunk is its own short statement, so a long upload never holds a write transaction open (on
 * SQLite that would stall every other writer). A chunk is stored deflated when that makes it smaller
 * (an export's plain JSON lines, to a tenth): sent to PostgreSQL as it came, 40 MB of them cost the
 * process 0.3 s of socket writes and the database 0.55 s of its own compression. Deflating runs on
 * libuv's threads, and one chunk is written while the next is read and deflated. This store owns both tables.
 */
export class DatabaseBlobStore implements BlobStore {
  constructor(
    private readonly database: Database,
    private readonly chunkBytes = CHUNK_BYTES,
  ) {}

  async put(key: string, body: AsyncIterable<Uint8Array>): Promise<BlobInfo> {
    const { db } = this.database;
    await this.delete(key);
    const hash = sha256();
    let size = 0;
    let n = 0;
    let writing: Promise<unknown> = Promise.resolve();
    try {
      for await (const piece of fixedPieces(body, this.chunkBytes, hash)) {
        const deflated = await deflate(piece, { level: 1 });
        const stored = deflated.length < piece.length ? deflated : piece;
        await writing;
        writing = db
          .insertInto('blob_chunks')
          .values({ key, n: n++, data: stored, deflated: this.database.bool(stored === deflated) })
          .execute();
        // Awaited before the next chunk or in finally; until then its failure is no unhandled rejection.
        writing.catch(() => {});
        size += piece.length;
      }
    } finally {
      // No chunk lands after put has ended (a caller deleting the key on an error must find them all).
      await writing;
    }
    const info = { size, sha256: hash.digest('hex') };
    await db
      .insertInto('blobs')
      .values({ key, size, chunk_bytes: this.chunkBytes, sha256: info.sha256, created_at: nowIso() })
      .execute();
    return info;
  }

  async get(key: string, range: ByteRange = { offset: 0 }): Promise<Readable | undefined> {
    const blob = await this.database.db
      .selectFrom('blobs')
      .select(['size', 'chunk_bytes'])
      .where('key', '=', key)
      .executeTakeFirst();
    if (!blob) return undefined;
    const end = Math.min(blob.size, range.length === undefined ? blob.size : range.offset + range.length);
    const { db } = this.database;
    async function* bytes() {
      // One chunk in memory at a time, however large the blob.
      for (let n = Math.floor(range.offset / blob!.chunk_bytes); n * blob!.chunk_bytes < end; n++) {
        const row = await db
          .selectFrom('blob_chunks')
          .select(['data', 'deflated'])
          .where('key', '=', key)
          .where('n', '=', n)
          .executeTakeFirstOrThrow();
        const start = n * blob!.chunk_bytes;
        const data = row.deflated ? await inflate(row.data) : Buffer.from(row.data);
        yield data.subarray(Math.max(0, range.offset - start), Math.min(data.length, end - start));
      }
    }
    return Readable.from(bytes(), { objectMode: false });
  }

  async stat(key: string): Promise<{ size: number } | undefined> {
    const row = await this.database.db.selectFrom('blobs').select('size').where('key', '=', key).executeTakeFirst();
    return row ? { size: row.size } : undefined;
  }

  async delete(key: string): Promise<void> {
    const { db } = this.database;
    // The listing first, so a half-deleted blob is never readable.
    await db.deleteFrom('blobs').where('key', '=', key).execute();
    await db.deleteFrom('blob_chunks').where('key', '=', key).execute();
  }
}
