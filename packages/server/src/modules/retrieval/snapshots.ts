import { promisify } from 'node:util';
import { constants, zstdCompress, zstdDecompress } from 'node:zlib';
import { sql } from 'kysely';
import {
  MemoryIndex,
  type MemoryIndexOptions,
  runInSlices,
  SearchBuffers,
  SLICE_MS,
  SNAPSHOT_FORMAT,
  snapshotCuts,
  SnapshotReader,
  SnapshotWriter,
  type Steps,
} from '../../engine/index.js';
import { nowIso, type Database, type Executor } from '../../store/database.js';
import { forgottenSince, ownersOfMemories, type Owner } from '../memories/index.js';
import {
  fromPlanes,
  planesOf,
  planesTable,
  planesWithin,
  readPlanesTable,
  toPlanes,
  type Planes,
} from './byte-planes.js';
import { DocMetas, type DocMeta } from './doc-metas.js';

export type { DocMeta };

/**
 * Stored indexes of large end users (this module owns index_snapshots): building an index reads
 * and analyses every memory (seconds at 100,000), restoring one copies arrays. A snapshot is the
 * index and its filter metadata as of a revision; whoever loads it catches up from the changes
 * after that revision, so a stale snapshot is never wrong, only slower. It is a copy of memory
 * text (as terms), so forgetting any of the end user's memories deletes it in the same transaction
 * (eraseIndexSnapshots), and a snapshot is stored only if nothing was forgotten since its revision
 * (forgottenSince, under the lock that orders it with forgetting).
 */

/**
 * Both parts are stored compressed (zstd level 1, in the thread pool): a snapshot of 300,000 memories
 * is 18.8 MB of its 65, which SQLite reads page by page and PostgreSQL has to detoast and send. Each
 * part is compressed in pieces (the index in pieces of at least ZLIB_CHUNK bytes, cut where an array
 * of the snapshot begins, `snapshotCuts`; the filter metadata as one), each stored as a row of
 * index_snapshot_pieces with its length uncompressed. A load reads them one by one while the thread
 * pool decompresses the ones read before (the read and the decompression overlap, and no buffer of
 * the whole is made), each into a buffer of its own that the restored index keeps as it is: the
 * pieces are never joined (65 MB of fresh memory and a copy less). The stored format is the engine's
 * with this encoding (+1: one deflate stream; +2: pieces; +3: pieces cut at arrays, with their
 * lengths; +5: the filter metadata too; +6: zstd, not deflate, bench/README.md "The first query after
 * a restart"; +7: the pieces as rows, "The first query after a restart, session 18"; +8: arrays as byte
 * planes, byte-planes.ts, "The first query after a restart, session 20"). A snapshot of an earlier format is not
 * read: the owner's index is built from rows, and the next store replaces it.
 */
const STORED_FORMAT = SNAPSHOT_FORMAT * 100 + 8;
// Large chunks: the thread pool hands each chunk back to the event loop (16 KB by default: 1,200 hops for 19 MB).
const ZLIB_CHUNK = 4 << 20;
const ZSTD_LEVEL = { [constants.ZSTD_c_compressionLevel]: 1 };
export const compressed = (bytes: Uint8Array) =>
  promisify(zstdCompress)(bytes, { params: ZSTD_LEVEL, chunkSize: ZLIB_CHUNK });

/** A piece as stored: its table of byte planes (byte-planes.ts) and its bytes compressed, and its length uncompressed. */
export interface StoredPiece {
  length: number;
  data: Buffer;
}

/**
 * Bytes compressed in pieces, cut at `cuts` (ascending offsets where the second and later pieces
 * begin; exported for its test), the runs `planes` names stored as byte planes. One piece at a time:
 * storing is background work, and pieces compressed side by side would take both cores from the
 * event loop (its own work ran 1.5-3 times slower meanwhile).
 */
export async function compressedPieces(
  bytes: Uint8Array,
  cuts: readonly number[],
  planes: readonly Planes[] = [],
): Promise<StoredPiece[]> {
  const bounds = [0, ...cuts.filter((at) => at > 0 && at < bytes.length), bytes.length];
  const pieces: StoredPiece[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const piece = bytes.subarray(bounds[i]!, bounds[i + 1]!);
    const within = planesWithin(planes, bounds[i]!, bounds[i + 1]!);
    const [table, data] = [planesTable(within), await compressed(toPlanes(piece, within))];
    // Buffer.alloc, not Buffer.concat: a small piece would be copied into the thread's shared Buffer pool.
    const stored = Buffer.alloc(table.length + data.length);
    table.copy(stored);
    data.copy(stored, table.length);
    pieces.push({ length: piece.length, data: stored });
  }
  return pieces;
}

