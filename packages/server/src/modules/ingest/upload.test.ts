import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { decodeJson } from '../../store/database.js';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { makeDocx, makePdf, upload } from '../../testing/files.js';
import { expectError, expectNothingWritten, withEffects } from '../../testing/memories.js';
import { freshUser } from '../../testing/retrieval.js';
import { until } from '../../testing/until.js';
import { CHUNK } from './chunker.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

const GUIDE = `# Garden guide

Tomatoes need six hours of sun a day.

## Watering

Water deeply twice a week.

Mulch keeps the soil moist.

## Pests

Aphids leave sticky leaves.
`;

forEachDialect('POST /memory/upload', (dialect) => {
  const t = useTestApp(dialect, { upload: { maxBytes: 200_000, backgroundFromBytes: 50_000 } });
  /** The upload job once it has succeeded or failed. */
  const finished = (id: number, endUser: string) =>
    until(
      async () => {
        const job = (await t.call('GET', `/memory/upload/${id}`, { endUser })).body;
        return job.status === 'succeeded' || job.status === 'failed' ? job : undefined;
      },
      `upload job ${id}`,
      10_000,
    );

  it('removing an end user deletes their files’ names and their upload jobs', async () => {
    const endUser = freshUser();
    const name = `zq-file-${dialect}.csv`;
    const content = `sku,note\n${Array.from({ length: 2_000 }, (_, i) => `item-${i},stock ${i + 10} units kept in the north warehouse`).join('\n')}`;
    const res = await upload(t, { name, content }, { endUser });
    expect(res.status, res.text).toBe(202);
    await finished(res.body.job.id, endUser);
    const holding = async () =>
      JSON.stringify([
        await t.database.db.selectFrom('uploaded_files').selectAll().execute(),
        await t.database.db.selectFrom('jobs').selectAll().execute(),
      ]).includes(name);
    expect(await holding()).toBe(true);
    expect((await t.call('DELETE', `/memory/user/${endUser}`, { endUser: null })).status).toBe(200);
    expect(await holding()).toBe(false);
    expectError(await t.call('GET', `/memory/upload/${res.body.job.id}`, { endUser }), 404, 'not_found');
  });

  it('forgetting the last memory that came from a file deletes its name and its upload job; forgetting some keeps them', async () => {
    const endUser = freshUser();
    const name = `zq-forgotten-file-${dialect}.csv`;
    const content = `sku,note\n${Array.from({ length: 2_000 }, (_, i) => `item-${i},stock ${i + 10} units kept in the south warehouse`).join('\n')}`;
    const res = await upload(t, { name, content }, { endUser });
    expect(res.status, res.text).toBe(202);
    const ids = (await finished(res.body.job.id, endUser)).result.memory_ids as number[];
    expect(ids.length).toBeGreaterThan(1);
    const holding = async () =>
      JSON.stringify([
        await t.database.db.selectFrom('uploaded_files').selectAll().execute(),
        await t.database.db.selectFrom('jobs').selectAll().execute(),
      ]).includes(name);
    for (let i = 1; i < ids.length; i += 100)
      expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: ids.slice(i, i + 100) } })).status).toBe(
        200,
      );
    expect(await holding()).toBe(true);
    expect((await t.call('GET', `/memory/upload/${res.body.job.id}`, { endUser })).status).toBe(200);
    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: ids.slice(0, 1) } })).status).toBe(200);
    expect(await holding()).toBe(false);
    expectError(await t.call('GET', `/memory/upload/${res.body.job.id}`, { endUser }), 404, 'not_found');
    // Uploaded again, the file is ingested afresh and recorded again.
    const again = await upload(t, { name, content }, { endUser });
    expect(again.status, again.text).toBe(202);
    expect((await finished(again.body.job.id, endUser)).status).toBe('succeeded');
    expect(await holding()).toBe(true);
  });

  it('a new version of a file whose every memory it replaces keeps its row and the job that ingests it', async () => {
    const endUser = freshUser();
    const first = await upload(t, { name: 'notes.md', content: '# Plan\nThe first version of the plan.' }, { endUser });
    expect(first.status, first.text).toBe(201);
    const second = await upload(
      t,
      { name: 'notes.md', content: '# Plan\nThe second version of the plan.' },
      { endUser },
    );
    expect(second.status, second.text).toBe(201);
    expect(second.body.forgotten).toEqual(first.body.memories.map((m: { id: number }) => m.id));
    const rows = await t.database.db
      .selectFrom('uploaded_files')
      .select(['name', 'memory_ids'])
      .where('end_user_id', '=', endUser)
      .execute();
    expect(rows).toEqual([{ name: 'notes.md', memory_ids: expect.anything() }]);
    expect(decodeJson(rows[0]!.memory_ids)).toEqual(second.body.memories.map((m: { id: number }) => m.id));
  });

  it('splits Markdown along its headings and records provenance in each memory', async () => {
    const endUser = freshUser();
    const { res, audit, events } = await withEffects(t, () =>
      upload(t, { name: 'guide.md', content: GUIDE }, { endUser }),
    );
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      status: 'created',
      file: { name: 'guide.md', type: 'markdown', size: GUIDE.length, sha256: sha(GUIDE) },
      skipped: [],
      forgotten: [],
    });
    const memories = res.body.memories as Array<{ text: string; source: string; metadata: any; end_user_id: string }>;
    expect(memories.map((m) => [m.text, m.metadata.heading_path])).toEqual([
      ['Tomatoes need six hours of sun a day.', ['Garden guide']],
      ['Water deeply twice a week.\n\nMulch keeps the soil moist.', ['Garden guide', 'Watering']],
      ['Aphids leave sticky leaves.', ['Garden guide', 'Pests']],
    ]);
    memories.forEach((m, i) => {
      expect(m).toMatchObject({ source: 'upload', end_user_id: endUser });
      expect(m.metadata).toMatchObject({
        file: { name: 'guide.md', sha256: sha(GUIDE), type: 'markdown' },
        chunk_index: i,
        chunk_count: 3,
      });
    });
    // Offsets point into the extracted text: headings and paragraphs joined by blank lines.
    const extracted =
      'Garden guide\n\nTomatoes need six hours of sun a day.\n\nWatering\n\nWater deeply twice a week.\n\nMulch keeps the soil moist.\n\nPests\n\nAphids leave sticky leaves.';
    for (const m of memories) expect(extracted.slice(m.metadata.char_start, m.metadata.char_end)).toBe(m.text);
    expect(audit).toMatchObject([
      { action: 'memory.upload', target_type: 'file', target_id: sha(GUIDE), result: 'success' },
    ]);
    expect(events.map((e) => e.type)).toEqual(['memory.created', 'memory.created', 'memory.created']);
    // The memories are ordinary memories: readable and retrievable.
    const query = await t.call('POST', '/memory/query', { endUser, body: { query: 'aphids sticky' } });
    expect(query.body.memories[0].text).toBe('Aphids leave sticky leaves.');
  });

  it('reads a real PDF page by page and a real DOCX with its headings and table', async () => {
    const endUser = freshUser();
    const pdf = await makePdf(['The warranty covers two years.', 'Returns are accepted within thirty days.']);
    const res = await upload(t, { name: 'terms.pdf', content: pdf, type: 'application/pdf' }, { endUser });
    expect(res.status, res.text).toBe(201);
    expect(res.body.file).toMatchObject({ type: 'pdf', sha256: sha(pdf) });
    expect(res.body.memories.map((m: any) => [m.text, m.metadata.page])).toEqual([
      ['The warranty covers two years.', 1],
      ['Returns are accepted within thirty days.', 2],
    ]);

    const docx = await makeDocx();
    // Named without an extension: the content says what it is.
    const word = await upload(t, { name: 'policy', content: docx }, { endUser });
    expect(word.status, word.text).toBe(201);
    expect(word.body.file.type).toBe('docx');
    expect(word.body.memories.map((m: any) => [m.text, m.metadata.heading_path])).toEqual([
      ['Employees book trains for journeys under four hours.', ['Travel policy']],
      ['Hotel stays are capped at 150 euros a night.', ['Travel policy', 'Hotels']],
      ['City | Cap', ['Travel policy', 'Hotels']],
      ['Paris | 180', ['Travel policy', 'Hotels']],
    ]);
  });

  it('makes one memory per CSV row and per JSON record, keeps the readable part of HTML, and detects text formats by content', async () => {
    const endUser = freshUser();
    const csv = await upload(
      t,
      { name: 'people.csv', content: 'name,city\nAda,London\nGrace,New York\n' },
      { endUser },
    );
    expect(csv.status, csv.text).toBe(201);
    expect(csv.body.memories.map((m: any) => m.text)).toEqual([
      'name: Ada; city: London',
      'name: Grace; city: New York',
    ]);

    const json = await upload(
      t,
      {
        name: 'export',
        content: JSON.stringify({
          team: 'Core',
          members: [
            { name: 'Lin', role: 'lead' },
            { name: 'Sam', role: 'dev' },
          ],
        }),
      },
      { endUser },
    );
    expect(json.status, json.text).toBe(201);
    expect(json.body.file.type).toBe('json');
    expect(json.body.memories.map((m: any) => [m.text, m.metadata.heading_path])).toEqual([
      ['team: Core', []],
      ['name: Lin\nrole: lead', ['members']],
      ['name: Sam\nrole: dev', ['members']],
    ]);

    const article = 'The harbour festival returns in June with boats, music and food stalls along the quay. '.repeat(4);
    const html = `<!doctype html><html><head><title>Festival</title></head><body><nav><a href="/">Home</a> <a href="/about">About us</a></nav>
      <article><h1>Harbour festival</h1><p>${article}</p><p>Tickets cost ten euros and children go free.</p></article>
      <footer>Copyright 2026 Example Town</footer><script>var tracking = 1;</script></body></html>`;
    const page = await upload(t, { name: 'festival.html', content: html }, { endUser });
    expect(page.status, page.text).toBe(201);
    const texts = page.body.memories.map((m: any) => m.text).join('\n');
    expect(texts).toContain('Tickets cost ten euros');
    expect(texts).not.toMatch(/Copyright|About us|tracking/);
    expect(page.body.memories[0].metadata.file.title).toBe('Festival');

    const plain = await upload(t, { name: 'notes.txt', content: 'First paragraph.\n\nSecond paragraph.' }, { endUser });
    // Short paragraphs of one section are packed into one memory.
    expect(plain.body.memories.map((m: any) => m.text)).toEqual(['First paragraph.\n\nSecond paragraph.']);
  });

  it('splits long paragraphs at sentences within the documented size', async () => {
    const long = Array.from(
      { length: 60 },
      (_, i) => `Sentence ${i} is part of a very long paragraph about the history of the town. `,
    ).join('');
    const res = await upload(t, { name: 'long.txt', content: long }, { endUser: freshUser() });
    expect(res.status).toBe(201);
    const texts = res.body.memories.map((m: any) => m.text as string);
    expect(texts.length).toBeGreaterThan(1);
    for (const text of texts) {
      expect(text.length).toBeLessThanOrEqual(CHUNK.max);
      expect(text.endsWith('town.')).toBe(true);
    }
    expect(texts.join(' ')).toBe(long.trim());
  });

  it('skips the same file uploaded again, and replaces the memories of a new version', async () => {
    const endUser = freshUser();
    const first = await upload(t, { name: 'guide.md', content: GUIDE }, { endUser });
    const ids = first.body.memories.map((m: any) => m.id);
    const again = await expectNothingWritten(
      t,
      () => upload(t, { name: 'guide.md', content: GUIDE }, { endUser }),
      true,
    );
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ status: 'skipped', reason: 'duplicate_file', file: first.body.file, memory_ids: ids });

    const revised = GUIDE.replace('twice a week', 'every three days');
    const second = await upload(t, { name: 'guide.md', content: revised }, { endUser });
    expect(second.status, second.text).toBe(201);
    expect(second.body.forgotten).toEqual(ids);
    expect(second.body.memories.map((m: any) => m.text)).toContain(
      'Water deeply every three days.\n\nMulch keeps the soil moist.',
    );
    for (const id of ids) expect((await t.call('GET', `/memory/${id}`, { endUser })).status).toBe(404);
    const forgotten = await t.database.db
      .selectFrom('memories')
      .select(['text', 'metadata'])
      .where('id', 'in', ids)
      .execute();
    expect(forgotten.every((r) => r.text === '')).toBe(true);

    // Once the end user has forgotten some of a file's memories, the same file is read again.
    await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [second.body.memories[0].id] } });
    const reread = await upload(t, { name: 'guide.md', content: revised }, { endUser });
    expect(reread.status, reread.text).toBe(201);
    expect(reread.body.memories).toHaveLength(3);

    // Another end user's file of the same name is theirs alone.
    const other = await upload(t, { name: 'guide.md', content: GUIDE }, { endUser: freshUser() });
    expect(other.status).toBe(201);
  });

  it('refuses unsupported, corrupt, encrypted and oversized files without writing anything', async () => {
    const endUser = freshUser();
    const png = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
      Buffer.alloc(64, 1),
    ]);
    expectError(
      await expectNothingWritten(t, () => upload(t, { name: 'photo.png', content: png }, { endUser })),
      415,
      'unsupported_media_type',
      'file',
    );
    const pdf = await makePdf(['A page that will be cut short.']);
    const corrupt = await expectNothingWritten(t, () =>
      upload(t, { name: 'broken.pdf', content: pdf.subarray(0, 200) }, { endUser }),
    );
    expectError(corrupt, 400, 'validation_error', 'file');
    expect(corrupt.body.error.message).toMatch(/corrupt/);
    const encrypted = await makePdf(['Secret'], { password: 'pw' });
    const locked = await expectNothingWritten(t, () =>
      upload(t, { name: 'locked.pdf', content: encrypted }, { endUser }),
    );
    expectError(locked, 400, 'validation_error', 'file');
    expect(locked.body.error.message).toMatch(/encrypted/);
    expectError(
      await upload(t, { name: 'fake.docx', content: 'just text' }, { endUser }),
      400,
      'validation_error',
      'file',
    );
    expectError(await upload(t, { name: 'bad.json', content: '{"a": ' }, { endUser }), 400, 'validation_error', 'file');
    expectError(
      await upload(t, { name: 'empty.txt', content: '   \n\n ' }, { endUser }),
      400,
      'validation_error',
      'file',
    );
    expectError(
      await expectNothingWritten(t, () => upload(t, { name: 'huge.txt', content: 'x'.repeat(200_001) }, { endUser })),
      413,
      'payload_too_large',
    );
  });

  it('checks the form: multipart only, one part named file, no other fields', async () => {
    const endUser = freshUser();
    expectError(
      await t.call('POST', '/memory/upload', { endUser, body: { text: 'hello' } }),
      415,
      'unsupported_media_type',
    );
    expectError(await upload(t, [], { endUser, fields: { note: 'x' } }), 400, 'validation_error', 'note');
    expectError(await upload(t, [], { endUser }), 400, 'validation_error', 'file');
    expectError(
      await upload(t, { name: 'a.txt', content: 'Hello there.' }, { endUser, fields: { tags: 'x' } }),
      400,
      'validation_error',
      'tags',
    );
    expectError(
      await upload(
        t,
        [
          { name: 'a.txt', content: 'One.' },
          { name: 'b.txt', content: 'Two.' },
        ],
        { endUser },
      ),
      400,
      'validation_error',
      'file',
    );
    expectError(
      await upload(t, { name: 'a.txt', content: 'Hello there.', field: 'document' }, { endUser }),
      400,
      'validation_error',
      'document',
    );
    expectError(
      await upload(t, { name: 'a.txt', content: 'Hello there.' }, { endUser: null }),
      400,
      'validation_error',
      'X-End-User-ID',
    );
    expectError(
      await upload(t, { name: 'a.txt', content: 'Hello there.' }, { endUser, key: null }),
      401,
      'unauthenticated',
    );
    const reader = await t.newKey({ scopes: ['memories:read'] });
    expectError(
      await upload(t, { name: 'a.txt', content: 'Hello there.' }, { endUser, key: reader.key }),
      403,
      'forbidden',
    );
  });

  it('replays an upload with the same Idempotency-Key, and refuses the key for another file', async () => {
    const endUser = freshUser();
    const headers = { 'idempotency-key': `upload-${endUser}` };
    const first = await upload(t, { name: 'one.txt', content: 'The first file.' }, { endUser, headers });
    expect(first.status).toBe(201);
    const replay = await upload(t, { name: 'one.txt', content: 'The first file.' }, { endUser, headers });
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
    expectError(
      await upload(t, { name: 'one.txt', content: 'A different file.' }, { endUser, headers }),
      422,
      'idempotency_key_reused',
    );
  });

  it('ingests a large file in a background job whose progress the uploader can read', async () => {
    const endUser = freshUser();
    const rows = Array.from({ length: 2_000 }, (_, i) => `item-${i},Warehouse ${i % 7},${i * 3}`).join('\n');
    const content = `sku,location,stock\n${rows}\n`;
    expect(content.length).toBeGreaterThan(50_000);
    const res = await upload(t, { name: 'stock.csv', content }, { endUser });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({
      status: 'queued',
      file: { name: 'stock.csv', type: 'csv', sha256: sha(content) },
      job: { id: expect.any(Number), kind: 'ingest.upload' },
    });
    const job = await finished(res.body.job.id, endUser);
    expect(job).toMatchObject({
      status: 'succeeded',
      progress: 1,
      result: { status: 'created', file: { sha256: sha(content) } },
    });
    expect(job.result.memory_ids).toHaveLength(2_000);
    const sample = await t.call('GET', `/memory/${job.result.memory_ids[5]}`, { endUser });
    expect(sample.body.text).toBe('sku: item-5; location: Warehouse 5; stock: 15');
    // The bytes waited in the blob store only until the job was done.
    expect(await t.database.db.selectFrom('blobs').selectAll().execute()).toEqual([]);
    expectError(await t.call('GET', `/memory/upload/${res.body.job.id}`, { endUser: freshUser() }), 404, 'not_found');
    const again = await upload(t, { name: 'stock.csv', content }, { endUser });
    expect(again.body).toMatchObject({ status: 'skipped', reason: 'duplicate_file' });
  });

  it('fails the job of a large corrupt file with the reason, writing no memory', async () => {
    const endUser = freshUser();
    const content = `{"items": [${'"x",'.repeat(20_000)}`;
    const res = await upload(t, { name: 'big.json', content }, { endUser });
    expect(res.status).toBe(202);
    const job = await finished(res.body.job.id, endUser);
    expect(job).toMatchObject({ status: 'failed', error: expect.stringMatching(/malformed/) });
    const count = await t.database.db
      .selectFrom('memories')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('end_user_id', '=', endUser)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(0);
  });
});
