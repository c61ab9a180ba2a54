/**
 * Ingest benchmarks on a real server (SQLite): POST /memory/upload throughput per file type
 * (MB/s and memories/s), a 2,000-page local site crawled (pages/s, politeness delay off), and a
 * 10,000-object local S3 bucket (s3rver) synced, then re-synced with 1 % of the objects changed
 * (the re-sync must touch only those). `ENGRAM_BENCH_SCALE` scales the counts. Prints JSON.
 */
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import S3rver from 's3rver';
import { S3BlobStore } from '../packages/server/src/store/blobs/s3-blobs.js';
import { makeDocx, makePdf, multipartBody } from '../packages/server/src/testing/files.js';
import { startServer } from './lib/server.js';

const scale = Number(process.env.ENGRAM_BENCH_SCALE ?? 1);
const EMAIL = 'bench@engram.local';
const PASSWORD = 'bench-password-123';
const server = await startServer({
  env: {
    ENGRAM_BOOTSTRAP_EMAIL: EMAIL,
    ENGRAM_BOOTSTRAP_PASSWORD: PASSWORD,
    ENGRAM_OUTBOUND_ALLOW: '127.0.0.1',
    ENGRAM_UPLOAD_BACKGROUND_BYTES: String(512 * 1024 * 1024),
    ENGRAM_UPLOAD_MAX_BYTES: String(512 * 1024 * 1024),
  },
  nodeArgs: ['--openssl-legacy-provider'],
});
const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;

async function json(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(server.url + path, {
    method,
    headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const parsed = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(parsed)}`);
  return parsed as any;
}

const paragraph = (i: number) =>
  `Paragraph ${i} explains how the warehouse team handles order ${i * 7} and which carrier ships parcel ${i}.`;
const documents: Record<string, (n: number) => Promise<Buffer> | Buffer> = {
  text: (n) => Buffer.from(Array.from({ length: 400 }, (_, i) => paragraph(n * 1000 + i)).join('\n\n')),
  markdown: (n) =>
    Buffer.from(
      Array.from(
        { length: 40 },
        (_, s) =>
          `## Section ${s}\n\n${Array.from({ length: 10 }, (_, i) => paragraph(n * 1000 + s * 10 + i)).join('\n\n')}`,
      ).join('\n\n'),
    ),
  html: (n) =>
    Buffer.from(
      `<html><body><article>${Array.from({ length: 40 }, (_, s) => `<h2>Section ${s}</h2>${Array.from({ length: 10 }, (_, i) => `<p>${paragraph(n * 1000 + s * 10 + i)}</p>`).join('')}`).join('')}</article></body></html>`,
    ),
  csv: (n) =>
    Buffer.from(
      'order,carrier,city\n' +
        Array.from({ length: 1000 }, (_, i) => `${n * 10000 + i},Carrier ${i % 9},City ${i % 31}`).join('\n'),
    ),
  json: (n) =>
    Buffer.from(
      JSON.stringify({
        orders: Array.from({ length: 1000 }, (_, i) => ({
          id: n * 10000 + i,
          carrier: `Carrier ${i % 9}`,
          city: `City ${i % 31}`,
        })),
      }),
    ),
  pdf: (n) =>
    makePdf(
      Array.from({ length: 20 }, (_, p) =>
        Array.from({ length: 5 }, (_, i) => paragraph(n * 1000 + p * 5 + i)).join('\n\n'),
      ),
    ),
  docx: async () => makeDocx(),
};
const extension: Record<string, string> = {
  text: 'txt',
  markdown: 'md',
  html: 'html',
  csv: 'csv',
  json: 'json',
  pdf: 'pdf',
  docx: 'docx',
};

async function uploads() {
  const out: Record<string, unknown> = {};
  for (const [type, make] of Object.entries(documents)) {
    const files = await Promise.all(Array.from({ length: Math.max(2, Math.round(20 * scale)) }, (_, n) => make(n)));
    let bytes = 0;
    let memories = 0;
    const start = process.hrtime.bigint();
    for (const [n, content] of files.entries()) {
      const { payload, contentType } = multipartBody([{ name: `file-${n}.${extension[type]}`, content }]);
      const res = await fetch(`${server.url}/memory/upload`, {
        method: 'POST',
        headers: { 'x-api-key': server.key, 'x-end-user-id': `bench-${type}-${n}`, 'content-type': contentType },
        body: payload,
      });
      const body = (await res.json()) as any;
      if (res.status !== 201) throw new Error(`upload ${type}: ${res.status} ${JSON.stringify(body)}`);
      bytes += content.length;
      memories += body.memories.length;
    }
    const s = seconds(start);
    out[type] = {
      files: files.length,
      mb: +(bytes / 1e6).toFixed(2),
      mb_per_second: +(bytes / 1e6 / s).toFixed(2),
      memories,
      memories_per_second: Math.round(memories / s),
    };
  }
  return out;
}