/**
 * A stored piece decompressed into a buffer of its own a byte longer than it (one chunk, which zlib
 * hands back as it is and the restored index keeps; engine/snapshot.ts PIECE_SLACK: one of exactly
 * its length would make zlib allocate a second to look for more output).
 */
export async function decompressedPiece({ length, data }: StoredPiece): Promise<Buffer> {
  const { planes, rest } = readPlanesTable(data, length);
  const piece = await promisify(zstdDecompress)(rest, { chunkSize: Math.max(64, length + 1) });
  if (piece.length !== length) throw new Error('an index snapshot piece is not of its stated length');
  fromPlanes(piece, planes);
  return piece;
}

/** What taking a snapshot reads of the filter metadata (a DocMetas, or a Map of the same). */
export type MetaSource = Pick<ReadonlyMap<number, DocMeta>, 'size' | 'get' | 'keys'>;

export interface Snapshot {
  index: MemoryIndex;
  meta: DocMetas;
  revision: number;
}

/** Docs of filter metadata encoded between two steps (a few hundred microseconds). */
const META_STEP = 256;

/**
 * Filter metadata, column by column (engine/snapshot.ts's layout): numbers in typed arrays, and
 * strings, tag lists and metadata objects as indexes into tables of their distinct values, so a
 * load parses each distinct value once (most docs share a source, a session, no tags, `{}`).
 * `ids` in the map's order; `metaOf` each one's metadata (as the map held it when the ids were read).
 */
function* encodeMetaSteps(ids: Float64Array, metaOf: (id: number) => DocMeta): Steps<Uint8Array> {
  const n = ids.length;
  const createdAt = new Float64Array(n);
  const updatedAt = new Float64Array(n);
  const importance = new Float64Array(n);
  const eventFrom = new Float64Array(n).fill(NaN);
  const eventTo = new Float64Array(n).fill(NaN);
  const isSummary = new Uint8Array(n);
  const [strings, tags, metadata] = [new Interned(), new Interned(), new Interned()];
  const [source, session, tagList, metadataOf] = [
    new Int32Array(n),
    new Int32Array(n),
    new Int32Array(n),
    new Int32Array(n),
  ];
  for (let i = 0; i < n; i++) {
    if (i > 0 && i % META_STEP === 0) yield;
    const m = metaOf(ids[i]!);
    createdAt[i] = m.createdAt;
    updatedAt[i] = m.updatedAt;
    importance[i] = m.importance;
    if (m.event) [eventFrom[i], eventTo[i]] = [m.event.from, m.event.to];
    isSummary[i] = m.isSummary ? 1 : 0;
    source[i] = m.source === null ? -1 : strings.of(m.source);
    session[i] = m.sessionId === null ? -1 : strings.of(m.sessionId);
    tagList[i] = tags.of(JSON.stringify(m.tags));
    metadataOf[i] = metadata.of(JSON.stringify(m.metadata));
  }
  return yield* new SnapshotWriter()
    .value(strings.values)
    .value(tags.values)
    .value(metadata.values)
    .array(ids)
    .array(createdAt)
    .array(eventFrom)
    .array(eventTo)
    .array(isSummary)
    .array(source)
    .array(session)
    .array(tagList)
    .array(metadataOf)
    .array(updatedAt)
    .array(importance)
    .finishSteps();
}

/** A taken index and its filter metadata, encoded (storeSnapshot compresses and stores them). */
export interface Taken {
  index: Uint8Array;
  meta: Uint8Array;
}

/**
 * Takes an index and its filter metadata as they are now, for storing, a slice at a time
 * (runInSlices: the event loop runs between slices, and the owner's queries and refreshes with
 * it): the bytes a synchronous snapshot now would be, however both change meanwhile. The index
 * keeps what its changes change for the snapshot (MemoryIndex.snapshotSteps); whoever changes
 * `meta` before `taken` settles calls `metaChanging` first.
 */
export class SnapshotTaking {
  readonly taken: Promise<Taken>;
  /** The docs' ids in the map's order, read a step at a time (by its iterator until done). */
  private ids = new Float64Array(0);
  private idsRead = 0;
  private keys: Iterator<number> | null = null;
  /** Metadata of docs changed since the taking began, as it was then (undefined: none). */
  private readonly kept = new Map<number, DocMeta | undefined>();

