import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';

/**
 * The SDK, loaded on first use: importing it takes 0.6-1.2 s on a busy 2-core machine, which every process's
 * start would pay although most deployments keep their blobs in the database and have no S3 connection.
 */
export const s3Sdk = () => import('@aws-sdk/client-s3');

export interface S3Location {
  bucket: string;
  /** http(s)://host[:port] of an S3-compatible service (path-style); absent: AWS (virtual-hosted). */
  endpoint?: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** What the SDK hands a request handler, and what it expects back (the parts used here). */
export interface SdkHttpRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query: Record<string, string | string[] | null>;
  headers: Record<string, string>;
}
export type SendRequest = (
  url: string,
  request: { method: string; headers: Record<string, string> },
) => Promise<{ status: number; headers: Record<string, string>; body: Buffer }>;

/**
 * The AWS SDK's S3 client for a bucket. Checksums only where an operation requires them, as the requests
 * were before the SDK: its default (a CRC32 header on every upload, checksum mode on every download) is
 * refused by some S3-compatible services, and the blob store hashes what it stores itself (SHA-256).
 * `send` replaces the SDK's HTTP client (the connectors' SSRF guard); requests carry no body then.
 */
export async function s3Client(location: S3Location, send?: SendRequest): Promise<S3Client> {
  const { S3Client } = await s3Sdk();
  return new S3Client({
    region: location.region,
    ...(location.endpoint ? { endpoint: location.endpoint, forcePathStyle: true } : {}),
    credentials: { accessKeyId: location.accessKeyId, secretAccessKey: location.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...(send ? { requestHandler: { handle: (request: SdkHttpRequest) => handle(send, request) } } : {}),
  });
}

async function handle(send: SendRequest, request: SdkHttpRequest) {
  const query = Object.entries(request.query ?? {})
    .flatMap(([key, value]) =>
      value === null
        ? [encodeURIComponent(key)]
        : [value].flat().map((v) => `${encodeURIComponent(key)}=${encodeURIComponent(v)}`),
    )
    .join('&');
  const port = request.port ? `:${request.port}` : '';
  const url = `${request.protocol}//${request.hostname}${port}${request.path}${query ? `?${query}` : ''}`;
  // The host header follows from the URL (the signature covers the same value).
  const { host: _host, ...headers } = request.headers;
  const response = await send(url, { method: request.method, headers });
  return { response: { statusCode: response.status, headers: response.headers, body: Readable.from(response.body) } };
}

/**
 * An S3 error answer's status and code (`NoSuchBucket`...); undefined for a failure with no answer. Read off
 * the SDK's ServiceException shape ($fault, $metadata) so that this module does not load the SDK itself.
 */
export function s3Failure(error: unknown): { status: number; code: string } | undefined {
  const e = error as { name?: unknown; $fault?: unknown; $metadata?: { httpStatusCode?: unknown } } | null;
  const status = e?.$metadata?.httpStatusCode;
  if (typeof e?.$fault !== 'string' || typeof status !== 'number' || typeof e.name !== 'string') return undefined;
  return { status, code: e.name };
}
