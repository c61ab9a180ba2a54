import { mkdtempSync, rmSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { freshDatabaseConfig, forEachDialect } from '../testing/harness.js';
import type { BlobStore } from './blobs.js';
import { openBlobStore } from './blobs/open.js';
import { DatabaseBlobStore } from './blobs/database-blobs.js';
import { openDatabase, type Database } from './database.js';
import { migrate } from './migrate.js';

async function bytesOf(stream: Readable | undefined): Promise<Buffer> {
  expect(stream).toBeDefined();
  const parts: Buffer[] = [];
  for await (const part of stream!) parts.push(Buffer.from(part));
  return Buffer.concat(parts);
}

/** A stream of `data` in uneven pieces, so chunk boundaries never line up with writes. */
async function* pieces(data: Buffer) {
  for (let at = 0, step = 1; at < data.length; at += step, step = (step * 7 + 3) % 300_001 || 1)
    yield data.subarray(at, at + step);
}

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** The same contract for every backend. */
function behavesAsBlobStore(store: () => BlobStore, chunk: number) {
  const data = randomBytes(chunk * 2 + 1234);

  it('puts a stream and reports its size and SHA-256; gets it back whole and by range', async () => {
    const info = await store().put('p1/exports/1', pieces(data));
    expect(info).toEqual({ size: data.length, sha256: sha(data) });
    expect(await store().stat('p1/exports/1')).toEqual({ size: data.length });
    expect((await bytesOf(await store().get('p1/exports/1'))).equals(data)).toBe(true);
    for (const [offset, length] of [
      [0, 10],
      [chunk - 5, 10],
      [chunk, chunk],
      [chunk * 2 + 1000, undefined],
      [data.length - 1, 1],
    ] as const) {
      const part = await bytesOf(
        await store().get('p1/exports/1', { offset, ...(length !== undefined ? { length } : {}) }),
      );
      expect(
        part.equals(data.subarray(offset, length === undefined ? undefined : offset + length)),
        `${offset}+${length}`,
      ).toBe(true);
    }
  });

  it('stores an empty stream, replaces a blob on a second put, and deletes', async () => {
    expect(await store().put('p1/empty', pieces(Buffer.alloc(0)))).toEqual({ size: 0, sha256: sha(Buffer.alloc(0)) });
    expect((await bytesOf(await store().get('p1/empty'))).length).toBe(0);
    await store().put('p1/replaced', pieces(data));
    const smaller = Buffer.from('smaller');
    await store().put('p1/replaced', pieces(smaller));
    expect((await bytesOf(await store().get('p1/replaced'))).toString()).toBe('smaller');
    await store().delete('p1/replaced');
    expect(await store().get('p1/replaced')).toBeUndefined();
    expect(await store().stat('p1/replaced')).toBeUndefined();
    await store().delete('p1/never-there');
  });

  it('keys with spaces and non-ASCII characters', async () => {
    await store().put('p1/a b/é ü+%.json', pieces(Buffer.from('{}')));
    expect((await bytesOf(await store().get('p1/a b/é ü+%.json'))).toString()).toBe('{}');
  });
}

forEachDialect('blob store in the database', (dialect) => {
  let database: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const fresh = await freshDatabaseConfig(dialect);
    drop = fresh.drop;
    database = openDatabase(fresh.config);
    await migrate(database);
  });
  afterAll(async () => {
    await database.close();
    await drop();
  });
  const chunk = 64 * 1024;
  behavesAsBlobStore(() => new DatabaseBlobStore(database, chunk), chunk);

  it('keeps a blob in fixed chunks, unlisted until complete', async () => {
    const store = new DatabaseBlobStore(database, chunk);
    async function* slow() {
      yield randomBytes(chunk * 2);
      // Mid-upload, the chunks written so far are not a readable blob.
      expect(await store.stat('p2/partial')).toBeUndefined();
      yield randomBytes(10);
    }
    await store.put('p2/partial', slow());
    const rows = await database.db
      .selectFrom('blob_chunks')
      .select(['n'])
      .where('key', '=', 'p2/partial')
      .orderBy('n')
      .execute();
    expect(rows.map((r) => r.n)).toEqual([0, 1, 2]);
  });

  it('stores a chunk deflated when that makes it smaller, and reads it back whole and by range', async () => {
    const store = new DatabaseBlobStore(database, chunk);
    const lines = Buffer.from(
      Array.from({ length: 4000 }, (_, n) => `{"id":${n},"text":"memory ${n} of the user"}\n`).join(''),
    ).subarray(0, chunk * 2);
    const noise = randomBytes(chunk * 1.5);
    const data = Buffer.concat([lines, noise]);
    expect(await store.put('p3/mixed', pieces(data))).toEqual({ size: data.length, sha256: sha(data) });
    const rows = await database.db
      .selectFrom('blob_chunks')
      .select(['n', 'deflated', (eb) => eb.fn('length', ['data']).as('stored')])
      .where('key', '=', 'p3/mixed')
      .orderBy('n')
      .execute();
    // The JSON lines' chunks deflated to a fraction; random bytes, which deflate makes larger, as they came.
    expect(rows.map((r) => Boolean(r.deflated))).toEqual([true, true, false, false]);
    expect(Number(rows[0]!.stored)).toBeLessThan(chunk / 4);
    expect(Number(rows[2]!.stored)).toBe(chunk);
    expect((await bytesOf(await store.get('p3/mixed'))).equals(data)).toBe(true);
    for (const offset of [chunk - 7, chunk * 2 - 7]) {
      const part = await bytesOf(await store.get('p3/mixed', { offset, length: chunk + 20 }));
      expect(part.equals(data.subarray(offset, offset + chunk + 20)), String(offset)).toBe(true);
    }
  });

  it('a put whose stream fails has written its last chunk before it rejects', async () => {
    const store = new DatabaseBlobStore(database, chunk);
    async function* failing() {
      yield randomBytes(chunk * 3);
      throw new Error('stream failed');
    }
    await expect(store.put('p4/failed', failing())).rejects.toThrow('stream failed');
    await store.delete('p4/failed');
    expect(await database.db.selectFrom('blob_chunks').select('n').where('key', '=', 'p4/failed').execute()).toEqual(
      [],
    );
  });
});