  constructor(
    index: MemoryIndex,
    private readonly meta: MetaSource,
    sliceMs = SLICE_MS,
  ) {
    this.taken = runInSlices(this.steps(index), sliceMs);
  }

  /** Before `meta` of this doc changes (set or deleted). */
  metaChanging(id: number): void {
    // (Reading a map that changes would be wrong: done now, at once.)
    if (this.keys) this.readIds(Infinity);
    if (!this.kept.has(id)) this.kept.set(id, this.meta.get(id));
  }

  private readIds(most: number): void {
    let i = this.idsRead;
    for (const end = Math.min(this.ids.length, i + most); i < end; i++) this.ids[i] = this.keys!.next().value!;
    this.idsRead = i;
    if (i === this.ids.length) this.keys = null;
  }

  private *steps(index: MemoryIndex): Steps<Taken> {
    // Both as they are now (the first step runs in the constructor): the index's first step takes
    // what it needs of it, and the docs' ids are read from here on.
    const indexSteps = index.snapshotSteps();
    try {
      indexSteps.next();
      this.ids = new Float64Array(this.meta.size);
      this.keys = this.meta.keys();
      yield;
      const indexBytes = yield* indexSteps;
      while (this.keys) {
        this.readIds(META_STEP * 32);
        yield;
      }
      const metaOf = (id: number) => (this.kept.has(id) ? this.kept.get(id)! : this.meta.get(id)!);
      return { index: indexBytes, meta: yield* encodeMetaSteps(this.ids, metaOf) };
    } finally {
      indexSteps.return(new Uint8Array(0));
    }
  }
}

/** Filter metadata as encodeMetaSteps wrote it (exported for its test): its columns as they are. */
export function decodeMeta(bytes: Uint8Array): DocMetas {
  const r = new SnapshotReader(bytes);
  const [strings, tags, metadata] = [r.value<string[]>(), r.value<string[]>(), r.value<string[]>()];
  const [ids, createdAt, eventFrom, eventTo] = [r.array('f64'), r.array('f64'), r.array('f64'), r.array('f64')];
  const isSummary = r.array('u8');
  const [source, session, tagList, metadataOf] = [r.array('i32'), r.array('i32'), r.array('i32'), r.array('i32')];
  const [updatedAt, importance] = [r.array('f64'), r.array('f64')];
  return DocMetas.restored({
    ids,
    createdAt,
    updatedAt,
    importance,
    eventFrom,
    eventTo,
    isSummary,
    source,
    session,
    tagList,
    metadataOf,
    strings,
    tags,
    metadata,
  });
}

/** Distinct values, numbered in order of first use. */
class Interned {
  readonly values: string[] = [];
  private readonly numbers = new Map<string, number>();

  of(value: string): number {
    let n = this.numbers.get(value);
    if (n === undefined) {
      n = this.values.length;
      this.values.push(value);
      this.numbers.set(value, n);
    }
    return n;
  }
}

const EMPTY = Buffer.alloc(0);

const ownerIs = (owner: Owner) => ({
  project_id: owner.projectId,
  tenant_id: owner.tenantId,
  end_user_id: owner.endUserId,
});

/** A snapshot's pieces: 0 the filter metadata, 1.. the index's (index_snapshot_pieces.piece). */
const META_PIECE = 0;

/**
 * PostgreSQL sends a piece in rows of this many bytes: node-pg gathers a message larger than its
 * buffer by copying what it has each time more arrives, so the 6.6 MB of a 100,000-memory index
 * took 77-125 ms to receive as one value and 41-87 ms as 1 MB rows.
 */
const FETCH_CHUNK = 1 << 20;

/**
 * On PostgreSQL every piece of the snapshot in one statement, in 1 MB rows (a statement a piece cost
 * ~40 ms each in a paired run: 1.24-1.40 s against 0.75-0.82 s for the first query at 300k), so
 * there the pieces are decompressed once all are read. (As hex, node-pg's bytea: base64 text cost the
 * process less CPU in a probe but the first query over HTTP no less, bench/README.md "The first query after
 * a restart, session 19"; node-pg's binary results read every value as UTF-8 text.)
 */
