import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../app.js';
import { loadConfig, type Config } from '../../config.js';
import { MemoryIndex, PIECE_SLACK, SLICE_MS, snapshotCuts } from '../../engine/index.js';
import { buildServices } from '../../services.js';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { freshUser, retrievalConfig } from '../../testing/retrieval.js';
import { until } from '../../testing/until.js';
import type { IndexCache } from './index-cache.js';
import type { DocMetas } from './doc-metas.js';
import {
  decodeMeta,
  compressedPieces,
  decompressedPiece,
  type StoredPiece,
  loadSnapshot,
  SnapshotTaking,
  storeSnapshot,
  eraseEndUserSnapshot,
  type DocMeta,
} from './snapshots.js';

/** A row of index_snapshot_pieces as the piece it holds. */
const piece = (row: { length: number; data: Buffer }): StoredPiece => ({ length: Number(row.length), data: row.data });
const METRICS_TOKEN = 'metrics-token-for-snapshot-tests';
const MIN = 20;
// The background refresh runs when a test says so; the engine runs in process, where a test can watch its index being taken.
const config = (): Partial<Config> => ({
  ...retrievalConfig({
    ...loadConfig({}).retrieval,
    indexSnapshotMinMemories: MIN,
    indexSnapshotIntervalMs: 3_600_000,
    searchThread: false,
  }),
  metricsToken: METRICS_TOKEN,
});

const TOPICS = [
  'pottery class',
  'adoption agency',
  'guitar lessons',
  'marathon training',
  'trip to Tokyo',
  'sourdough baking',
];
/** Queries, some with filters: a restored index keeps every doc's filter metadata. */
const QUERIES: Array<string | Record<string, unknown>> = [
  'When is the pottery class?',
  'Tokyo trip plans',
  'What did the adoption agency say?',
  'sourdough',
  { query: 'pottery class', filters: { tags_any: ['hobby'] } },
  { query: 'pottery class', filters: { metadata: { mood: 'excited' }, source: 'chat' } },
  { query: 'agency', session_id: 's1' },
  { query: 'What happened on day 3?', filters: { created_after: '2020-01-01T00:00:00Z', is_summary: false } },
  { query: 'talked about the guitar lessons', filters: { tags_all: ['hobby', 'music'] } },
];
const bodyOf = (q: string | Record<string, unknown>) => ({ ...(typeof q === 'string' ? { query: q } : q), k: 5 });
type Hits = Array<[number, number]>;
/** The same memories in the same order with the same scores (but recency, which moves with the clock between two queries). */
function expectSameHits(actual: Hits[], expected: Hits[]): void {
  expect(actual.map((hits) => hits.map(([id]) => id))).toEqual(expected.map((hits) => hits.map(([id]) => id)));
  actual.forEach((hits, i) =>
    hits.forEach(([, score], j) => expect(Math.abs(score - expected[i]![j]![1])).toBeLessThan(1e-6)),
  );
}

