import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { BlobInfo, BlobStore, ByteRange } from '../blobs.js';
import { fixedPieces, sha256 } from './hashing.js';
import type { S3BlobConfig } from '../../config.js';
import { s3Client, s3Failure, s3Sdk } from './s3-client.js';

type S3Location = Omit<S3BlobConfig, 'kind'>;

/** S3 needs parts of at least 5 MiB (but the last); smaller blobs go up in one PUT. */
const PART_BYTES = 8 * 1024 * 1024;

export class S3Error extends Error {}

/**
 * Blobs as objects in an S3-compatible bucket, through the AWS SDK's S3 client: PutObject (or a
 * multipart upload for large blobs, one part in memory at a time), GetObject with Range, HeadObject,
 * DeleteObject.
 */
export class S3BlobStore implements BlobStore {
  private client?: Promise<S3Client>;

  constructor(private readonly location: S3Location) {}

  /** The client and the SDK's commands, loaded on first use (s3-client.ts#s3Sdk). */
  private async s3() {
    this.client ??= s3Client(this.location);
    return { client: await this.client, ...(await s3Sdk()) };
  }

  private object(key: string) {
    return { Bucket: this.location.bucket, Key: this.location.prefix + key };
  }

  /** Runs an operation, its S3 error answer (if any) made an S3Error by `fail`. */
  private async call<T>(what: string, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      fail(what, error);
    }
  }

  async put(key: string, body: AsyncIterable<Uint8Array>): Promise<BlobInfo> {
    const s3 = await this.s3();
    const hash = sha256();
    const pieces = fixedPieces(body, PART_BYTES, hash)[Symbol.asyncIterator]();
    const first = await pieces.next();
    const second = first.done ? first : await pieces.next();
    if (second.done) {
      const data = first.done ? Buffer.alloc(0) : first.value;
      await this.call('upload', () => s3.client.send(new s3.PutObjectCommand({ ...this.object(key), Body: data })));
      return { size: data.length, sha256: hash.digest('hex') };
    }
    const { UploadId } = await this.call('multipart start', () =>
      s3.client.send(new s3.CreateMultipartUploadCommand(this.object(key))),
    );
    if (!UploadId) throw new S3Error('S3 multipart start answered no UploadId');
    try {
      const parts: { PartNumber: number; ETag: string }[] = [];
      let size = 0;
      const upload = async (data: Buffer) => {
        const PartNumber = parts.length + 1;
        const { ETag } = await this.call('part upload', () =>
          s3.client.send(new s3.UploadPartCommand({ ...this.object(key), UploadId, PartNumber, Body: data })),
        );
        parts.push({ PartNumber, ETag: ETag ?? '' });
        size += data.length;
      };
      await upload(first.value!);
      await upload(second.value);
      for (let next = await pieces.next(); !next.done; next = await pieces.next()) await upload(next.value);
      // The SDK also fails a completion that S3 answers 200 with an error document.
      await this.call('multipart completion', () =>
        s3.client.send(
          new s3.CompleteMultipartUploadCommand({ ...this.object(key), UploadId, MultipartUpload: { Parts: parts } }),
        ),
      );
      return { size, sha256: hash.digest('hex') };
    } catch (error) {
      await s3.client
        .send(new s3.AbortMultipartUploadCommand({ ...this.object(key), UploadId }))
        .catch(() => undefined);
      throw error;
    }
  }

  async get(key: string, range?: ByteRange): Promise<Readable | undefined> {
    if (range && range.length === 0) return (await this.stat(key)) ? Readable.from([]) : undefined;
    const Range =
      range && (range.offset > 0 || range.length !== undefined)
        ? `bytes=${range.offset}-${range.length === undefined ? '' : range.offset + range.length - 1}`
        : undefined;
    const s3 = await this.s3();
    try {
      const { Body } = await s3.client.send(
        new s3.GetObjectCommand({ ...this.object(key), ...(Range ? { Range } : {}) }),
      );
      return Body as Readable;
    } catch (error) {
      const status = s3Failure(error)?.status;
      if (status === 404) return undefined;
      // Past the end: an empty range, as the database store gives.
      if (status === 416) return Readable.from([]);
      fail('download', error);
    }
  }

  async stat(key: string): Promise<{ size: number } | undefined> {
    const s3 = await this.s3();
    try {
      const { ContentLength } = await s3.client.send(new s3.HeadObjectCommand(this.object(key)));
      return { size: ContentLength ?? 0 };
    } catch (error) {
      if (s3Failure(error)?.status === 404) return undefined;
      fail('stat', error);
    }
  }

  async delete(key: string): Promise<void> {
    const s3 = await this.s3();
    try {
      await s3.client.send(new s3.DeleteObjectCommand(this.object(key)));
    } catch (error) {
      if (s3Failure(error)?.status !== 404) fail('delete', error);
    }
  }
}

/** An S3 error answer as an S3Error naming its status and code only (never the request); other failures as they are. */
function fail(what: string, error: unknown): never {
  const failure = s3Failure(error);
  if (!failure) throw error;
  throw new S3Error(`S3 ${what} failed: ${failure.status} ${failure.code}`.trim());
}
