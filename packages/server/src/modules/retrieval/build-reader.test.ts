import { cpus } from 'node:os';
import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { freshUser, pageValues } from '../../testing/retrieval.js';
import { TermNumbering, TEXT_FLAGS } from '../../engine/index.js';
import { changesSince, type IndexedMemory } from '../memories/index.js';
import { idleCores, ownerBuildPages, type BuildPage } from './build-reader.js';
import { prepareInto, preparedPage, prepareRow, rowAt, type PreparedRow } from './build-rows.js';
import { EmbeddingStore } from './embeddings.js';
import { IndexCache } from './index-cache.js';

/** Texts with what a row's preparing reads: terms shared by many, times named, questions, non-ASCII, `_`. */
const TEXTS = [
  'Caroline went to the LGBTQ support group yesterday',
  'Melanie painted a lake at sunrise last week?',
  'We took the kids camping in June 2023',
  'Café au lait with Zoë on Tuesday, ¿sí?',
  'my_thing next_week: the pottery class',
  'What did the adoption agency say? [image: a letter]',
  '東京への旅行は来月です',
  'I ran the marathon 3 days ago',
];

/** The rows of pages as taken, in order, and their prepareRow as the pages' columns give it (each numbering's terms). */
function pagesRead(pages: readonly BuildPage[], endUserId: string): { rows: IndexedMemory[]; prepared: PreparedRow[] } {
  const numbered = { reader: [] as string[], here: [] as string[] };
  const [rows, prepared] = [[] as IndexedMemory[], [] as PreparedRow[]];
  for (const { page, byReader } of pages) {
    const terms = byReader ? numbered.reader : numbered.here;
    expect([page.prepared, page.termsFrom]).toEqual([true, terms.length]);
    terms.push(...page.terms);
    for (let i = 0, from = 0; i < page.ids.length; i++) {
      rows.push(rowAt(page, i, endUserId));
      const [to, flags, times] = [page.termEnds[i]!, page.flags[i]!, page.times.subarray(4 * i, 4 * i + 4)];
      prepared.push({
        scan: {
          terms: Array.from(page.termIndexes.subarray(from, (from = to)), (no) => terms[no]!),
          namesTime: (flags & TEXT_FLAGS.namesTime) !== 0,
          firstPerson: (flags & TEXT_FLAGS.firstPerson) !== 0,
          mayNameTime: (flags & TEXT_FLAGS.mayNameTime) !== 0,
          endsAsking: (flags & TEXT_FLAGS.endsAsking) !== 0,
        },
        createdAt: times[0]!,
        updatedAt: times[1]!,
        event: Number.isNaN(times[2]!) ? null : { from: times[2]!, to: times[3]! },
      });
    }
  }
  return { rows, prepared };
}