describe('blob store in S3 (local s3rver)', () => {
  let server: S3rver;
  let dir: string;
  let store: BlobStore;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-s3-'));
    server = new S3rver({
      address: '127.0.0.1',
      port: 0,
      silent: true,
      directory: dir,
      configureBuckets: [{ name: 'engram-test' }],
    });
    const { port } = (await server.run()) as { port: number };
    const config = loadConfig({
      ENGRAM_BLOB_URL: 's3://engram-test/artifacts',
      ENGRAM_BLOB_ENDPOINT: `http://127.0.0.1:${port}`,
      ENGRAM_BLOB_ACCESS_KEY_ID: 'S3RVER',
      ENGRAM_BLOB_SECRET_ACCESS_KEY: 'S3RVER',
    });
    expect(config.blobs).toMatchObject({ kind: 's3', bucket: 'engram-test', prefix: 'artifacts/' });
    store = openBlobStore(config.blobs, undefined as never);
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // Over 8 MiB so that put takes the multipart path.
  behavesAsBlobStore(() => store, 8 * 1024 * 1024);

  it('puts objects under the configured prefix', async () => {
    await store.put('p3/x', pieces(Buffer.from('x')));
    const objects = await server.store.listObjects('engram-test', { prefix: 'artifacts/p3/' });
    expect(objects.objects.map((o: { key: string }) => o.key)).toEqual(['artifacts/p3/x']);
  });

  it('refuses an unknown bucket with an error that names no secret', async () => {
    const config = loadConfig({
      ENGRAM_BLOB_URL: 's3://no-such-bucket/x',
      ENGRAM_BLOB_ENDPOINT: `http://127.0.0.1:${(server.httpServer.address() as { port: number }).port}`,
      ENGRAM_BLOB_ACCESS_KEY_ID: 'S3RVER',
      ENGRAM_BLOB_SECRET_ACCESS_KEY: 'S3RVER',
    });
    const error = await openBlobStore(config.blobs, undefined as never)
      .put('k', pieces(Buffer.from('x')))
      .catch((e: Error) => e);
    expect(String(error)).toMatch(/S3 upload failed: 404 NoSuchBucket/);
    expect(String(error)).not.toContain('S3RVER');
  });
});

describe('configuration of the blob store', () => {
  it('defaults to the database and validates s3 settings', () => {
    expect(loadConfig({}).blobs).toEqual({ kind: 'database' });
    expect(() => loadConfig({ ENGRAM_BLOB_URL: 'ftp://x' })).toThrow(/ENGRAM_BLOB_URL/);
    expect(() => loadConfig({ ENGRAM_BLOB_URL: 's3://bucket/p' })).toThrow(/ENGRAM_BLOB_ACCESS_KEY_ID/);
  });
});