async function piecesAtOnce(database: Database, owner: Owner, embedder: string, chunk: number) {
  const { rows } = await sql<{ revision: string; memories: number; piece: number; length: number; part: Buffer }>`
    SELECT s.revision, s.memories, p.piece, p.length, substring(p.data FROM g FOR ${chunk}) AS part
    FROM index_snapshots s
    JOIN index_snapshot_pieces p ON p.project_id = s.project_id AND p.tenant_id = s.tenant_id
      AND p.end_user_id = s.end_user_id AND p.revision = s.revision,
      generate_series(1, length(p.data), ${chunk}) AS g
    WHERE s.project_id = ${owner.projectId} AND s.tenant_id = ${owner.tenantId} AND s.end_user_id = ${owner.endUserId}
      AND s.embedder = ${embedder} AND s.format = ${STORED_FORMAT}
    ORDER BY p.piece, g`.execute(database.db);
  const pieces: Array<{ length: number; parts: Buffer[] }> = [];
  for (const row of rows) {
    const piece = Number(row.piece);
    if (piece === pieces.length) pieces.push({ length: Number(row.length), parts: [] });
    else if (piece !== pieces.length - 1) return null;
    pieces[piece]!.parts.push(row.part);
  }
  if (pieces.length === 0) return null;
  return {
    revision: Number(rows[0]!.revision),
    memories: Number(rows[0]!.memories),
    pieces: pieces.map(({ length, parts }) => ({
      length,
      data: parts.length === 1 ? parts[0]! : Buffer.concat(parts),
    })),
  };
}

/** On SQLite one piece's bytes if it is still of the snapshot at `revision` (else undefined). */
async function pieceData(
  database: Database,
  owner: Owner,
  piece: number,
  revision: number,
): Promise<Buffer | undefined> {
  const row = await database.db
    .selectFrom('index_snapshot_pieces')
    .select('data')
    .where((eb) => eb.and(ownerIs(owner)))
    .where('piece', '=', piece)
    .where('revision', '=', revision)
    .executeTakeFirst();
  return row?.data;
}

/**
 * The owner's stored index built with this embedder, or null (none, another embedder or format,
 * replaced or erased while read, unreadable), restored with `indexOptions`. Each piece is read while
 * the thread pool decompresses those read before it. `chunk`: the bytes a row on PostgreSQL (a test's
 * small value reads many).
 */
export async function loadSnapshot(
  database: Database,
  owner: Owner,
  embedder: string,
  indexOptions: MemoryIndexOptions = { embedder: null },
  chunk = FETCH_CHUNK,
): Promise<Snapshot | null> {
  if (database.dialect === 'postgres') {
    const stored = await piecesAtOnce(database, owner, embedder, chunk);
    return stored && restored(stored.pieces.map(decompressedPiece), stored, indexOptions);
  }
  const head = await database.db
    .selectFrom('index_snapshots as s')
    .innerJoin('index_snapshot_pieces as p', (join) =>
      join
        .onRef('p.project_id', '=', 's.project_id')
        .onRef('p.tenant_id', '=', 's.tenant_id')
        .onRef('p.end_user_id', '=', 's.end_user_id')
        .onRef('p.revision', '=', 's.revision'),
    )
    .select(['s.revision', 's.memories', 'p.piece', 'p.length'])
    .where('s.project_id', '=', owner.projectId)
    .where('s.tenant_id', '=', owner.tenantId)
    .where('s.end_user_id', '=', owner.endUserId)
    .where('s.embedder', '=', embedder)
    .where('s.format', '=', STORED_FORMAT)
    .orderBy('p.piece')
    .execute();
  if (head.length === 0 || head.some((p, i) => Number(p.piece) !== i + META_PIECE)) return null;
  const revision = Number(head[0]!.revision);
  const decompressing: Array<Promise<Buffer>> = [];
  for (const { piece, length } of head) {
    const data = await pieceData(database, owner, Number(piece), revision);
    // Replaced or erased since the first read: as if there were none.
    if (!data) return null;
    const decompressed = decompressedPiece({ length: Number(length), data });
    // Observed now: a piece that fails while later ones are read, or after a return above, is no unhandled rejection.
    decompressed.catch(() => undefined);
    decompressing.push(decompressed);
  }
  return restored(decompressing, { revision, memories: Number(head[0]!.memories) }, indexOptions);
}

/**
 * Slots to have the search's buffers ready for, by memories in a snapshot: a restored index holds a
 * slot per memory and those left free by removals since it was built (a snapshot is stored again
 * after changes of a tenth).
 */
const SLOTS_PER_MEMORY = 1.125;

/**
 * The snapshot of these pieces being decompressed (the filter metadata's first), or null if one is
 * unreadable. While they are, the search's buffers are readied for its size (SearchBuffers.prepare).
 */
