import { expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { forEachDialect, useTestApp, type Response, type TestApp } from '../../testing/harness.js';
import { upload } from '../../testing/files.js';
import {
  deepHtml,
  deepJson,
  docxBomb,
  docxOfManyParts,
  pdfClaimingPages,
  pdfFlateBomb,
  pdfOfPages,
  pdfSlowText,
} from '../../testing/hostile-files.js';
import { expectError, snapshot } from '../../testing/memories.js';
import { freshUser } from '../../testing/retrieval.js';
import { until } from '../../testing/until.js';

/**
 * Files built to exhaust the server (issue 46, defect 6): each fails alone with the status it
 * deserves, writes nothing, and the server goes on serving. The files are made here, not committed.
 */

const parse = loadConfig({}).parse;

/** Everything an upload can write: memories, history, audit and events, the file rows, jobs and stored bytes. */
async function state(t: TestApp) {
  const db = t.database.db;
  return {
    ...(await snapshot(t)),
    files: await db.selectFrom('uploaded_files').selectAll().orderBy('id').execute(),
    jobs: await db.selectFrom('jobs').select(['id', 'status']).orderBy('id').execute(),
    blobs: await db.selectFrom('blobs').select('key').orderBy('key').execute(),
  };
}

/** Runs an upload that must be refused, and checks that it wrote nothing and the server still serves an ordinary file. */
async function refused(
  t: TestApp,
  run: () => Promise<Response>,
  status: number,
  code: string,
  field?: string,
): Promise<Response> {
  const before = await state(t);
  const res = await run();
  expectError(res, status, code, field);
  expect(await state(t)).toEqual(before);
  const endUser = freshUser();
  const ordinary = await upload(t, { name: 'after.txt', content: 'The server still reads files.' }, { endUser });
  expect(ordinary.status, ordinary.text).toBe(201);
  expect((await t.call('GET', '/healthz')).status).toBe(200);
  return res;
}

forEachDialect('hostile uploads', (dialect) => {
  const t = useTestApp(dialect, { upload: { maxBytes: 8 * 1024 * 1024, backgroundFromBytes: 4 * 1024 * 1024 }, parse });

  it('refuses by default a PDF whose streams inflate to 40 MB (32 MiB: a reader holds ~3x a stream while decoding it)', async () => {
    expect(parse.maxExpandedBytes).toBe(32 * 1024 * 1024);
    const pdf = await refused(
      t,
      () => upload(t, { name: 'forty.pdf', content: pdfFlateBomb(40) }, { endUser: freshUser() }),
      413,
      'payload_too_large',
      'file',
    );
    expect(pdf.body.error.message).toContain('ENGRAM_PARSE_MAX_EXPANDED_BYTES');
  });

  it('refuses a zip-bomb DOCX and a Flate-bomb PDF with 413 naming the expansion bound', async () => {
    const endUser = freshUser();
    const docx = await refused(
      t,
      () => upload(t, { name: 'bomb.docx', content: docxBomb(1024) }, { endUser }),
      413,
      'payload_too_large',
      'file',
    );
    expect(docx.body.error.message).toContain('ENGRAM_PARSE_MAX_EXPANDED_BYTES');
    const pdf = await refused(
      t,
      () => upload(t, { name: 'bomb.pdf', content: pdfFlateBomb(1024) }, { endUser }),
      413,
      'payload_too_large',
      'file',
    );
    expect(pdf.body.error.message).toContain('ENGRAM_PARSE_MAX_EXPANDED_BYTES');
    const parts = await refused(
      t,
      () => upload(t, { name: 'parts.docx', content: docxOfManyParts(parse.maxParts + 1) }, { endUser }),
      413,
      'payload_too_large',
      'file',
    );
    expect(parts.body.error.message).toContain('ENGRAM_PARSE_MAX_PARTS');
  });

  it('refuses a PDF of more pages than the bound, and reads one that only claims a million', async () => {
    const endUser = freshUser();
    const many = await refused(
      t,
      () => upload(t, { name: 'many.pdf', content: pdfOfPages(parse.maxPages + 1) }, { endUser }),
      413,
      'payload_too_large',
      'file',
    );
    expect(many.body.error.message).toContain('ENGRAM_PARSE_MAX_PAGES');
    // PDF.js checks a page count against the page tree; the one page there is read.
    const claiming = await upload(t, { name: 'claims.pdf', content: pdfClaimingPages(1_000_000) }, { endUser });
    expect(claiming.status, claiming.text).toBe(201);
    expect(claiming.body.memories.map((m: any) => m.text)).toEqual(['One real page.']);
  });

  it('refuses deeply nested HTML and JSON, and HTML of more parts than the bound', async () => {
    const endUser = freshUser();
    const html = await refused(
      t,
      () => upload(t, { name: 'deep.html', content: deepHtml(200_000) }, { endUser }),
      413,
      'payload_too_large',
      'file',
    );
    expect(html.body.error.message).toMatch(/nests/);
    const json = await refused(
      t,
      () => upload(t, { name: 'deep.json', content: deepJson(200_000) }, { endUser }),
      413,
      'payload_too_large',
      'file',
    );
    expect(json.body.error.message).toMatch(/nests/);
    const wide = await refused(
      t,
      () =>
        upload(
          t,
          {
            name: 'wide.md',
            content: Array.from({ length: parse.maxParts + 1 }, (_, i) => `Line ${i}.`).join('\n\n'),
          },
          { endUser },
        ),
      413,
      'payload_too_large',
      'file',
    );
    expect(wide.body.error.message).toContain('ENGRAM_PARSE_MAX_PARTS');
  });

  it('fails the background job of a large bomb with the bound it broke, writing nothing', async () => {
    const endUser = freshUser();
    const bomb = Buffer.concat([pdfFlateBomb(1024), Buffer.alloc(4 * 1024 * 1024, 0x20)]);
    const res = await upload(t, { name: 'large-bomb.pdf', content: bomb }, { endUser });
    expect(res.status, res.text).toBe(202);
    const job = await until(
      async () => {
        const view = (await t.call('GET', `/memory/upload/${res.body.job.id}`, { endUser })).body;
        return view.status === 'failed' || view.status === 'succeeded' ? view : undefined;
      },
      'the upload job',
      30_000,
    );
    expect(job).toMatchObject({ status: 'failed', error: expect.stringContaining('ENGRAM_PARSE_MAX_EXPANDED_BYTES') });
    const memories = await t.database.db
      .selectFrom('memories')
      .select('id')
      .where('end_user_id', '=', endUser)
      .execute();
    expect(memories).toEqual([]);
    expect(await t.database.db.selectFrom('blobs').select('key').execute()).toEqual([]);
  });

  it('answers malformed multipart bodies with 400 naming the field, and an oversized file with 413', async () => {
    const endUser = freshUser();
    const send = (payload: string | Buffer, contentType: string) =>
      t.call('POST', '/memory/upload', { endUser, payload, headers: { 'content-type': contentType } });
    const part = (boundary: string, body: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n${body}`;
    // The boundary the header names never appears in the body.
    await refused(
      t,
      () => send(`${part('xyz', 'Hello.')}\r\n--xyz--\r\n`, 'multipart/form-data; boundary=abc'),
      400,
      'validation_error',
      'file',
    );
    // No boundary at all.
    await refused(
      t,
      () => send(`${part('xyz', 'Hello.')}\r\n--xyz--\r\n`, 'multipart/form-data'),
      400,
      'validation_error',
      'Content-Type',
    );
    // A part that never ends.
    await refused(
      t,
      () => send(part('xyz', 'Hello, and then the body stops'), 'multipart/form-data; boundary=xyz'),
      400,
      'validation_error',
      'file',
    );
    // Headers of a part that never end.
    await refused(
      t,
      () =>
        send(
          '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"',
          'multipart/form-data; boundary=xyz',
        ),
      400,
      'validation_error',
      'file',
    );
    // A deeply nested JSON field beside the file.
    const nested = `--xyz\r\nContent-Disposition: form-data; name="meta"\r\nContent-Type: application/json\r\n\r\n${deepJson(100_000)}\r\n${part('xyz', 'Hello.')}\r\n--xyz--\r\n`;
    await refused(t, () => send(nested, 'multipart/form-data; boundary=xyz'), 400, 'validation_error', 'meta');
    // More parts than the form has.
    const fields = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}`, 'x']));
    await refused(
      t,
      () => upload(t, { name: 'a.txt', content: 'Hello.' }, { endUser, fields }),
      400,
      'validation_error',
      'body',
    );
    // A file over ENGRAM_UPLOAD_MAX_BYTES.
    await refused(
      t,
      () => upload(t, { name: 'big.txt', content: Buffer.alloc(8 * 1024 * 1024 + 1, 0x61) }, { endUser }),
      413,
      'payload_too_large',
      'file',
    );
  });
});

