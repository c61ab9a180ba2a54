import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { connectorsClient, startSite, type LocalSite } from '../../testing/connectors.js';
import { expectError } from '../../testing/memories.js';
import { decodeJson } from '../../store/database.js';

const html = (title: string, body: string, head = '') =>
  `<!doctype html><html><head><title>${title}</title>${head}</head><body><nav><a href="/">Home</a></nav><main><h1>${title}</h1>${body}</main><footer>Footer text</footer></body></html>`;
const HTML = 'text/html; charset=utf-8';

function siteMap(): Record<string, [number, string, string]> {
  return {
    '/robots.txt': [200, 'text/plain', 'User-agent: *\nDisallow: /private/\n'],
    '/sitemap.xml': [200, 'application/xml', '<?xml version="1.0"?><urlset><url><loc>BASE/about</loc></url></urlset>'],
    '/': [
      200,
      HTML,
      html(
        'Welcome',
        '<p>The bakery opens at seven every morning.</p><a href="/blog/">Blog</a> <a href="/private/secret">Secret</a> <a href="http://example.invalid/x">Elsewhere</a> <a href="/about?ref=home">About</a>',
      ),
    ],
    '/about': [
      200,
      HTML,
      html(
        'About us',
        '<p>We bake sourdough bread with rye from local farms.</p>',
        '<link rel="canonical" href="/about">',
      ),
    ],
    '/about?ref=home': [
      200,
      HTML,
      html(
        'About us',
        '<p>We bake sourdough bread with rye from local farms.</p>',
        '<link rel="canonical" href="/about">',
      ),
    ],
    '/blog/': [
      200,
      HTML,
      html('Blog', '<p>News from the bakery.</p><a href="post-1">One</a> <a href="/blog/post-2#comments">Two</a>'),
    ],
    '/blog/post-1': [200, HTML, html('Croissants', '<p>Croissants are baked on Saturdays only.</p>')],
    '/blog/post-2': [200, HTML, html('Holidays', '<p>The bakery closes for two weeks in August.</p>')],
    '/private/secret': [200, HTML, html('Secret', '<p>The secret recipe uses honey.</p>')],
  };
}

