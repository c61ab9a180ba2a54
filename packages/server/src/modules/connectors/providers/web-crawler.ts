import { Type, type Static } from '@sinclair/typebox';
import robotsParserModule from 'robots-parser';
import type { OutboundResponse } from '../../../core/outbound.js';
import { sleep } from './http.js';
import { ProviderConfigError, type ConnectorProvider, type SyncRun } from './provider.js';

/**
 * Web crawler: start URLs and/or sitemaps, breadth first within the same site (host) by default,
 * with depth and page limits and a politeness delay. robots.txt per RFC 9309: fetched once per
 * origin per run; 2xx is obeyed (for our user agent, else `*`), 4xx means no restrictions, 5xx or
 * unreachable means nothing may be crawled. A page's id is its canonical URL (`<link rel=canonical>`
 * on the same site, else the URL after redirects, without fragment). Pages are read by the upload
 * pipeline's HTML parser, which keeps the readable content. A page that answers 404 or 410 is
 * simply not seen, so a complete crawl forgets it.
 */

export const USER_AGENT = 'EngramBot/0.1 (+https://github.com/engram)';
const ROBOTS_TOKEN = 'EngramBot';
// A CommonJS module whose typings declare an ES default export: the function is the module itself.
const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default;

const Config = Type.Object(
  {
    start_urls: Type.Array(Type.String({ pattern: '^https?://\\S+$', maxLength: 2048 }), {
      minItems: 0,
      maxItems: 20,
      default: [],
    }),
    sitemap_urls: Type.Array(Type.String({ pattern: '^https?://\\S+$', maxLength: 2048 }), {
      maxItems: 10,
      default: [],
    }),
    same_site: Type.Boolean({
      default: true,
      description: 'Follow links only to the hosts of the start URLs and sitemaps',
    }),
    max_depth: Type.Integer({ minimum: 0, maximum: 20, default: 3, description: 'Links followed from a start URL' }),
    max_pages: Type.Integer({ minimum: 1, maximum: 100_000, default: 500 }),
    delay_ms: Type.Integer({
      minimum: 0,
      maximum: 60_000,
      default: 1000,
      description: "Pause between requests (robots.txt's Crawl-delay wins when longer)",
    }),
  },
  { additionalProperties: false },
);
type Config = Static<typeof Config>;

interface Checkpoint {
  queue: Array<[string, number]>;
  visited: string[];
  pages: number;
}

const normalize = (href: string, base?: string): string | undefined => {
  try {
    const url = new URL(href, base);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    url.hash = '';
    return url.toString();
  } catch {
    return undefined;
  }
};

const isHtml = (response: OutboundResponse) => /html/i.test(response.headers['content-type'] ?? '');

type Robots = { allowed(url: string): boolean; delayMs: number };

async function robotsFor(run: Pick<SyncRun, 'fetch'>, origin: string): Promise<Robots> {
  const url = `${origin}/robots.txt`;
  let response: OutboundResponse;
  try {
    response = await run.fetch(url, { headers: { 'user-agent': USER_AGENT }, maxBytes: 512 * 1024 });
  } catch {
    return { allowed: () => false, delayMs: 0 };
  }
  if (response.status >= 500) return { allowed: () => false, delayMs: 0 };
  if (response.status >= 400 || response.status < 200 || response.status >= 300)
    return { allowed: () => true, delayMs: 0 };
  const robots = robotsParser(url, response.body.toString('utf8'));
  return {
    allowed: (u) => robots.isAllowed(u, ROBOTS_TOKEN) !== false,
    delayMs: (robots.getCrawlDelay(ROBOTS_TOKEN) ?? 0) * 1000,
  };
}

async function sitemapUrls(run: Pick<SyncRun, 'fetch'>, sitemap: string, depth = 0): Promise<string[]> {
  const response = await run.fetch(sitemap, { headers: { 'user-agent': USER_AGENT } });
  if (response.status !== 200)
    throw new ProviderConfigError(`The sitemap ${sitemap} answered ${response.status}`, 'config/sitemap_urls');
  const xml = response.body.toString('utf8');
  const locs = [...xml.matchAll(/<loc>\s*([^<\s]+)\s*<\/loc>/gi)].map((m) => m[1]!.replace(/&amp;/g, '&'));
  if (/<sitemapindex/i.test(xml) && depth < 2)
    return (await Promise.all(locs.slice(0, 50).map((l) => sitemapUrls(run, l, depth + 1)))).flat();
  return locs;
}