forEachDialect('a file that takes too long to read', (dialect) => {
  const t = useTestApp(dialect, { parse: { ...parse, maxExpandedBytes: 256 * 1024 * 1024, timeoutMs: 1_000 } });

  it('is stopped at ENGRAM_PARSE_TIMEOUT_MS with 413, and the next file is read', async () => {
    const res = await refused(
      t,
      () => upload(t, { name: 'slow.pdf', content: pdfSlowText(200) }, { endUser: freshUser() }),
      413,
      'payload_too_large',
      'file',
    );
    expect(res.body.error.message).toContain('ENGRAM_PARSE_TIMEOUT_MS');
  });
});

forEachDialect('a file that needs more memory than a reader has', (dialect) => {
  // A DOCX inflating to 48 MB (within the bound) whose document a parser builds in memory several times over.
  const t = useTestApp(dialect, { parse: { ...parse, maxExpandedBytes: 64 * 1024 * 1024, maxHeapMb: 64 } });

  it('ends that reader alone with 413 naming ENGRAM_PARSE_MAX_HEAP_MB, and the server reads the next file', async () => {
    const endUser = freshUser();
    const res = await refused(
      t,
      () => upload(t, { name: 'heavy.docx', content: docxBomb(48) }, { endUser }),
      413,
      'payload_too_large',
      'file',
    );
    expect(res.body.error.message).toContain('ENGRAM_PARSE_MAX_HEAP_MB');
  });
});

