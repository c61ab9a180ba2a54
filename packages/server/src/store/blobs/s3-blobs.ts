import { Readable } from 'node:stream';
import type { BlobInfo, BlobStore, ByteRange } from '../blobs.js';
import { fixedPieces, sha256 } from './hashing.js';
import type { S3BlobConfig } from '../../config.js';
import { EMPTY_SHA256, sha256Hex, signRequest, uriEncode } from './sigv4.js';

type S3Location = Omit<S3BlobConfig, 'kind'>;

/** S3 needs parts of at least 5 MiB (but the last); smaller blobs go up in one PUT. */
const PART_BYTES = 8 * 1024 * 1024;

export class S3Error extends Error {}

/**
 * Blobs as objects in an S3-compatible bucket, spoken to with signed fetch requests: PUT (or a
 * multipart upload for large blobs, one part in memory at a time), GET with Range, HEAD, DELETE.
 */
export class S3BlobStore implements BlobStore {
  private readonly base: URL;
  private readonly pathPrefix: string;

  constructor(private readonly location: S3Location) {
    if (location.endpoint) {
      this.base = new URL(location.endpoint);
      this.pathPrefix = `/${uriEncode(location.bucket)}/`;
    } else {
      this.base = new URL(`https://${location.bucket}.s3.${location.region}.amazonaws.com`);
      this.pathPrefix = '/';
    }
  }

  private async request(
    method: string,
    key: string,
    options: { query?: Record<string, string>; headers?: Record<string, string>; body?: Buffer } = {},
  ): Promise<Response> {
    const path = this.pathPrefix + uriEncode(this.location.prefix + key, true);
    const signed = signRequest(this.location, {
      method,
      host: this.base.host,
      path,
      query: options.query,
      headers: options.headers,
      payloadHash: options.body ? sha256Hex(options.body) : EMPTY_SHA256,
    });
    const query = new URLSearchParams(options.query ?? {}).toString();
    const url = `${this.base.origin}${path}${query ? `?${query}` : ''}`;
    return fetch(url, { method, headers: signed, ...(options.body ? { body: options.body } : {}) });
  }

  private async expectOk(response: Response, what: string): Promise<Response> {
    if (response.ok) return response;
    // The S3 error code only: the body may echo the request, never anything secret, but keep it short.
    const code = /<Code>([^<]{1,64})<\/Code>/.exec(await response.text())?.[1] ?? '';
    throw new S3Error(`S3 ${what} failed: ${response.status} ${code}`.trim());
  }

  async put(key: string, body: AsyncIterable<Uint8Array>): Promise<BlobInfo> {
    const hash = sha256();
    const pieces = fixedPieces(body, PART_BYTES, hash)[Symbol.asyncIterator]();
    const first = await pieces.next();
    const second = first.done ? first : await pieces.next();
    if (second.done) {
      const data = first.done ? Buffer.alloc(0) : first.value;
      await this.expectOk(await this.request('PUT', key, { body: data }), 'upload');
      return { size: data.length, sha256: hash.digest('hex') };
    }
    const created = await this.expectOk(await this.request('POST', key, { query: { uploads: '' } }), 'multipart start');
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(await created.text())?.[1];
    if (!uploadId) throw new S3Error('S3 multipart start answered no UploadId');
    try {
      const etags: string[] = [];
      let size = 0;
      const upload = async (data: Buffer) => {
        const res = await this.expectOk(
          await this.request('PUT', key, { query: { partNumber: String(etags.length + 1), uploadId }, body: data }),
          'part upload',
        );
        etags.push(res.headers.get('etag') ?? '');
        size += data.length;
      };
      await upload(first.value!);
      await upload(second.value);
      for (let next = await pieces.next(); !next.done; next = await pieces.next()) await upload(next.value);
      const manifest = `<CompleteMultipartUpload>${etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join('')}</CompleteMultipartUpload>`;
      const done = await this.expectOk(
        await this.request('POST', key, { query: { uploadId }, body: Buffer.from(manifest) }),
        'multipart completion',
      );
      // S3 may answer 200 with an error document when completion fails late.
      if (/<Error>/.test(await done.text())) throw new S3Error('S3 multipart completion failed');
      return { size, sha256: hash.digest('hex') };
    } catch (error) {
      await this.request('DELETE', key, { query: { uploadId } }).catch(() => undefined);
      throw error;
    }
  }

  async get(key: string, range?: ByteRange): Promise<Readable | undefined> {
    if (range && range.length === 0) return (await this.stat(key)) ? Readable.from([]) : undefined;
    const headers: Record<string, string> = {};
    if (range && (range.offset > 0 || range.length !== undefined)) {
      headers.range = `bytes=${range.offset}-${range.length === undefined ? '' : range.offset + range.length - 1}`;
    }
    const response = await this.request('GET', key, { headers });
    if (response.status === 404) return undefined;
    // Past the end: an empty range, as the database store gives.
    if (response.status === 416) return Readable.from([]);
    await this.expectOk(response, 'download');
    return Readable.fromWeb(response.body as never);
  }

  async stat(key: string): Promise<{ size: number } | undefined> {
    const response = await this.request('HEAD', key);
    if (response.status === 404) return undefined;
    await this.expectOk(response, 'stat');
    return { size: Number(response.headers.get('content-length')) };
  }

  async delete(key: string): Promise<void> {
    const response = await this.request('DELETE', key);
    if (response.status !== 404) await this.expectOk(response, 'delete');
  }
}