export const webCrawler: ConnectorProvider = {
  name: 'web_crawler',
  title: 'Web crawler',
  description: 'Crawls a website from start URLs or sitemaps and remembers the readable content of its pages.',
  authKind: 'none',
  configSchema: Config,
  credentialsSchema: null,
  capabilities: ['incremental', 'deletions', 'robots_txt', 'sitemaps'],

  async validate(run) {
    const config = run.config as Config;
    const first = config.start_urls[0] ?? config.sitemap_urls[0];
    if (!first) throw new ProviderConfigError('Give at least one start URL or sitemap', 'config/start_urls');
    try {
      await run.fetch(first, { headers: { 'user-agent': USER_AGENT }, maxBytes: 5 * 1024 * 1024 });
    } catch (error) {
      throw new ProviderConfigError(
        `${first} cannot be fetched: ${error instanceof Error ? error.message : String(error)}`,
        config.start_urls[0] ? 'config/start_urls' : 'config/sitemap_urls',
      );
    }
  },

  async sync(run) {
    const config = run.config as Config;
    const hosts = new Set([...config.start_urls, ...config.sitemap_urls].map((u) => new URL(u).host));
    const robots = new Map<string, Robots>();
    const saved = run.checkpoint as Checkpoint | null;
    const visited = new Set(saved?.visited ?? []);
    let queue: Array<[string, number]> = saved?.queue ?? [];
    let pages = saved?.pages ?? 0;
    if (!saved) {
      for (const sitemap of config.sitemap_urls)
        for (const url of await sitemapUrls(run, sitemap)) queue.push([url, 0]);
      for (const url of config.start_urls) queue.push([url, 0]);
      queue = queue.flatMap(([u, d]) => {
        const n = normalize(u);
        return n ? [[n, d] as [string, number]] : [];
      });
    }
    let requests = 0;
    const onSite = (url: string) => !config.same_site || hosts.has(new URL(url).host);

    while (queue.length > 0 && pages < config.max_pages) {
      const [url, depth] = queue.shift()!;
      if (visited.has(url) || !onSite(url)) continue;
      visited.add(url);
      const origin = new URL(url).origin;
      if (!robots.has(origin)) robots.set(origin, await robotsFor(run, origin));
      const rules = robots.get(origin)!;
      if (!rules.allowed(url)) continue;
      const pause = Math.max(config.delay_ms, rules.delayMs);
      if (requests++ > 0 && pause > 0) await sleep(pause);

      let response: OutboundResponse;
      try {
        response = await run.fetch(url, {
          headers: { 'user-agent': USER_AGENT, accept: 'text/html,application/xhtml+xml,*/*;q=0.5' },
        });
      } catch (error) {
        await run.failed(url, error instanceof Error ? error.message : String(error));
        continue;
      }
      if (response.status === 404 || response.status === 410) continue;
      if (response.status !== 200) {
        await run.failed(url, `HTTP ${response.status}`);
        continue;
      }
      const finalUrl = normalize(response.url)!;
      if (!onSite(finalUrl)) continue;
      visited.add(finalUrl);
      let id = finalUrl;
      let follow = depth < config.max_depth;
      let index = true;
      if (isHtml(response)) {
        const { document } = (await import('linkedom')).parseHTML(response.body.toString('utf8'));
        const meta = (document.querySelector('meta[name="robots"]')?.getAttribute('content') ?? '').toLowerCase();
        if (meta.includes('noindex')) index = false;
        if (meta.includes('nofollow')) follow = false;
        const canonical = normalize(
          document.querySelector('link[rel="canonical"]')?.getAttribute('href') ?? '',
          finalUrl,
        );
        if (canonical && onSite(canonical)) {
          if (canonical !== finalUrl && visited.has(canonical)) index = false;
          id = canonical;
          visited.add(canonical);
        }
        if (follow) {
          for (const a of document.querySelectorAll('a[href]')) {
            if (/nofollow/i.test(a.getAttribute('rel') ?? '')) continue;
            const link = normalize(a.getAttribute('href')!, finalUrl);
            if (link && !visited.has(link) && onSite(link)) queue.push([link, depth + 1]);
          }
        }
      }
      if (index) {
        const path = new URL(id).pathname;
        const name = path.endsWith('/') || !/\.[a-z0-9]+$/i.test(path) ? 'page.html' : path.split('/').pop()!;
        await run.object({
          sourceId: id,
          version: response.headers.etag ?? response.headers['last-modified'] ?? null,
          name,
          mediaType: response.headers['content-type'],
          url: id,
          bytes: response.body,
        });
        pages++;
      }
      if (pages % 10 === 0) await run.saveCheckpoint({ queue, visited: [...visited], pages } satisfies Checkpoint);
    }
    return { complete: queue.length === 0 || queue.every(([u]) => visited.has(u)) };
  },
};