forEachDialect('the parts bound', (dialect) => {
  const t = useTestApp(dialect, { parse: { ...parse, maxParts: 100 } });

  it("reads a file named or typed after Object's members (.constructor, .__proto__, a media type 'constructor') as text", async () => {
    const endUser = freshUser();
    for (const [name, type] of [
      ['notes.constructor', 'text/plain'],
      ['notes.__proto__', 'text/plain'],
      ['notes.tostring', 'text/plain'],
      ['notes', 'constructor'],
      ['notes', 'hasOwnProperty; charset=utf-8'],
    ] as const) {
      const content = `Plain words from ${name} typed ${type}.`;
      const res = await upload(t, { name, type, content }, { endUser });
      expect(res.status, `${name} (${type}): ${res.text}`).toBe(201);
      expect(res.body.file.type).toBe('text');
      expect(res.body.memories.map((m: { text: string }) => m.text)).toEqual([content]);
    }
  });

  it('counts paragraphs and headings, not the rows of a CSV or the records of a JSON array', async () => {
    const endUser = freshUser();
    const csv = `sku,location\n${Array.from({ length: 250 }, (_, i) => `item-${i},Shelf ${i % 9}`).join('\n')}\n`;
    const rows = await upload(t, { name: 'stock.csv', content: csv }, { endUser });
    expect(rows.status, rows.text).toBe(201);
    expect(rows.body.memories).toHaveLength(250);
    const json = JSON.stringify(Array.from({ length: 150 }, (_, i) => ({ name: `Person ${i}`, city: 'Lyon' })));
    const records = await upload(t, { name: 'people.json', content: json }, { endUser });
    expect(records.status, records.text).toBe(201);
    expect(records.body.memories).toHaveLength(150);
    const prose = Array.from({ length: 101 }, (_, i) => `Paragraph ${i}.`).join('\n\n');
    const refusedProse = await refused(
      t,
      () => upload(t, { name: 'long.md', content: prose }, { endUser }),
      413,
      'payload_too_large',
      'file',
    );
    expect(refusedProse.body.error.message).toContain('ENGRAM_PARSE_MAX_PARTS');
  });
});