forEachDialect('web crawler connector', (dialect) => {
  let site: LocalSite;
  beforeAll(async () => {
    site = await startSite(siteMap());
    const sitemap = site.pages.get('/sitemap.xml')!;
    site.pages.set('/sitemap.xml', [sitemap[0], sitemap[1], sitemap[2].replace('BASE', site.base)]);
  });
  afterAll(() => site?.close());
  const t = useTestApp(dialect, { outbound: { allow: ['127.0.0.1'] } });
  const owner = useOwner(t);

  const memoriesOf = async (endUser: string) =>
    await t.database.db
      .selectFrom('memories')
      .selectAll()
      .where('end_user_id', '=', endUser)
      .where('deleted_at', 'is', null)
      .orderBy('id')
      .execute();

  it('crawls the site within robots.txt, the sitemap and canonical URLs, then sees changed and removed pages', async () => {
    const c = connectorsClient(t, owner);
    const connection = await c.create({
      provider: 'web_crawler',
      name: 'Bakery site',
      end_user_id: 'bakery-site',
      config: { start_urls: [`${site.base}/`], sitemap_urls: [`${site.base}/sitemap.xml`], delay_ms: 0, max_depth: 3 },
    });
    const first = await c.waitForSync((await c.sync(connection.id)).id);
    expect(first).toMatchObject({
      status: 'succeeded',
      trigger: 'manual',
      progress: { seen: 5, created: 5, updated: 0, deleted: 0, failed: 0 },
    });
    const objects = await c.objects(connection.id);
    expect(objects.map((o) => o.source_id).sort()).toEqual(
      ['/', '/about', '/blog/', '/blog/post-1', '/blog/post-2'].map((p) => `${site.base}${p}`).sort(),
    );
    expect(site.requests).not.toContain('/private/secret');
    const texts = (await memoriesOf('bakery-site')).map((m) => m.text).join('\n');
    expect(texts).toContain('Croissants are baked on Saturdays only.');
    expect(texts).not.toMatch(/secret recipe|Footer text/);
    const post1 = objects.find((o) => o.source_id.endsWith('/blog/post-1'))!;
    const [memory] = await t.database.db
      .selectFrom('memories')
      .selectAll()
      .where('id', '=', post1.memory_ids[0]!)
      .execute();
    expect(decodeJson(memory!.metadata)).toMatchObject({
      file: { url: `${site.base}/blog/post-1`, provider: 'web_crawler', connection_id: connection.id },
    });

    // Between syncs one page changes and one disappears.
    site.pages.set('/blog/post-1', [200, HTML, html('Croissants', '<p>Croissants are now baked every day.</p>')]);
    site.pages.delete('/blog/post-2');
    const second = await c.waitForSync((await c.sync(connection.id)).id);
    expect(second).toMatchObject({
      status: 'succeeded',
      progress: { seen: 4, created: 0, updated: 1, unchanged: 3, deleted: 1 },
    });
    const after = (await memoriesOf('bakery-site')).map((m) => m.text).join('\n');
    expect(after).toContain('Croissants are now baked every day.');
    expect(after).not.toMatch(/Saturdays only|two weeks in August/);
    const gone = (await c.objects(connection.id)).find((o) => o.source_id.endsWith('/blog/post-2'))!;
    expect(gone).toMatchObject({ status: 'deleted', memory_ids: [] });
    for (const id of post1.memory_ids) {
      expect(
        (
          await t.database.db
            .selectFrom('memories')
            .select(['text', 'deleted_at'])
            .where('id', '=', id)
            .executeTakeFirstOrThrow()
        ).text,
      ).toBe('');
    }

    const events = await t.database.db
      .selectFrom('outbox_events')
      .selectAll()
      .where('type', 'in', ['sync.completed', 'sync.failed'])
      .orderBy('id')
      .execute();
    expect(events.map((e) => [e.type, decodeJson<{ sync_id: number }>(e.payload).sync_id])).toEqual([
      ['sync.completed', first.id],
      ['sync.completed', second.id],
    ]);
    expect(decodeJson(events[1]!.payload)).toMatchObject({ connection_id: connection.id, updated: 1, deleted: 1 });

    // A run that died after its work (lease expired, status still running) resumes without duplicating anything.
    const before = (await memoriesOf('bakery-site')).length;
    await t.database.db
      .updateTable('connector_syncs')
      .set({ status: 'running', finished_at: null })
      .where('id', '=', second.id)
      .execute();
    await t.database.db
      .updateTable('jobs')
      .set({ status: 'running', locked_until: '2000-01-01T00:00:00.000Z' })
      .where('kind', '=', 'connector.sync')
      .execute();
    const resumed = await c.waitForSync(second.id);
    expect(resumed).toMatchObject({ status: 'succeeded', progress: { seen: 4, updated: 1, unchanged: 3, deleted: 1 } });
    expect((await memoriesOf('bakery-site')).length).toBe(before);
  });

  it('treats robots.txt 5xx as disallow-all and 4xx as allow-all', async () => {
    const c = connectorsClient(t, owner);
    const down = await startSite({
      '/robots.txt': [503, 'text/plain', 'busy'],
      '/': [200, HTML, html('Down', '<p>Should never be read.</p>')],
    });
    const open = await startSite({
      '/': [200, HTML, html('Open', '<p>No robots file here, so everything may be read.</p>')],
    });
    try {
      const a = await c.create({
        provider: 'web_crawler',
        name: 'down',
        end_user_id: 'down-site',
        config: { start_urls: [`${down.base}/`], delay_ms: 0 },
      });
      expect(await c.waitForSync((await c.sync(a.id)).id)).toMatchObject({
        status: 'succeeded',
        progress: { seen: 0 },
      });
      expect(down.requests.filter((r) => r === '/')).toHaveLength(1); // the validation fetch only
      const b = await c.create({
        provider: 'web_crawler',
        name: 'open',
        end_user_id: 'open-site',
        config: { start_urls: [`${open.base}/`], delay_ms: 0 },
      });
      expect(await c.waitForSync((await c.sync(b.id)).id)).toMatchObject({
        status: 'succeeded',
        progress: { seen: 1, created: 1 },
      });
    } finally {
      await down.close();
      await open.close();
    }
  });

  it('refuses a second sync while one runs, and cancels', async () => {
    const c = connectorsClient(t, owner);
    const slow = await startSite({
      '/': [200, HTML, html('Slow', Array.from({ length: 30 }, (_, i) => `<a href="/p${i}">p${i}</a>`).join(' '))],
    });
    for (let i = 0; i < 30; i++)
      slow.pages.set(`/p${i}`, [200, HTML, html(`Page ${i}`, `<p>Page number ${i} of the slow site.</p>`)]);
    try {
      const connection = await c.create({
        provider: 'web_crawler',
        name: 'slow',
        end_user_id: 'slow-site',
        config: { start_urls: [`${slow.base}/`], delay_ms: 200 },
      });
      const sync = await c.sync(connection.id);
      expectError(await c.call('POST', `/connectors/connections/${connection.id}/sync`), 409, 'conflict');
      expectError(await c.call('POST', `/connectors/connections/${connection.id}/purge`), 409, 'conflict');
      const cancel = await c.call('POST', `/connectors/syncs/${sync.id}/cancel`);
      expect(cancel.status, cancel.text).toBe(200);
      expect(cancel.body.cancel_requested).toBe(true);
      const done = await c.waitForSync(sync.id);
      expect(done.status).toBe('cancelled');
      expect(done.progress.seen).toBeLessThan(31);
      expectError(await c.call('POST', `/connectors/syncs/${sync.id}/cancel`), 409, 'conflict');
    } finally {
      await slow.close();
    }
  });
});

forEachDialect('web crawler connector without an allow-list', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);
  it('refuses private addresses through the SSRF guard', async () => {
    const c = connectorsClient(t, owner);
    for (const url of [
      'http://127.0.0.1:9/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:127.0.0.1]/',
      'http://10.0.0.1/',
      'http://localhost/',
    ]) {
      const res = await c.call('POST', '/connectors/connections', {
        body: { provider: 'web_crawler', name: 'x', config: { start_urls: [url] } },
      });
      expectError(res, 400, 'validation_error', 'config/start_urls');
      expect(res.body.error.message).toMatch(/non-public|refused/);
    }
    expect(await t.database.db.selectFrom('connector_connections').selectAll().execute()).toEqual([]);
  });
});
