import { describe, expect, it } from 'vitest';
import { TermNumbering } from '../../engine/index.js';
import { pageValues } from '../../testing/retrieval.js';
import type { IndexedMemory } from '../memories/index.js';
import { preparedPage, prepareRow } from './build-rows.js';
import { DocMetas, rowMeta, type DocMeta } from './doc-metas.js';

/** A seeded generator (the steps are the same every run). */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

const docMeta = (id: number, version: number): DocMeta => ({
  tags: id % 3 === 0 ? ['hobby', `v${version % 2}`] : [],
  source: id % 5 === 0 ? 'chat' : null,
  createdAt: 1_700_000_000_000 + id,
  metadata: id % 4 === 0 ? { day: id % 7, version } : {},
  isSummary: id % 11 === 0,
  sessionId: id % 13 === 0 ? null : `s${id >> 3}`,
  importance: (id % 10) / 10,
  updatedAt: 1_700_000_000_000 + version,
  ...(id % 9 === 0 ? { event: { from: id, to: id + version + 1 } } : {}),
});

describe('DocMetas, the filter metadata by columns', () => {
  it('reads as a Map of the same docs does, in the same order, through sets, changes, deletions and compaction', () => {
    const rand = seeded(51);
    const [metas, map] = [new DocMetas(), new Map<number, DocMeta>()];
    for (let step = 0; step < 20_000; step++) {
      const id = 1 + Math.floor(rand() * 2_000);
      if (rand() < 0.4) expect(metas.delete(id)).toBe(map.delete(id));
      else {
        metas.set(id, docMeta(id, step));
        map.set(id, docMeta(id, step));
      }
      if (step % 2_500 === 0) expect([...metas]).toEqual([...map]);
    }
    expect(metas.size).toBe(map.size);
    expect([...metas.entries()]).toEqual([...map.entries()]);
    expect([...metas.keys()]).toEqual([...map.keys()]);
    for (const id of [0, 1, 9, 12, 1999, 2000]) {
      expect(metas.has(id)).toBe(map.has(id));
      expect(metas.get(id)).toEqual(map.get(id));
    }
  });

  it('holds a value once however many docs have it, and lets it go with the last of them', () => {
    const metas = new DocMetas();
    const empty = metas.bytes;
    const shared = { tags: ['work'], metadata: { team: 'ops', note: 'x'.repeat(500) } };
    for (let id = 1; id <= 1_000; id++) metas.set(id, { ...docMeta(id, 0), ...shared, sessionId: 'one session' });
    const held = metas.bytes;
    // One copy of the long note: a doc's share is its row (and its place in the map), not the note.
    expect(held - empty).toBeLessThan(1_000 * 150);
    expect(metas.get(500)!.metadata).toBe(metas.get(7)!.metadata);
    // Deleted, the docs leave their rows' room behind and no value: as if they had held none.
    const again = new DocMetas();
    for (let id = 1; id <= 1_000; id++) again.set(id, docMeta(id, 0));
    for (let id = 1; id <= 1_000; id++) again.delete(id);
    const columnsOnly = new DocMetas();
    for (let id = 1; id <= 1_000; id++)
      columnsOnly.set(id, { ...docMeta(id, 0), tags: [], metadata: {}, source: null, sessionId: null });
    for (let id = 1; id <= 1_000; id++) columnsOnly.delete(id);
    expect(again.bytes).toBe(columnsOnly.bytes);
  });

  it("holds a build from scratch's pages (addBuilt) as each row set, value by value", () => {
    const rows: IndexedMemory[] = Array.from({ length: 1_000 }, (_, i) => ({
      id: 3 + 2 * i,
      text: i % 7 === 0 ? 'we met 3 days ago' : `note ${i}`,
      tags: i % 3 === 0 ? ['hobby', `t${i % 2}`] : [],
      source: i % 5 === 0 ? 'chat' : null,
      importance: (i % 10) / 10,
      metadata: i % 4 === 0 ? { day: i % 7 } : {},
      session_id: i % 13 === 0 ? null : `s${i >> 4}`,
      speaker: i % 6 === 0 ? 'chat' : null,
      is_summary: i % 11 === 0,
      created_at: new Date(1_700_000_000_000 + (i >> 2) * 1000).toISOString(),
      updated_at: new Date(1_700_000_000_000 + i * 1000).toISOString(),
      end_user_id: 'u',
      deleted: false,
      seq: i + 1,
      superseded_by: null,
    }));
    const [set, built] = [new DocMetas(), new DocMetas()];
    // (as a build reserves its rows)
    for (const metas of [set, built]) metas.reserve(rows.length);
    for (const row of rows) set.set(row.id, rowMeta(row, prepareRow(row)));
    const termNumbers = new TermNumbering();
    for (let at = 0; at < rows.length; at += 300)
      built.addBuilt(preparedPage(pageValues(rows.slice(at, at + 300)), termNumbers));
    expect([...built.entries()]).toEqual([...set.entries()]);
    // Its rows by id made when first asked for.
    expect(built.bytes).toBeLessThan(set.bytes);
    expect(built.get(rows[500]!.id)).toEqual(set.get(rows[500]!.id));
    expect(built.bytes).toBe(set.bytes);
    expect(() => built.addBuilt(preparedPage(pageValues(rows.slice(0, 1)), termNumbers))).toThrow(/out of order/);
    // Every value let go with the last of its docs.
    for (const metas of [set, built]) for (const row of rows) metas.delete(row.id);
    expect(built.bytes).toBe(set.bytes);
  });
});