forEachDialect('stored indexes of large end users', (dialect) => {
  const t = useTestApp(dialect, config);
  const others: FastifyInstance[] = [];
  afterAll(async () => {
    for (const app of others) await app.close();
  });

  /** Another server process on the same database: its own index cache, nothing in memory. */
  const anotherProcess = async () => {
    const app = await buildApp({
      services: buildServices({ config: { ...loadConfig({}), ...config(), logLevel: 'silent' }, database: t.database }),
    });
    others.push(app);
    const headers = (endUser: string) => ({
      'x-api-key': t.key,
      'x-project-id': t.projectId,
      'x-end-user-id': endUser,
    });
    return {
      query: async (endUser: string, q: string | Record<string, unknown>) => {
        const res = await app.inject({
          method: 'POST',
          url: '/memory/query',
          headers: headers(endUser),
          payload: bodyOf(q),
        });
        expect(res.statusCode, res.body).toBe(200);
        return (res.json().memories as Array<{ id: number; score: number }>).map((m): [number, number] => [
          m.id,
          m.score,
        ]);
      },
      snapshots: async () => {
        const res = await app.inject({
          method: 'GET',
          url: '/metrics',
          headers: { authorization: `Bearer ${METRICS_TOKEN}` },
        });
        return Object.fromEntries(
          [...res.body.matchAll(/engram_index_snapshots_total\{event="(\w+)"\} (\d+)/g)].map((m) => [
            m[1],
            Number(m[2]),
          ]),
        );
      },
    };
  };

  const fill = async (endUser: string, count: number) => {
    const items = Array.from({ length: count }, (_, i) => ({
      text: `Note ${i}: talked about the ${TOPICS[i % TOPICS.length]} on day ${i}`,
      session_id: `s${Math.floor(i / 8)}`,
      ...(i % 3 === 0 ? { tags: i % 2 === 0 ? ['hobby', 'music'] : ['hobby'] } : {}),
      ...(i % 4 === 0 ? { metadata: { mood: i % 8 === 0 ? 'excited' : 'calm', day: i } } : {}),
      ...(i % 5 === 0 ? { source: 'chat' } : {}),
    }));
    const res = await t.call('POST', '/memory/bulk-add', { endUser, body: items });
    expect(res.status, res.text).toBe(200);
    return (res.body.results as Array<{ memory: { id: number } }>).map((r) => r.memory.id);
  };
  const query = async (endUser: string, q: string | Record<string, unknown>) => {
    const res = await t.call('POST', '/memory/query', { endUser, body: bodyOf(q) });
    expect(res.status, res.text).toBe(200);
    return (res.body.memories as Array<{ id: number; score: number }>).map((m): [number, number] => [m.id, m.score]);
  };
  const stored = (endUser: string) =>
    t.database.db
      .selectFrom('index_snapshots')
      .select(['revision', 'memories', 'embedder', 'format'])
      .where('project_id', '=', t.projectId)
      .where('end_user_id', '=', endUser)
      .executeTakeFirst();
  const pieceRows = (endUser: string) =>
    t.database.db
      .selectFrom('index_snapshot_pieces')
      .select(['piece', 'revision', 'length', 'data'])
      .where('project_id', '=', t.projectId)
      .where('end_user_id', '=', endUser)
      .orderBy('piece')
      .execute();
  const revision = async (endUser: string) =>
    Number(
      (
        await t.database.db
          .selectFrom('end_users')
          .select('revision')
          .where('project_id', '=', t.projectId)
          .where('end_user_id', '=', endUser)
          .executeTakeFirstOrThrow()
      ).revision,
    );
  const eventually = <T>(read: () => Promise<T | undefined>): Promise<T> => until(read, 'a snapshot');

  it('stores a large index once built; another process loads it, catches up, and answers alike', async () => {
    const endUser = freshUser();
    const small = freshUser();
    await fill(endUser, MIN + 10);
    await fill(small, MIN - 1);
    const before = await Promise.all(QUERIES.map((q) => query(endUser, q)));
    // Every filter narrows to something (so a lost field would show).
    before.forEach((hits) => expect(hits.length).toBeGreaterThan(0));
    await query(small, 'pottery');

    const snapshot = await eventually(() => stored(endUser));
    expect(snapshot).toMatchObject({ memories: MIN + 10, embedder: 'builtin' });
    expect(Number(snapshot.revision)).toBe(await revision(endUser));
    expect(await stored(small)).toBeUndefined();

    const other = await anotherProcess();
    expectSameHits(await Promise.all(QUERIES.map((q) => other.query(endUser, q))), before);
    expect(await other.snapshots()).toEqual({ loaded: 1, stored: 0, failed: 0 });

    // A change after the snapshot reaches the process that loaded it (caught up from the change feed).
    const added = await t.call('POST', '/memory/add', {
      endUser,
      body: { text: 'Booked a kintsugi workshop in Kyoto' },
    });
    expect(added.status).toBe(201);
    expect((await other.query(endUser, 'kintsugi workshop Kyoto')).map(([id]) => id)).toEqual([added.body.id]);
    expectSameHits(
      await Promise.all(QUERIES.map((q) => other.query(endUser, q))),
      await Promise.all(QUERIES.map((q) => query(endUser, q))),
    );
  });

  it('a snapshot is stored as rows of its pieces and read back as it was', async () => {
    const endUser = freshUser();
    await fill(endUser, MIN + 5);
    await query(endUser, 'pottery class');
    const row = await eventually(() => stored(endUser));
    const owner = { projectId: t.projectId, tenantId: '', endUserId: endUser };
    const first = (await loadSnapshot(t.database, owner, 'builtin'))!;
    expect(first).not.toBeNull();
    // Stored again in pieces of 1 KB or more (cut where arrays begin): rows read one by one.
    const bytes = first.index.snapshot();
    const taken = await new SnapshotTaking(first.index, first.meta).taken;
    const revision = Number(row.revision) + 1;
    expect(await storeSnapshot(t.database, owner, 'builtin', { ...taken, revision, memories: MIN + 5 }, 1024)).toBe(
      'stored',
    );
    const rows = await pieceRows(endUser);
    expect(rows.length).toBeGreaterThan(4);
    expect(rows.every((piece) => Number(piece.revision) === revision)).toBe(true);
    const again = (await loadSnapshot(t.database, owner, 'builtin'))!;
    expect(again.revision).toBe(revision);
    expect(Buffer.from(again.index.snapshot()).equals(Buffer.from(bytes))).toBe(true);
    expect([...again.meta]).toEqual([...first.meta]);
    // On PostgreSQL 16 bytes a row: a piece comes back in many rows.
    expect(rows.some((piece) => piece.data.length > 16 * 10)).toBe(true);
    const parts = (await loadSnapshot(t.database, owner, 'builtin', undefined, 16))!;
    expect(Buffer.from(parts.index.snapshot()).equals(Buffer.from(bytes))).toBe(true);
    expect([...parts.meta]).toEqual([...first.meta]);
    // A piece missing (the snapshot replaced or erased while it was read): none.
    await t.database.db
      .deleteFrom('index_snapshot_pieces')
      .where('project_id', '=', t.projectId)
      .where('end_user_id', '=', endUser)
      .where('piece', '=', 3)
      .execute();
    expect(await loadSnapshot(t.database, owner, 'builtin')).toBeNull();
    // The pieces go with their snapshot.
    await eraseEndUserSnapshot(t.database.db, owner);
    expect(await pieceRows(endUser)).toEqual([]);
  });

  it('background upkeep stores the indexes of large end users nobody has queried yet', async () => {
    const endUser = freshUser();
    const small = freshUser();
    await fill(endUser, MIN + 3);
    await fill(small, MIN - 1);
    const upkeep = t.services.chores.find((c) => c.name === 'retrieval.snapshots')!;
    expect(await upkeep.run()).toBeGreaterThanOrEqual(1);
    const snapshot = await eventually(() => stored(endUser));
    expect(snapshot).toMatchObject({ memories: MIN + 3 });
    expect(Number(snapshot.revision)).toBe(await revision(endUser));
    expect(await stored(small)).toBeUndefined();

    // The first query of another process loads it.
    const other = await anotherProcess();
    expectSameHits(
      await Promise.all(QUERIES.map((q) => other.query(endUser, q))),
      await Promise.all(QUERIES.map((q) => query(endUser, q))),
    );
    expect(await other.snapshots()).toMatchObject({ loaded: 1 });

    // Run again with nothing changed, it leaves a current snapshot alone.
    const before = await t.database.db
      .selectFrom('index_snapshots')
      .select('created_at')
      .where('end_user_id', '=', endUser)
      .executeTakeFirstOrThrow();
    // It does not bring this end user's index up to date (the only way a run stores a snapshot).
    const refreshed = vi.spyOn(t.services.retrieval.cache as IndexCache, 'forOwner');
    try {
      await upkeep.run();
      expect(refreshed.mock.calls.filter(([owner]) => owner.endUserId === endUser)).toEqual([]);
    } finally {
      refreshed.mockRestore();
    }
    expect(
      await t.database.db
        .selectFrom('index_snapshots')
        .select('created_at')
        .where('end_user_id', '=', endUser)
        .executeTakeFirstOrThrow(),
    ).toEqual(before);
  });

  it('forgetting any of the memories deletes the snapshot in the same transaction, and a stale one is never stored', async () => {
    const endUser = freshUser();
    const ids = await fill(endUser, MIN + 5);
    await query(endUser, 'pottery');
    const snapshot = await eventually(() => stored(endUser));

    const forgotten = ids[0]!;
    const res = await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [forgotten] } });
    expect(res.body, res.text).toEqual([forgotten]);
    expect(await stored(endUser)).toBeUndefined();

    // The index taken before the forgetting is refused: its text would outlive the memory.
    const owner = { projectId: t.projectId, tenantId: '', endUserId: endUser };
    const taken = {
      ...(await new SnapshotTaking(new MemoryIndex({ embedder: null }), new Map()).taken),
      revision: Number(snapshot.revision),
      memories: 0,
    };
    expect(await storeSnapshot(t.database, owner, 'builtin', taken)).toBe('forgotten');
    expect(await stored(endUser)).toBeUndefined();

    // A fresh process builds from the rows (no snapshot) and never returns the forgotten memory.
    const other = await anotherProcess();
    const hits = await other.query(endUser, 'Note 0 pottery class day 0');
    expect(hits.map(([id]) => id)).not.toContain(forgotten);
    expect(await other.snapshots()).toMatchObject({ loaded: 0 });
    // It stores a new one, as of now.
    const again = await eventually(() => stored(endUser));
    expect(Number(again.revision)).toBe(await revision(endUser));
    // A snapshot no newer than the stored one leaves it alone.
    expect(await storeSnapshot(t.database, owner, 'builtin', { ...taken, revision: Number(again.revision) })).toBe(
      'current',
    );
    expect(await stored(endUser)).toEqual(again);

    // Purging the end user deletes it too.
    expect((await t.call('DELETE', `/memory/user/${endUser}`, { endUser: null })).body).toEqual({
      end_user_id: endUser,
      deleted: MIN + 4,
    });
    expect(await stored(endUser)).toBeUndefined();
  });

  it('an unreadable snapshot is ignored: the index is built and the snapshot replaced', async () => {
    const endUser = freshUser();
    await fill(endUser, MIN);
    await query(endUser, 'guitar lessons');
    await eventually(() => stored(endUser));
    await t.database.db
      .updateTable('index_snapshot_pieces')
      .set({ data: Buffer.from('not an index') })
      .where('project_id', '=', t.projectId)
      .where('end_user_id', '=', endUser)
      .where('piece', '=', 1)
      .execute();
    await t.call('POST', '/memory/add', { endUser, body: { text: 'One more note about guitar lessons' } });

    const other = await anotherProcess();
    expectSameHits([await other.query(endUser, 'guitar lessons')], [await query(endUser, 'guitar lessons')]);
    expect(await other.snapshots()).toMatchObject({ loaded: 0 });
    await eventually(async () => ((await other.snapshots()).stored === 1 ? true : undefined));
    expect(Number((await stored(endUser))!.revision)).toBe(await revision(endUser));
  });
  it("a snapshot of an earlier version's stored format is replaced, whatever its revision", async () => {
    const endUser = freshUser();
    await fill(endUser, MIN);
    await query(endUser, 'guitar lessons');
    const current = await eventually(() => stored(endUser));
    // As an earlier version would have left it: the format before this one's (zstd pieces in the row), a revision not
    // below the one to store.
    await t.database.db
      .updateTable('index_snapshots')
      .set({
        format: Number(current.format) - 1,
        revision: Number(current.revision) + 1000,
        index_data: Buffer.from('old'),
      })
      .where('project_id', '=', t.projectId)
      .where('end_user_id', '=', endUser)
      .execute();

    const other = await anotherProcess();
    expectSameHits([await other.query(endUser, 'guitar lessons')], [await query(endUser, 'guitar lessons')]);
    expect(await other.snapshots()).toMatchObject({ loaded: 0 });
    await eventually(async () => ((await other.snapshots()).stored === 1 ? true : undefined));
    const replaced = (await stored(endUser))!;
    expect(Number(replaced.revision)).toBe(await revision(endUser));
    expect(Number(current.format)).toBeGreaterThan(1);
    expect(Number(replaced.format)).toBe(Number(current.format));
    // The next process loads it.
    const third = await anotherProcess();
    await third.query(endUser, 'guitar lessons');
    expect(await third.snapshots()).toMatchObject({ loaded: 1 });
  });

  it('takes a snapshot in slices, of the index as it was when taking began, while the end user is written to and queried', async () => {
    const cache = t.services.retrieval.cache as IndexCache;
    // Every step a slice of its own (a step is well under a millisecond; the default lets steps run for SLICE_MS).
    cache.snapshotSliceMs = 0;
    const endUser = freshUser();
    const owner = { projectId: t.projectId, tenantId: '', endUserId: endUser };
    const ids = await fill(endUser, MIN + 25);
    // This end user's index, once built: its taking is watched, and held after its first step until released.
    let target: MemoryIndex | undefined;
    let atStart: Buffer | undefined;
    let began: () => void;
    const beginning = new Promise<void>((resolve) => (began = resolve));
    let released = false;
    // Turns of the event loop while it is taken, and its steps after it is released.
    let turns = 0;
    let steps = 0;
    let heldTheLoop = false;
    const snapshotSteps = MemoryIndex.prototype.snapshotSteps;
    const spy = vi.spyOn(MemoryIndex.prototype, 'snapshotSteps').mockImplementation(function* (
      this: MemoryIndex,
      track = true,
    ) {
      if (this !== target || !track) return yield* snapshotSteps.call(this, track);
      // The synchronous snapshot at the moment taking begins (its first step).
      atStart = Buffer.from(this.snapshot());
      const inner = snapshotSteps.call(this, track);
      inner.next();
      began();
      let taking = true;
      const tick = () => {
        turns++;
        if (taking) setImmediate(tick);
      };
      setImmediate(tick);
      // Every step in a turn of its own (slices of 0 ms): one that follows another in the same turn
      // held the event loop (and would spin here for ever).
      let turn = -1;
      const ownTurn = () => {
        if (turns === turn) heldTheLoop = released = true;
        turn = turns;
      };
      try {
        while (!released) {
          ownTurn();
          yield;
        }
        for (;;) {
          ownTurn();
          const step = inner.next();
          if (step.done) return step.value;
          steps++;
          yield;
        }
      } finally {
        taking = false;
      }
    });
    try {
      const before = await Promise.all(QUERIES.map((q) => query(endUser, q)));
      target = cache.held(owner)!.index;
      await beginning;
      const startRevision = await revision(endUser);

      // Meanwhile: a new memory, a changed one, more in the same sessions; each query sees them.
      const added = await t.call('POST', '/memory/add', {
        endUser,
        body: { text: 'Booked a kintsugi workshop in Kyoto', session_id: 's1' },
      });
      expect(added.status).toBe(201);
      expect((await query(endUser, 'kintsugi workshop Kyoto'))[0]![0]).toBe(added.body.id);
      const changed = ids[0]!;
      expect(
        (
          await t.call('PATCH', `/memory/${changed}`, {
            endUser,
            body: { tags: ['ceramics'], metadata: { mood: 'proud' } },
          })
        ).status,
      ).toBe(200);
      expect(
        (await query(endUser, { query: 'pottery class', filters: { tags_any: ['ceramics'] } })).map(([id]) => id),
      ).toEqual([changed]);
      const more = Array.from({ length: 8 }, (_, i) => ({
        text: `Later note ${i}: the ${TOPICS[i % TOPICS.length]} again`,
        session_id: `s${i}`,
      }));
      expect((await t.call('POST', '/memory/bulk-add', { endUser, body: more })).status).toBe(200);
      const current = await Promise.all(QUERIES.map((q) => query(endUser, q)));
      expect(current).not.toEqual(before);

      // Let it go on.
      const failed = (await cache.stats()).snapshots.failed;
      released = true;
      const stored = await eventually(async () => {
        expect((await cache.stats()).snapshots.failed, 'taking or storing the snapshot failed').toBe(failed);
        return t.database.db
          .selectFrom('index_snapshots')
          .select(['revision'])
          .where('project_id', '=', t.projectId)
          .where('end_user_id', '=', endUser)
          .executeTakeFirst();
      });
      expect(heldTheLoop, 'a step ran in the turn of the event loop of the step before').toBe(false);
      expect(steps).toBeGreaterThan(5);
      expect(turns).toBeGreaterThan(steps);

      // Stored: the index as it was when taking began, byte for byte, and its metadata then.
      expect(Number(stored.revision)).toBe(startRevision);
      const indexPieces = (await pieceRows(endUser)).filter((row) => Number(row.piece) > 0);
      const decompressed = await Promise.all(indexPieces.map((row) => decompressedPiece(piece(row))));
      expect(Buffer.concat(decompressed).equals(atStart!)).toBe(true);
      const loaded = (await loadSnapshot(t.database, owner, 'builtin'))!;
      expect(loaded.meta.size).toBe(MIN + 25);
      expect(loaded.meta.has(added.body.id)).toBe(false);
      expect(loaded.meta.get(changed)).toMatchObject({
        tags: ['hobby', 'music'],
        metadata: { mood: 'excited', day: 0 },
      });

      // A process that loads it catches up to the same answers.
      const other = await anotherProcess();
      expectSameHits(
        await Promise.all(QUERIES.map((q) => other.query(endUser, q))),
        await Promise.all(QUERIES.map((q) => query(endUser, q))),
      );
      expect(await other.snapshots()).toMatchObject({ loaded: 1 });
    } finally {
      spy.mockRestore();
      cache.snapshotSliceMs = SLICE_MS;
    }
  });
});