async function restored(
  decompressing: Array<Promise<Buffer>>,
  { revision, memories }: { revision: number; memories: number },
  indexOptions: MemoryIndexOptions,
): Promise<Snapshot | null> {
  try {
    SearchBuffers.prepare(Math.ceil(memories * SLOTS_PER_MEMORY));
    const [meta, ...index] = await Promise.all(decompressing);
    return { index: MemoryIndex.restore(index, indexOptions), meta: decodeMeta(meta!), revision };
  } catch {
    // Unreadable (written by another version): the caller builds, and the next store replaces it.
    return null;
  }
}

/** The revision of the owner's stored snapshot for this embedder and format, or null. */
export async function snapshotRevision(db: Executor, owner: Owner, embedder: string): Promise<number | null> {
  const row = await db
    .selectFrom('index_snapshots')
    .select('revision')
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .where('embedder', '=', embedder)
    .where('format', '=', STORED_FORMAT)
    .executeTakeFirst();
  return row ? Number(row.revision) : null;
}

/**
 * Stores an index taken at `revision` unless something of the owner was forgotten since then (its
 * text would survive in the snapshot: 'forgotten') or a snapshot as new is already stored ('current').
 * `pieceBytes`: the least an index piece holds uncompressed (a test's small value stores many).
 */
export async function storeSnapshot(
  database: Database,
  owner: Owner,
  embedder: string,
  taken: Taken & { revision: number; memories: number },
  pieceBytes = ZLIB_CHUNK,
): Promise<'stored' | 'current' | 'forgotten'> {
  const pieces = [
    ...(await compressedPieces(taken.meta, [], await planesOf(taken.meta, compressed))),
    ...(await compressedPieces(
      taken.index,
      snapshotCuts(taken.index, pieceBytes),
      await planesOf(taken.index, compressed),
    )),
  ];
  return database.db.transaction().execute(async (trx) => {
    if (await forgottenSince(database, trx, owner, taken.revision)) return 'forgotten';
    const result = await trx
      .insertInto('index_snapshots')
      .values({
        ...ownerIs(owner),
        revision: taken.revision,
        embedder,
        format: STORED_FORMAT,
        memories: taken.memories,
        index_data: EMPTY,
        doc_meta: EMPTY,
        created_at: nowIso(),
      })
      .onConflict((oc) =>
        oc
          .columns(['project_id', 'tenant_id', 'end_user_id'])
          .doUpdateSet((eb) => ({
            revision: eb.ref('excluded.revision'),
            embedder: eb.ref('excluded.embedder'),
            format: eb.ref('excluded.format'),
            memories: eb.ref('excluded.memories'),
            index_data: eb.ref('excluded.index_data'),
            doc_meta: eb.ref('excluded.doc_meta'),
            created_at: eb.ref('excluded.created_at'),
            // A snapshot in another stored format (an earlier version's) is replaced whatever its revision.
          }))
          .where((eb) =>
            eb.or([
              eb('index_snapshots.revision', '<', taken.revision),
              eb('index_snapshots.format', '!=', STORED_FORMAT),
            ]),
          ),
      )
      .executeTakeFirst();
    if (Number(result.numInsertedOrUpdatedRows ?? 0) === 0) return 'current';
    await trx
      .deleteFrom('index_snapshot_pieces')
      .where((eb) => eb.and(ownerIs(owner)))
      .execute();
    // A statement a piece: a few MB each, not one statement of the whole.
    for (const [piece, { length, data }] of pieces.entries()) {
      await trx
        .insertInto('index_snapshot_pieces')
        .values({ ...ownerIs(owner), piece, revision: taken.revision, length, data })
        .execute();
    }
    return 'stored';
  });
}

/** Removing an end user: their snapshot goes (its pieces with it), whichever memories it holds (the row names them). */
export async function eraseEndUserSnapshot(trx: Executor, owner: Owner): Promise<void> {
  await trx
    .deleteFrom('index_snapshots')
    .where((eb) => eb.and(ownerIs(owner)))
    .execute();
}

/** Erase hook: forgetting memories deletes their owners' snapshots. */
export async function eraseIndexSnapshots(trx: Executor, memoryIds: number[]): Promise<void> {
  const owners = new Map<string, Owner>();
  for (const row of await ownersOfMemories(trx, memoryIds)) {
    owners.set(JSON.stringify([row.project_id, row.tenant_id, row.end_user_id]), {
      projectId: row.project_id,
      tenantId: row.tenant_id,
      endUserId: row.end_user_id,
    });
  }
  for (const owner of owners.values()) await eraseEndUserSnapshot(trx, owner);
}
