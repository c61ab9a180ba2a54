import { describe, expect, it } from 'vitest';
import { DocMetas, type DocMeta } from './doc-metas.js';

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
});