forEachDialect('a cold build read on the build reader', (dialect) => {
  const t = useTestApp(dialect);

  it('builds the same index and filter metadata as a build read on its own thread', async () => {
    const endUser = freshUser();
    const items = Array.from({ length: 50 }, (_, i) => ({
      text: `${TEXTS[i % TEXTS.length]} (note ${i})`,
      ...(i % 5 === 0 ? {} : { session_id: `s${Math.floor(i / 7)}` }),
      ...(i % 3 === 0 ? { tags: ['hobby', `t${i % 2}`] } : {}),
      ...(i % 4 === 0 ? { metadata: { mood: i % 8 === 0 ? 'excited' : 'calm', n: i } } : {}),
      importance: (i % 10) / 10,
    }));
    const added = await t.call('POST', '/memory/bulk-add', { endUser, body: items });
    expect(added.status, added.text).toBe(200);
    const ids = (added.body as { results: Array<{ memory: { id: number } }> }).results.map((r) => r.memory.id);
    const forgotten = await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [ids[7], ids[30]] } });
    expect(forgotten.status, forgotten.text).toBe(200);

    const owner = { projectId: t.projectId, tenantId: '', endUserId: endUser };
    // Pages of 7: the reader sends pages ahead, some prepared there and some not (build-reader-worker.ts).
    const read = async (readerMinRows: number, rowsRead = true) => {
      const reader = { minRows: readerMinRows, idleCores: 0 };
      const { count, pages, onReader } = await ownerBuildPages(t.database, owner, 7, reader, rowsRead);
      const taken: BuildPage[] = [];
      for await (const page of pages) {
        taken.push(page);
        // A slow builder: the first page is read here while the reader's thread starts, which then sends the next.
        await new Promise((resolve) => setTimeout(resolve, taken.length === 1 ? 2000 : 20));
      }
      return {
        count,
        onReader,
        // Whether each page came with its texts, and whether the reader prepared it (when its thread started in time).
        texts: taken.map(({ page, byReader }) => [page.texts.length > 0, byReader]),
        ...pagesRead(taken, endUser),
      };
    };
    const [fromReader, fromHere] = [await read(1), await read(Infinity)];
    expect([fromReader.onReader, fromHere.onReader]).toEqual([true, false]);
    expect(fromReader.count).toBe(50);
    expect(fromReader.rows).toEqual(fromHere.rows);
    expect(fromReader.rows).toEqual(await changesSince(t.database.db, owner, 0));
    expect(fromReader.prepared).toEqual(fromHere.rows.map(prepareRow));
    // A build that reads no rows back: the pages prepared on the reader come without their texts, the same columns.
    const lean = await read(1, false);
    expect(fromReader.texts.every(([texts]) => texts)).toBe(true);
    expect(lean.texts.every(([texts, byReader]) => texts === !byReader)).toBe(true);
    expect(lean.prepared).toEqual(fromReader.prepared);
    const built = async (readerMinRows: number) => {
      const cache = new IndexCache(t.database, new EmbeddingStore(null), 2 ** 30, 100_000);
      cache.buildReader = { minRows: readerMinRows, idleCores: 0 };
      return cache.forOwner(owner);
    };
    // Pages of 2,000: the reader's path from 1 row, its own thread's below Infinity.
    const [onReader, onItsOwn] = [await built(1), await built(Infinity)];
    expect(onReader.index.size).toBe(48);
    expect([...onReader.meta.entries()]).toEqual([...onItsOwn.meta.entries()]);
    const now = Date.parse('2026-12-01T00:00:00Z');
    for (const query of ['support group', 'when did Melanie paint', 'camping June 2023', 'café', 'marathon', 'hobby'])
      expect(onReader.index.search(query, { k: 20, now, explain: true })).toEqual(
        onItsOwn.index.search(query, { k: 20, now, explain: true }),
      );
  }, 20_000); // (a slow builder waits 2 s on its first page; two builds and two reads on a loaded machine)

  it('reads on the build reader only while enough cores are idle', async () => {
    const endUser = freshUser();
    const body = [{ text: 'one' }, { text: 'two' }];
    expect((await t.call('POST', '/memory/bulk-add', { endUser, body })).status).toBe(200);
    const owner = { projectId: t.projectId, tenantId: '', endUserId: endUser };
    // More idle cores than the machine has: never.
    const busy = await ownerBuildPages(t.database, owner, 7, { minRows: 1, idleCores: cpus().length + 1 });
    const rows = [];
    for await (const { page } of busy.pages) rows.push(...page.ids);
    expect([busy.onReader, busy.count, rows.length]).toEqual([false, 2, 2]);
    // Two cores, one of them idle over the interval (ticks: user, nice, sys, idle, irq).
    const times = (user: number, idle: number) => ({
      model: '',
      speed: 0,
      times: { user, nice: 0, sys: 0, idle, irq: 0 },
    });
    expect(idleCores([times(0, 0), times(0, 0)], [times(100, 0), times(0, 100)])).toBe(1);
    expect(idleCores([times(0, 0), times(0, 0)], [times(100, 0), times(75, 25)])).toBe(0.25);
  });

  it('hands over a page as it was read, prepared on either side', async () => {
    const endUser = freshUser();
    const body = TEXTS.map((text, i) => ({ text, ...(i % 2 ? { tags: ['x'], metadata: { k: [i] } } : {}) }));
    expect((await t.call('POST', '/memory/bulk-add', { endUser, body })).status).toBe(200);
    const rows = await changesSince(t.database.db, { projectId: t.projectId, tenantId: '', endUserId: endUser }, 0);
    // Pages prepared on the reader number a term once a build: the second page's terms are all the first's. A page
    // sent unprepared is prepared by the builder, in its own numbering.
    const [readerNumbers, builderNumbers] = [new TermNumbering(), new TermNumbering()];
    const taken: BuildPage[] = [];
    for (const numbering of [readerNumbers, undefined, readerNumbers, undefined]) {
      const page = structuredClone(preparedPage(pageValues(rows), numbering));
      expect(page.prepared).toBe(numbering !== undefined);
      if (!page.prepared) prepareInto(page, builderNumbers);
      taken.push({ page, byReader: numbering !== undefined });
    }
    expect(taken.map(({ page }) => page.terms.length > 0)).toEqual([true, true, false, false]);
    const read = pagesRead(taken, endUser);
    expect(read.rows).toEqual([...rows, ...rows, ...rows, ...rows]);
    expect(read.prepared).toEqual([...rows, ...rows, ...rows, ...rows].map(prepareRow));
  });
});
