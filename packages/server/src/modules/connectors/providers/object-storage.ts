import { Type, type Static } from '@sinclair/typebox';
import { EMPTY_SHA256, signRequest, uriEncode } from '../../../store/blobs/sigv4.js';
import { ProviderConfigError, type ConnectorProvider, type SyncRun } from './provider.js';

/**
 * S3-compatible object storage: ListObjectsV2 pages (continuation tokens; the token of the page
 * being worked on is the checkpoint), the ETag as the object's version (an unchanged ETag is not
 * downloaded again), objects read by the upload pipeline. Requests are signed with SigV4
 * (store/blobs/sigv4.ts) and go through the SSRF guard.
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
  const base = new URL(config.endpoint ?? `https://${config.bucket}.s3.${config.region}.amazonaws.com`);
  const bucketPath = config.endpoint ? `/${uriEncode(config.bucket)}` : '';
  const signed = (method: string, path: string, query: Record<string, string> = {}) => {
    const headers = signRequest(
      { accessKeyId: credentials.access_key_id, secretAccessKey: credentials.secret_access_key, region: config.region },
      { method, host: base.host, path, query, payloadHash: EMPTY_SHA256 },
    );
    const qs = new URLSearchParams(query).toString();
    return run.fetch(`${base.origin}${path}${qs ? `?${qs}` : ''}`, {
      method,
      headers,
      maxBytes: MAX_OBJECT_BYTES,
      maxRedirects: 0,
    });
  };
  return {
    list: (query: Record<string, string>) => signed('GET', bucketPath || '/', { 'list-type': '2', ...query }),
    get: (key: string) => signed('GET', `${bucketPath}/${uriEncode(key, true)}`),
  };
}

const tag = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];
const unescapeXml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

function failure(status: number, body: string): ProviderConfigError {
  const code = tag(body, 'Code') ?? String(status);
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
    const response = await client(run, config, run.credentials as Credentials).list({
      'max-keys': '1',
      prefix: config.prefix ?? '',
    });
    if (response.status !== 200) throw failure(response.status, response.body.toString('utf8'));
  },

  async sync(run) {
    const config = run.config as Config;
    const s3 = client(run, config, run.credentials as Credentials);
    let token = (run.checkpoint as { token?: string } | null)?.token;
    for (;;) {
      const response = await s3.list({
        prefix: config.prefix ?? '',
        'max-keys': String(config.page_size ?? 1000),
        ...(token ? { 'continuation-token': token } : {}),
      });
      const xml = response.body.toString('utf8');
      if (response.status !== 200) throw failure(response.status, xml);
      for (const [, entry] of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
        const key = unescapeXml(tag(entry!, 'Key') ?? '');
        const etag = unescapeXml(tag(entry!, 'ETag') ?? '').replace(/"/g, '') || null;
        if (!key || key.endsWith('/')) continue;
        if (Number(tag(entry!, 'Size') ?? 0) > MAX_OBJECT_BYTES) {
          await run.failed(key, `Larger than ${MAX_OBJECT_BYTES} bytes`);
          continue;
        }
        if (await run.unchanged(key, etag)) continue;
        const object = await s3.get(key);
        if (object.status === 404) continue;
        if (object.status !== 200) {
          await run.failed(key, `GET answered ${object.status}`);
          continue;
        }
        await run.object({
          sourceId: key,
          version: etag,
          name: key.split('/').pop()!,
          mediaType: object.headers['content-type'],
          url: `s3://${config.bucket}/${key}`,
          bytes: object.body,
        });
      }
      const next = tag(xml, 'NextContinuationToken');
      if (tag(xml, 'IsTruncated') !== 'true' || !next) return { complete: true };
      token = unescapeXml(next);
      await run.saveCheckpoint({ token });
    }
  },
};
