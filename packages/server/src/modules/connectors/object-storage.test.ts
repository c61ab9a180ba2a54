import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import S3rver from 's3rver';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { connectorsClient } from '../../testing/connectors.js';
import { makePdf } from '../../testing/files.js';
import { expectError } from '../../testing/memories.js';
import { S3BlobStore } from '../../store/blobs/s3-blobs.js';

forEachDialect('object storage connector (local s3rver)', (dialect) => {
  let server: S3rver;
  let dir: string;
  let endpoint: string;
  let bucket: S3BlobStore;
  const put = (key: string, content: string | Buffer) => bucket.put(key, Readable.from([Buffer.from(content)]));
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-s3-'));
    server = new S3rver({
      address: '127.0.0.1',
      port: 0,
      silent: true,
      directory: dir,
      configureBuckets: [{ name: 'knowledge' }],
    });
    const { port } = (await server.run()) as { port: number };
    endpoint = `http://127.0.0.1:${port}`;
    bucket = new S3BlobStore({
      bucket: 'knowledge',
      prefix: '',
      region: 'us-east-1',
      endpoint,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
    });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const t = useTestApp(dialect, { outbound: { allow: ['127.0.0.1'] } });
  const owner = useOwner(t);

  it('syncs a bucket prefix page by page, then sees added, changed and deleted objects', async () => {
    const prefix = `${dialect}/docs/`;
    await put(`${prefix}handbook.md`, '# Handbook\n\nNew staff get a laptop on day one.');
    await put(`${prefix}faq.txt`, 'Parking is free for visitors.');
    await put(`${prefix}terms.pdf`, await makePdf(['Invoices are due within thirty days.']));
    await put(`${prefix}prices.csv`, 'product,price\nTea,3\nCoffee,4\n');
    await put(`${prefix}logo.png`, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]));
    await put(`${dialect}/elsewhere.txt`, 'Outside the prefix.');

    const c = connectorsClient(t, owner);
    const base = {
      provider: 'object_storage',
      name: 'Bucket',
      end_user_id: `bucket-${dialect}`,
      credentials: { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' },
    };
    expectError(
      await c.call('POST', '/connectors/connections', { body: { ...base, config: { bucket: 'missing', endpoint } } }),
      400,
      'validation_error',
      'config/bucket',
    );
    expectError(
      await c.call('POST', '/connectors/connections', {
        body: {
          ...base,
          config: { bucket: 'knowledge', endpoint },
          credentials: { access_key_id: 'UNKNOWN', secret_access_key: 'S3RVER' },
        },
      }),
      400,
      'validation_error',
      'credentials',
    );
    // page_size 2: five keys take three ListObjectsV2 pages, so continuation tokens are followed.
    const connection = await c.create({ ...base, config: { bucket: 'knowledge', prefix, endpoint, page_size: 2 } });
    expect(connection).not.toHaveProperty('credentials');

    const first = await c.waitForSync((await c.sync(connection.id)).id);
    expect(first).toMatchObject({ status: 'succeeded', progress: { seen: 5, created: 4, failed: 1, deleted: 0 } });
    const objects = await c.objects(connection.id);
    expect(objects.map((o) => [o.source_id.slice(prefix.length), o.status])).toEqual([
      ['faq.txt', 'synced'],
      ['handbook.md', 'synced'],
      ['logo.png', 'failed'],
      ['prices.csv', 'synced'],
      ['terms.pdf', 'synced'],
    ]);
    expect(objects[0]!.version).toMatch(/^[0-9a-f]{32}$/);
    expect(objects[3]!.memory_ids).toHaveLength(2);

    await put(`${prefix}faq.txt`, 'Parking is free for visitors after six.');
    await bucket.delete(`${prefix}handbook.md`);
    await put(`${prefix}team.json`, JSON.stringify({ lead: 'Mira', members: 4 }));
    const second = await c.waitForSync((await c.sync(connection.id)).id);
    expect(second).toMatchObject({
      status: 'succeeded',
      progress: { seen: 5, created: 1, updated: 1, unchanged: 2, deleted: 1, failed: 1 },
    });
    const live = await t.database.db
      .selectFrom('memories')
      .select('text')
      .where('end_user_id', '=', `bucket-${dialect}`)
      .where('deleted_at', 'is', null)
      .orderBy('id')
      .execute();
    expect(live.map((m) => m.text).sort()).toEqual(
      [
        'Invoices are due within thirty days.',
        'product: Tea; price: 3',
        'product: Coffee; price: 4',
        'Parking is free for visitors after six.',
        'lead: Mira\nmembers: 4',
      ].sort(),
    );

    // Nothing changed: nothing is downloaded again (ETags compared), nothing written.
    const third = await c.waitForSync((await c.sync(connection.id)).id);
    expect(third).toMatchObject({ progress: { seen: 5, unchanged: 4, created: 0, updated: 0, deleted: 0, failed: 1 } });
  });
});