describe('taking an index and its filter metadata in slices', () => {
  const docMeta = (i: number) => ({
    tags: i % 3 === 0 ? ['hobby'] : [],
    source: i % 5 === 0 ? 'chat' : null,
    createdAt: 1_700_000_000_000 + i,
    metadata: i % 4 === 0 ? { day: i } : {},
    isSummary: false,
    sessionId: `s${i >> 3}`,
    importance: (i % 10) / 10,
    updatedAt: 1_700_000_000_000 + 2 * i,
  });
  const doc = (i: number) => ({
    id: i,
    text: `Note ${i}: talked about the ${TOPICS[i % TOPICS.length]} on day ${i}`,
    sessionId: `s${i >> 3}`,
    createdAt: 1_700_000_000_000 + i,
    importance: 0.5,
    feedback: 0,
    tags: docMeta(i).tags,
  });

  it('takes both as they were when it began, however they change meanwhile', async () => {
    const index = new MemoryIndex({ embedder: null });
    const meta = new Map<number, DocMeta>();
    for (let i = 1; i <= 3000; i++) {
      index.upsert(doc(i));
      meta.set(i, docMeta(i));
    }
    // The same, left alone.
    const copy = new SnapshotTaking(MemoryIndex.restore(index.snapshot(), { embedder: null }), new Map(meta), 0);
    const taking = new SnapshotTaking(index, meta, 0);
    // Every turn of the event loop meanwhile: a doc removed, one changed, one added (metaChanging first, as the index cache does).
    let turns = 0;
    let done = false;
    const change = () => {
      if (done) return;
      const i = ++turns;
      for (const [id, apply] of [
        [i * 7, () => (index.remove(i * 7), meta.delete(i * 7))],
        [
          i * 11,
          () => (
            index.upsert({ ...doc(i * 11), tags: ['changed'] }),
            meta.set(i * 11, { ...docMeta(i * 11), tags: ['changed'] })
          ),
        ],
        [5000 + i, () => (index.upsert(doc(5000 + i)), meta.set(5000 + i, docMeta(5000 + i)))],
      ] as const) {
        taking.metaChanging(id);
        apply();
      }
      setImmediate(change);
    };
    setImmediate(change);
    const [taken, expected] = await Promise.all([taking.taken, copy.taken]);
    done = true;
    expect(turns).toBeGreaterThan(10);
    expect(Buffer.from(taken.index).equals(Buffer.from(expected.index))).toBe(true);
    expect(Buffer.from(taken.meta).equals(Buffer.from(expected.meta))).toBe(true);
  });

  it('restores the metadata as DocMetas that read and change as the Map taken, whatever the first use is', async () => {
    const meta = new Map<number, DocMeta>();
    for (let i = 1; i <= 300; i++)
      meta.set(i, { ...docMeta(i), ...(i % 9 === 0 ? { event: { from: i, to: i + 1 } } : {}) });
    const index = new MemoryIndex({ embedder: null });
    const bytes = (await new SnapshotTaking(index, meta, 0).taken).meta;
    type Metas = Pick<DocMetas, 'size' | 'get' | 'has' | 'keys' | 'values' | 'entries' | 'set' | 'delete' | 'clear'> &
      Iterable<[number, DocMeta]>;
    const uses: Array<(m: Metas) => unknown> = [
      (m) => m.size,
      (m) => m.get(9),
      (m) => m.has(301),
      (m) => [...m.keys()],
      (m) => [...m.values()],
      (m) => [...m],
      (m) => (m.set(301, docMeta(301)), [...m.entries()]),
      (m) => (m.delete(5), [...m.entries()]),
      (m) => (m.clear(), m.size),
    ];
    for (const use of uses) {
      const expected = new Map(meta);
      const restored = decodeMeta(bytes);
      expect(restored.size).toBe(300);
      expect(use(restored)).toEqual(use(expected));
      expect([...restored.entries()]).toEqual([...expected.entries()]);
      expect(restored.size).toBe(expected.size);
    }
  });
});

