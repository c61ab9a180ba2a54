import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryIndex, snapshotArrays, snapshotCuts } from '../../engine/index.js';
import { fromPlanes, planesOf, type Planes, readPlanesTable, toPlanes } from './byte-planes.js';
import { compressed, compressedPieces, decompressedPiece, type StoredPiece } from './snapshots.js';

const TOPICS = ['pottery class', 'adoption agency', 'guitar lessons', 'marathon training', 'trip to Tokyo'];
const T0 = 1_700_000_000_000;

function index(docs: number): MemoryIndex {
  const ix = new MemoryIndex({ embedder: null });
  for (let i = 1; i <= docs; i++)
    ix.upsert({
      id: i,
      text: `${TOPICS[i % TOPICS.length]} on day ${i} with ${TOPICS[(i * 7) % TOPICS.length]}`,
      sessionId: `s${i >> 4}`,
      createdAt: T0 + i * 1000,
      importance: (i % 10) / 10,
      feedback: 0,
    });
  return ix;
}
const storedBytes = (pieces: StoredPiece[]) => pieces.reduce((sum, p) => sum + p.data.length, 0);

describe('snapshot arrays stored as byte planes', () => {
  it('restores a snapshot byte for byte, in fewer stored bytes, however it is cut', async () => {
    const original = index(3000);
    const bytes = original.snapshot();
    const planes = await planesOf(bytes, compressed);
    // Postings' slots (ascending term by term) delta-coded, ids (8 bytes) as planes; arrays planes would not shrink
    // enough (term counts, docs' term ids) as they are.
    expect(planes.some((p) => p.delta && p.width === 4)).toBe(true);
    expect(planes.some((p) => p.width === 8)).toBe(true);
    expect(planes.some((p) => p.width === 2)).toBe(false);
    const arrays = snapshotArrays(bytes);
    for (const p of planes) expect(arrays.some((a) => a.at === p.at)).toBe(true);
    expect(planes.length).toBeLessThan(arrays.filter((a) => a.length > 0 && a.kind !== 'u8' && a.kind !== 'i8').length);

    for (const cuts of [[], snapshotCuts(bytes, 4096), snapshotCuts(bytes, 40_000)]) {
      const pieces = await compressedPieces(bytes, cuts, planes);
      const decompressed = await Promise.all(pieces.map(decompressedPiece));
      expect(Buffer.concat(decompressed).equals(Buffer.from(bytes))).toBe(true);
      expect(storedBytes(pieces)).toBeLessThan(storedBytes(await compressedPieces(bytes, cuts)));
      const restored = MemoryIndex.restore(decompressed, { embedder: null });
      for (const q of ['pottery class', 'Tokyo trip on day 12', 'guitar']) {
        const options = { k: 10, now: T0 + 5_000_000, explain: true };
        expect(restored.search(q, options)).toEqual(original.search(q, options));
      }
      expect(Buffer.from(restored.snapshot()).equals(Buffer.from(bytes))).toBe(true);
    }
  });

  it('turns any bytes to planes and back: every width, differences that wrap, runs not 4-byte aligned', () => {
    const piece = new Uint8Array(8 + 4000 + 4000 + 4000 + 2002 + 3);
    piece.set(randomBytes(piece.length));
    const runs: Planes[] = [
      { at: 8, bytes: 4000, width: 4, delta: true },
      { at: 4008, bytes: 4000, width: 4, delta: false },
      { at: 8008, bytes: 4000, width: 8, delta: false },
      { at: 12_009, bytes: 2002, width: 2, delta: false },
    ];
    // A Buffer, as a decompressed piece is (its slice is no copy).
    const planed = Buffer.from(toPlanes(piece, runs));
    expect(Buffer.from(planed).equals(Buffer.from(piece))).toBe(false);
    // Bytes outside the runs as they were; a run of int32s as its low bytes first.
    expect(Buffer.from(planed.subarray(0, 8)).equals(Buffer.from(piece.subarray(0, 8)))).toBe(true);
    expect(planed[4008 + 1]).toBe(piece[4008 + 4]);
    fromPlanes(planed, runs);
    expect(Buffer.from(planed).equals(Buffer.from(piece))).toBe(true);
  });

  it('refuses a piece whose table does not fit it', async () => {
    const bytes = index(200).snapshot();
    const [stored] = await compressedPieces(bytes, [], await planesOf(bytes, compressed));
    const run = (i: number) => 4 + i * 12;
    expect(readPlanesTable(stored!.data, stored!.length).planes.length).toBeGreaterThan(0);
    const past = Buffer.from(stored!.data);
    past.writeUInt32LE(bytes.length, run(0));
    await expect(decompressedPiece({ ...stored!, data: past })).rejects.toThrow('does not fit');
    const width = Buffer.from(stored!.data);
    width.writeUInt32LE(3, run(0) + 8);
    await expect(decompressedPiece({ ...stored!, data: width })).rejects.toThrow('does not fit');
    await expect(decompressedPiece({ ...stored!, data: stored!.data.subarray(0, 2) })).rejects.toThrow('table');
  });
});
