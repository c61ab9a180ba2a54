import { Type, type Static } from '@sinclair/typebox';
import { s3Client, s3Failure, s3Sdk } from '../../../store/blobs/s3-client.js';
import { ProviderConfigError, type ConnectorProvider, type SyncRun } from './provider.js';

/**
 * S3-compatible object storage: ListObjectsV2 pages (continuation tokens; the token of the page
 * being worked on is the checkpoint), the ETag as the object's version (an unchanged ETag is not
 * downloaded again), objects read by the upload pipeline. The AWS SDK's S3 client (store/blobs/s3-client.ts)
 * builds and signs the requests; they go through the SSRF guard (run.fetch).
 */

const Config = Type.Object(
  {
    bucket: Type.String({ minLength: 3, maxLength: 63, pattern: '^[a-z0-9][a-z0-9.-]+[a-z0-9]$' }),
    prefix: Type.String({ maxLength: 1024, default: '' }),
    region: Type.String({ minLength: 1, maxLength: 64, default: 'us-east-1' }),
    page_size: Type.Integer({ minimum: 1, maximum: 1000, default: 1000, description: 'Keys per ListObjectsV2 page' }),
    endpoint: Type.Optional(
      Type.String({
        pattern: '^https?://[^/]+/?$',
        description: 'http(s)://host[:port] of an S3-compatible service (path-style); absent: AWS',
      }),
    ),
  },
  { additionalProperties: false },
);
type Config = Static<typeof Config>;

const Credentials = Type.Object(
  {
    access_key_id: Type.String({ minLength: 1, maxLength: 256 }),
    secret_access_key: Type.String({ minLength: 1, maxLength: 256 }),
  },
  { additionalProperties: false },
);
type Credentials = Static<typeof Credentials>;

const MAX_OBJECT_BYTES = 50 * 1024 * 1024;

function client(run: Pick<SyncRun, 'fetch'>, config: Config, credentials: Credentials) {
  return s3Client(
    {
      bucket: config.bucket,
      region: config.region,
      ...(config.endpoint ? { endpoint: config.endpoint } : {}),
      accessKeyId: credentials.access_key_id,
      secretAccessKey: credentials.secret_access_key,
    },
    (url, request) => run.fetch(url, { ...request, maxBytes: MAX_OBJECT_BYTES, maxRedirects: 0 }),
  );
}

/** A refused listing as the connection's configuration error; a failure with no S3 answer as it is. */
function failure(error: unknown): ProviderConfigError {
  const answer = s3Failure(error);
  if (!answer) throw error;
  const { status, code } = answer;
  if (status === 403 || code === 'InvalidAccessKeyId' || code === 'SignatureDoesNotMatch')
    return new ProviderConfigError(`The storage refused the credentials (${code})`, 'credentials');
  if (code === 'NoSuchBucket') return new ProviderConfigError('The bucket does not exist', 'config/bucket');
  return new ProviderConfigError(`The storage answered ${status} ${code}`, 'config');
}

export const objectStorage: ConnectorProvider = {
  name: 'object_storage',
  title: 'Object storage (S3-compatible)',
  description:
    'Reads the files under a bucket prefix of Amazon S3 or any S3-compatible service (MinIO, R2, GCS interoperability).',
  authKind: 'access_keys',
  configSchema: Config,
  credentialsSchema: Credentials,
  capabilities: ['incremental', 'deletions', 'resumable'],

  async validate(run) {
    const config = run.config as Config;
    const { ListObjectsV2Command } = await s3Sdk();
    await (await client(run, config, run.credentials as Credentials))
      .send(new ListObjectsV2Command({ Bucket: config.bucket, Prefix: config.prefix ?? '', MaxKeys: 1 }))
      .catch((error: unknown) => {
        throw failure(error);
      });
  },

  async sync(run) {
    const config = run.config as Config;
    const { GetObjectCommand, ListObjectsV2Command } = await s3Sdk();
    const s3 = await client(run, config, run.credentials as Credentials);
    let token = (run.checkpoint as { token?: string } | null)?.token;
    for (;;) {
      const page = await s3
        .send(
          new ListObjectsV2Command({
            Bucket: config.bucket,
            Prefix: config.prefix ?? '',
            MaxKeys: config.page_size ?? 1000,
            ...(token ? { ContinuationToken: token } : {}),
          }),
        )
        .catch((error: unknown) => {
          throw failure(error);
        });
      for (const entry of page.Contents ?? []) {
        const key = entry.Key ?? '';
        const etag = (entry.ETag ?? '').replace(/"/g, '') || null;
        if (!key || key.endsWith('/')) continue;
        if ((entry.Size ?? 0) > MAX_OBJECT_BYTES) {
          await run.failed(key, `Larger than ${MAX_OBJECT_BYTES} bytes`);
          continue;
        }
        if (await run.unchanged(key, etag)) continue;
        // An S3 error answer as its status (a missing object is skipped); a failure with no answer fails the sync.
        const object = await s3
          .send(new GetObjectCommand({ Bucket: config.bucket, Key: key }))
          .catch((error: unknown) => {
            const status = s3Failure(error)?.status;
            if (status === undefined) throw error;
            return status;
          });
        if (typeof object === 'number') {
          if (object !== 404) await run.failed(key, `GET answered ${object}`);
          continue;
        }
        await run.object({
          sourceId: key,
          version: etag,
          name: key.split('/').pop()!,
          mediaType: object.ContentType,
          url: `s3://${config.bucket}/${key}`,
          bytes: Buffer.from(await object.Body!.transformToByteArray()),
        });
      }
      const next = page.NextContinuationToken;
      if (!page.IsTruncated || !next) return { complete: true };
      token = next;
      await run.saveCheckpoint({ token });
    }
  },
};