describe('an index stored in compressed pieces', () => {
  const every = (length: number, piece: number) =>
    Array.from({ length: Math.ceil(length / piece) }, (_, i) => i * piece);
  const decompressed = (pieces: StoredPiece[]) => Promise.all(pieces.map(decompressedPiece));
  it('decompresses to the bytes compressed, piece by piece, whatever their length against the cuts', async () => {
    const bytes = Buffer.concat([randomBytes(3000), Buffer.alloc(3000, 7)]);
    for (const length of [0, 1, 999, 1000, 1001, 2500, 6000]) {
      const pieces = await decompressed(await compressedPieces(bytes.subarray(0, length), every(length, 1000)));
      expect(pieces).toHaveLength(Math.max(1, Math.ceil(length / 1000)));
      expect(Buffer.concat(pieces).equals(bytes.subarray(0, length))).toBe(true);
    }
  });

  it('restores an index from pieces cut where its arrays begin, each decompressed into a buffer of its own', async () => {
    const index = new MemoryIndex({ embedder: null });
    for (let i = 1; i <= 2000; i++)
      index.upsert({
        id: i,
        text: `${TOPICS[i % TOPICS.length]} on day ${i}`,
        sessionId: `s${i >> 4}`,
        createdAt: 1_700_000_000_000 + i,
        importance: 0.5,
        feedback: 0,
      });
    const bytes = index.snapshot();
    // Pieces of 32 KB or more: below half of Buffer.poolSize (4 KB on Node 20, 32 KB on Node 24) Node hands out
    // slices of its shared pool instead of buffers of their own.
    const cuts = snapshotCuts(bytes, 32_768);
    expect(cuts.length).toBeGreaterThan(2);
    const pieces = await decompressed(await compressedPieces(bytes, cuts));
    for (const piece of pieces.slice(0, -1)) expect(piece.length).toBeGreaterThanOrEqual(32_768);
    // Large pieces come back as buffers of their own (a byte longer: PIECE_SLACK), the memory a restored index keeps
    // without copying.
    const large = pieces.filter((piece) => piece.length >= Buffer.poolSize >>> 1);
    expect(large.length).toBeGreaterThan(0);
    for (const piece of large) {
      expect(piece.byteOffset).toBe(0);
      expect(piece.buffer.byteLength - piece.length).toBeLessThanOrEqual(PIECE_SLACK);
    }
    const restored = MemoryIndex.restore(pieces, { embedder: null });
    expect(restored.search('pottery class', { k: 5, now: 1_700_000_001_000, explain: true })).toEqual(
      index.search('pottery class', { k: 5, now: 1_700_000_001_000, explain: true }),
    );
    expect(Buffer.from(restored.snapshot()).equals(Buffer.from(bytes))).toBe(true);
  });

  it('refuses a piece that is not of its stated length or not whole', async () => {
    const [stored] = await compressedPieces(randomBytes(2500), []);
    await expect(decompressedPiece({ ...stored!, length: 2499 })).rejects.toThrow('not of its stated length');
    await expect(decompressedPiece({ ...stored!, length: 2501 })).rejects.toThrow('not of its stated length');
    await expect(decompressedPiece({ ...stored!, data: stored!.data.subarray(0, -1) })).rejects.toThrow();
  });
});