async function waitForSync(headers: Record<string, string>, id: number) {
  for (;;) {
    const sync = await json('GET', `/connectors/syncs/${id}`, headers);
    if (['succeeded', 'failed', 'cancelled'].includes(sync.status)) return sync;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function timedSync(headers: Record<string, string>, connectionId: number) {
  const start = process.hrtime.bigint();
  const sync = await waitForSync(
    headers,
    (await json('POST', `/connectors/connections/${connectionId}/sync`, headers)).id,
  );
  return { seconds: +seconds(start).toFixed(2), status: sync.status, progress: sync.progress };
}

async function crawl(headers: Record<string, string>) {
  const pages = Math.round(2000 * scale);
  const sections = Math.ceil(pages / 50);
  const site = createServer((req, res) => {
    const url = req.url ?? '/';
    let body: string;
    if (url === '/') body = Array.from({ length: sections }, (_, s) => `<a href="/s${s}">Section ${s}</a>`).join(' ');
    else if (/^\/s\d+$/.test(url)) {
      const s = Number(url.slice(2));
      body = Array.from({ length: 50 }, (_, i) => s * 50 + i)
        .filter((p) => p < pages)
        .map((p) => `<a href="/p${p}">Page ${p}</a>`)
        .join(' ');
    } else if (/^\/p\d+$/.test(url))
      body = `<h1>Page ${url.slice(2)}</h1><p>${paragraph(Number(url.slice(2)))}</p><p>${paragraph(Number(url.slice(2)) + 1)}</p>`;
    else {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><body><main>${body}</main></body></html>`);
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  try {
    const connection = await json('POST', '/connectors/connections', headers, {
      provider: 'web_crawler',
      name: 'bench site',
      end_user_id: 'bench-site',
      config: { start_urls: [`${base}/`], delay_ms: 0, max_depth: 2, max_pages: pages + sections + 10 },
    });
    const run = await timedSync(headers, connection.id);
    return { pages: run.progress.seen, ...run, pages_per_second: Math.round(run.progress.seen / run.seconds) };
  } finally {
    site.close();
  }
}

async function bucket(headers: Record<string, string>) {
  const objects = Math.round(10_000 * scale);
  const dir = mkdtempSync(join(tmpdir(), 'engram-bench-s3-'));
  const s3 = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: dir,
    configureBuckets: [{ name: 'bench' }],
  });
  const { port } = (await s3.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${port}`;
  const store = new S3BlobStore({
    bucket: 'bench',
    prefix: 'docs/',
    region: 'us-east-1',
    endpoint,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
  });
  const put = (i: number, version = 0) =>
    store.put(
      `note-${String(i).padStart(6, '0')}.txt`,
      Readable.from([Buffer.from(`${paragraph(i)} Revision ${version}.`)]),
    );
  try {
    for (let i = 0; i < objects; i += 32)
      await Promise.all(Array.from({ length: Math.min(32, objects - i) }, (_, j) => put(i + j)));
    const connection = await json('POST', '/connectors/connections', headers, {
      provider: 'object_storage',
      name: 'bench bucket',
      end_user_id: 'bench-bucket',
      config: { bucket: 'bench', prefix: 'docs/', endpoint },
      credentials: { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' },
    });
    const first = await timedSync(headers, connection.id);
    const changed = Math.max(1, Math.round(objects / 100));
    for (let i = 0; i < changed; i++) await put(i * 100, 1);
    const resync = await timedSync(headers, connection.id);
    return {
      objects,
      full_sync: { ...first, objects_per_second: Math.round(objects / first.seconds) },
      resync_1_percent: {
        ...resync,
        changed,
        touched_only_changed: resync.progress.updated === changed && resync.progress.unchanged === objects - changed,
      },
    };
  } finally {
    await s3.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  const login = await json('POST', '/auth/login', {}, { email: EMAIL, password: PASSWORD });
  const projects = await json('GET', '/org/projects', { authorization: `Bearer ${login.access_token}` });
  const headers = { authorization: `Bearer ${login.access_token}`, 'x-project-id': projects.items[0].id };
  const result = {
    benchmark: 'ingest',
    node: process.version,
    scale,
    upload: await uploads(),
    crawl: await crawl(headers),
    bucket: await bucket(headers),
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await server.stop();
}
