import { describe, expect, it } from 'vitest';
import { type BuiltDocs, TEXT_FLAGS } from './built-docs.js';
import { MemoryIndex } from './memory-index.js';
import { scanText } from './text.js';
import type { EngineDoc } from './types.js';

const T0 = Date.UTC(2023, 4, 8);
const WORDS = ['painted', 'the', 'lake', 'sunrise', 'hiking', 'kids', 'I', 'yesterday', 'June', 'camping', 'café'];

/** Docs with what upsert reads: terms repeated and none, sessions, speakers and tags, flags, vectors on some. */
const docs: Array<EngineDoc & { vector?: Float32Array }> = Array.from({ length: 300 }, (_, i) => ({
  id: 5 + 3 * i,
  text:
    i % 29 === 0
      ? i % 2
        ? ''
        : 'the a an'
      : `${Array.from({ length: 1 + (i % 9) }, (_, j) => WORDS[(i * 7 + j * j) % WORDS.length]).join(' ')}${i % 4 ? '' : '?'}`,
  sessionId: i % 6 === 0 ? null : `s${i % 13}`,
  createdAt: T0 + i * 60_000 * (i % 5 === 0 ? NaN : 1),
  importance: (i % 10) / 10,
  feedback: (i % 7) - 3,
  speaker: i % 3 === 0 ? null : `Speaker ${i % 2}`,
  tags: i % 4 === 0 ? [] : ['hobby', `t${i % 3}`],
  ...(i % 5 === 1 ? { vector: Float32Array.from({ length: 8 }, (_, j) => Math.sin(i + j)) } : {}),
}));

/** A page of docs as a build from scratch gives it (what the server's prepared pages carry). */
function builtPage(index: MemoryIndex, page: typeof docs): BuiltDocs {
  const scans = page.map((d) => scanText(d.text));
  const terms = scans.flatMap((s) => s.terms.map((term) => index.textTermId(term)));
  let end = 0;
  const sessionNames = [...new Set(page.flatMap((d) => (d.sessionId === null ? [] : [d.sessionId])))];
  const speakerTags = page.map((d) => [d.speaker ?? '', ...(d.tags ?? [])].join(' '));
  return {
    ids: Float64Array.from(page, (d) => d.id),
    texts: page.map((d) => d.text),
    createdAt: Float64Array.from(page, (d) => d.createdAt),
    importance: Float64Array.from(page, (d) => d.importance),
    feedback: Float64Array.from(page, (d) => d.feedback),
    flags: Uint8Array.from(
      scans,
      (s) =>
        (s.namesTime ? TEXT_FLAGS.namesTime : 0) |
        (s.firstPerson ? TEXT_FLAGS.firstPerson : 0) |
        (s.endsAsking ? TEXT_FLAGS.endsAsking : 0),
    ),
    terms: Int32Array.from(terms),
    termEnds: Int32Array.from(scans, (s) => (end += s.terms.length)),
    sessions: Int32Array.from(page, (d) => (d.sessionId === null ? -1 : sessionNames.indexOf(d.sessionId))),
    sessionNames,
    speakerTagsOf: Int32Array.from(speakerTags, (_, i) => i),
    speakerTags,
    vectors: new Map(page.flatMap((d) => (d.vector ? [[d.id, d.vector] as const] : []))),
  };
}

describe('a build from scratch (MemoryIndex.addBuilt)', () => {
  it('makes the index that each doc upserted makes, bit for bit', () => {
    const upserted = new MemoryIndex();
    upserted.reserve(docs.length);
    for (const d of docs) upserted.upsert(d, d.vector);
    upserted.fit();
    const built = new MemoryIndex();
    built.reserve(docs.length);
    for (let at = 0; at < docs.length; at += 64) built.addBuilt(builtPage(built, docs.slice(at, at + 64)));
    built.fit();
    expect(built.snapshot()).toEqual(upserted.snapshot());
    expect(built.approxBytes()).toBe(upserted.approxBytes());
    for (const query of ['painted lake', 'hiking with the kids', 'camping in June', 'hobby', 'Speaker', 'café sunrise'])
      expect(built.search(query, { k: 20, now: T0, explain: true })).toEqual(
        upserted.search(query, { k: 20, now: T0, explain: true }),
      );
    // Then changed as any index.
    for (const index of [built, upserted]) {
      index.upsert({ ...docs[10]!, text: 'painted the lake again' });
      index.remove(docs[20]!.id);
    }
    expect(built.snapshot()).toEqual(upserted.snapshot());
  });

  it('refuses docs out of order, and an index in use', () => {
    const index = new MemoryIndex();
    expect(() => index.addBuilt(builtPage(index, [docs[3]!, docs[2]!]))).toThrow(/out of order/);
    const used = new MemoryIndex();
    used.upsert(docs[0]!);
    expect(() => used.addBuilt(builtPage(used, [docs[1]!]))).toThrow(/in use/);
    const built = new MemoryIndex();
    built.addBuilt(builtPage(built, [docs[1]!]));
    built.fit();
    expect(() => built.addBuilt(builtPage(built, [docs[2]!]))).toThrow(/in use/);
  });
});
