import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeVector } from './embeddings.js';
import { REFRESH_JOB } from './engine.js';
import { purgeFinishedJobs } from '../../jobs/runner.js';
import { encodeJson } from '../../store/database.js';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { expectError } from '../../testing/memories.js';
import {
  addAll,
  freshUser,
  idsOf,
  query,
  retrievalConfig,
  startFakeEmbedder,
  waitForJob,
  type FakeEmbedder,
} from '../../testing/retrieval.js';
import { until } from '../../testing/until.js';
import type { IndexCache } from './index-cache.js';

forEachDialect('POST /memory/refresh and GET /memory/refresh/{job_id}', (dialect) => {
  const t = useTestApp(dialect);

  it('runs the rebuild as a background job whose progress can be read', async () => {
    const endUser = freshUser();
    await addAll(t, ['First thing to embed', 'Second thing to embed'], { endUser });
    await addAll(t, ['Someone else’s thing'], { endUser: freshUser() });

    const res = await t.call('POST', '/memory/refresh', { endUser });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({
      id: expect.any(Number),
      kind: 'embeddings.refresh',
      status: expect.stringMatching(/queued|running|succeeded/),
    });
    const done = await waitForJob(t, res.body.id);
    expect(done).toMatchObject({
      id: res.body.id,
      status: 'succeeded',
      progress: 1,
      error: null,
      result: { memories: 2, embedder: 'builtin' },
    });

    // Without X-End-User-ID the whole project is rebuilt.
    const project = await t.call('POST', '/memory/refresh', { endUser: null });
    expect(project.status).toBe(202);
    expect((await waitForJob(t, project.body.id, { endUser: null })).result).toMatchObject({ memories: 3 });
  });

  it('retention deletes finished jobs older than the cutoff (their progress is 404 then); queued ones stay', async () => {
    const endUser = freshUser();
    await addAll(t, ['Something to embed'], { endUser });
    const started = [] as number[];
    for (let i = 0; i < 2; i++) {
      const res = await t.call('POST', '/memory/refresh', { endUser });
      expect(res.status).toBe(202);
      expect((await waitForJob(t, res.body.id)).status).toBe('succeeded');
      started.push(res.body.id);
    }
    const longAgo = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await t.database.db.updateTable('jobs').set({ updated_at: longAgo }).where('id', '=', started[0]!).execute();
    // Queued long ago and not yet run (its run is an hour away): never a candidate.
    const queued = (
      await t.database.db
        .insertInto('jobs')
        .values({
          kind: REFRESH_JOB,
          project_id: t.projectId,
          payload: encodeJson({ tenantId: '', endUserId: endUser }),
          status: 'queued',
          progress: 0,
          attempts: 0,
          run_after: new Date(Date.now() + 3_600_000).toISOString(),
          created_at: longAgo,
          updated_at: longAgo,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;

    expect(await purgeFinishedJobs(t.database.db, new Date(Date.now() - 30 * 86_400_000).toISOString(), 1)).toBe(1);
    expectError(await t.call('GET', `/memory/refresh/${started[0]}`, { endUser }), 404, 'not_found');
    expect((await t.call('GET', `/memory/refresh/${started[1]}`, { endUser })).body.status).toBe('succeeded');
    expect(
      (await t.database.db.selectFrom('jobs').select('status').where('id', '=', queued).executeTakeFirstOrThrow())
        .status,
    ).toBe('queued');
    await t.database.db.deleteFrom('jobs').where('id', '=', queued).execute();
  });

  it("hides another project's jobs and refuses keys without the write scope", async () => {
    const res = await t.call('POST', '/memory/refresh', { endUser: null });
    const other = await t.otherTenant();
    expectError(
      await t.call('GET', `/memory/refresh/${res.body.id}`, { key: other.key, project: other.projectId }),
      404,
      'not_found',
    );
    expectError(await t.call('GET', '/memory/refresh/987654321'), 404, 'not_found');
    expectError(await t.call('GET', '/memory/refresh/0'), 400, 'validation_error', 'job_id');
    const reader = await t.newKey({ scopes: ['memories:read'] });
    expectError(await t.call('POST', '/memory/refresh', { key: reader.key }), 403, 'forbidden');
    expect((await t.call('GET', `/memory/refresh/${res.body.id}`, { key: reader.key })).status).toBe(200);
    await waitForJob(t, res.body.id);
  });
});

forEachDialect('retrieval with an OpenAI-compatible embedder', (dialect) => {
  let fake: FakeEmbedder;
  beforeAll(async () => {
    fake = await startFakeEmbedder();
  });
  afterAll(() => fake?.close());
  const t = useTestApp(dialect, () => ({
    ...retrievalConfig({ embedder: { kind: 'openai', baseUrl: fake.baseUrl, model: 'fake-embed' } }),
  }));

  const storedVectors = async () => {
    const rows = await t.database.db.selectFrom('memory_embeddings').selectAll().orderBy('memory_id').execute();
    return rows.map((r) => ({
      memory_id: r.memory_id,
      embedder: r.embedder,
      project_id: r.project_id,
      vector: Array.from(decodeVector(r.vector)),
    }));
  };
  const expectVectorsOf = async (memories: Array<{ id: number; text: string }>) => {
    const stored = await storedVectors();
    expect(stored.map((s) => s.memory_id)).toEqual(idsOf(memories));
    stored.forEach((s, i) => {
      expect(s).toMatchObject({ embedder: 'openai:fake-embed', project_id: t.projectId });
      const expected = fake.vector(memories[i]!.text);
      s.vector.forEach((x, j) => expect(x).toBeCloseTo(expected[j]!, 5));
    });
  };

  it('stores vectors, ranks by them, deletes them on forget and rebuilds them on refresh', async () => {
    const endUser = freshUser();
    const [hound, car, food] = await addAll(
      t,
      ['Rex is my loyal hound', 'I drive an old automobile', 'We had sushi on Friday'],
      { endUser },
    );

    // No word in common with the hound memory: only the vectors can find it, once they are embedded
    // (in the background: the first query builds the index from the words at once).
    const found = await until(async () => {
      const ranked = await query(t, { query: 'canine', explain: true }, { endUser });
      return ranked[0]?.id === hound.id && ranked;
    }, 'the hound memory found by its vector');
    expect(found[0]).toMatchObject({ id: hound.id, explanation: { semantic: expect.any(Number) } });
    for (const other of found.slice(1)) expect(other.explanation.semantic).toBeLessThan(found[0].explanation.semantic);
    expect(found[0].explanation.lexical ?? 0).toBe(0);
    expect(fake.requests.every((r) => r.model === 'fake-embed' && Array.isArray(r.input))).toBe(true);
    expect(fake.requests.flatMap((r) => r.input)).toEqual(
      expect.arrayContaining([hound.text, car.text, food.text, 'canine']),
    );
    await expectVectorsOf([hound, car, food]);
    expect(idsOf(await query(t, 'vehicle', { endUser }))[0]).toBe(car.id);

    // Vectors are computed once: a further query embeds only the query text.
    const embedded = fake.requests.flatMap((r) => r.input).length;
    expect(idsOf(await query(t, 'dinner', { endUser }))[0]).toBe(food.id);
    expect(fake.requests.flatMap((r) => r.input).length).toBe(embedded + 1);

    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [hound.id] } })).body).toEqual([hound.id]);
    await expectVectorsOf([car, food]);
    expect(idsOf(await query(t, 'canine', { endUser }))).not.toContain(hound.id);

    // An embedder change: every vector moves; refresh recomputes the stored ones.
    fake.generation = 1;
    const job = await t.call('POST', '/memory/refresh', { endUser });
    expect(job.status).toBe(202);
    expect(await waitForJob(t, job.body.id)).toMatchObject({
      status: 'succeeded',
      result: { memories: 2, embedder: 'openai:fake-embed' },
    });
    await expectVectorsOf([car, food]);
    const [best] = await query(t, { query: 'vehicle', explain: true }, { endUser });
    expect(best.id).toBe(car.id);
    expect(best.explanation.semantic).toBeGreaterThan(0.2);
  });

  it('stores no vector of a memory forgotten while it was being embedded', async () => {
    const endUser = freshUser();
    const [kept, gone] = await addAll(t, ['My sedan is blue', 'The secret puppy is called Biscuit'], { endUser });
    let asked!: () => void;
    const embedding = new Promise<void>((resolve) => (asked = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    fake.hold = async (input) => {
      if (!input.includes(gone.text)) return;
      asked();
      await released;
    };
    // The query answers by words at once; the two memories are embedded behind it, in one batch.
    expect(idsOf(await query(t, 'sedan', { endUser }))).toEqual([kept.id]);
    await embedding;
    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [gone.id] } })).body).toEqual([gone.id]);
    release();
    const stored = await until(async () => {
      const rows = await t.database.db
        .selectFrom('memory_embeddings')
        .select('memory_id')
        .where('memory_id', 'in', [kept.id, gone.id])
        .execute();
      return rows.length > 0 && rows;
    }, 'the kept memory embedded');
    fake.hold = null;
    expect(stored.map((r) => r.memory_id)).toEqual([kept.id]);
    await until(
      async () => idsOf(await query(t, 'vehicle', { endUser }))[0] === kept.id,
      'the kept memory found by its vector',
    );
  });

  it('keeps an add fast and findable by its words at once, embeds in batches in the background, and embeds a text once', async () => {
    const endUser = freshUser();
    const texts = [
      'My puppy chewed the sofa',
      'The sedan needs new tyres',
      'Dinner was ramen again',
      'Tea in the garden',
      'A rainy walk',
    ];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The provider holds every call with a memory's text: adds and word queries answer meanwhile.
    fake.hold = async (input) => {
      if (input.some((text) => texts.includes(text))) await released;
    };
    const before = fake.requests.length;
    const added = await addAll(t, texts, { endUser });
    expect(idsOf(await query(t, 'sofa', { endUser }))).toEqual([added[0]!.id]);
    expect(idsOf(await query(t, 'ramen', { endUser }))).toEqual([added[2]!.id]);
    release();
    // One call for the five memories (the queries' own texts are embedded one by one, as they come).
    const calls = () => fake.requests.slice(before).filter((r) => r.input.some((text) => texts.includes(text)));
    await until(
      async () => (await query(t, 'canine', { endUser }))[0]?.id === added[0]!.id,
      'the puppy memory found by its vector',
    );
    fake.hold = null;
    expect(calls()).toHaveLength(1);
    expect([...calls()[0]!.input].sort()).toEqual([...texts].sort());
    // The same text for another end user: stored for it too, from the text-hash cache (no call).
    const other = freshUser();
    const [again] = await addAll(t, [texts[1]!], { endUser: other });
    await until(
      async () => (await query(t, 'automobile', { endUser: other }))[0]?.id === again!.id,
      'the copy found by its vector',
    );
    expect(calls()).toHaveLength(1);
    const row = await t.database.db
      .selectFrom('memory_embeddings')
      .select('memory_id')
      .where('memory_id', '=', again!.id)
      .executeTakeFirst();
    expect(row?.memory_id).toBe(again!.id);
  });

  it('embeds a summary rewritten without a forgotten source anew, keeping no vector of its old text', async () => {
    const endUser = freshUser();
    const sources = await addAll(t, ['Rex is my loyal hound', 'I drive an old automobile', 'We had sushi on Friday'], {
      endUser,
    });
    const summary = (await t.call('POST', '/memory/summarize', { endUser, body: { memory_ids: idsOf(sources) } })).body
      .memory;
    expect(summary.text).toContain('sushi');
    const vectorOf = async (id: number) => {
      const row = await t.database.db
        .selectFrom('memory_embeddings')
        .select('vector')
        .where('memory_id', '=', id)
        .executeTakeFirst();
      return row && Array.from(decodeVector(row.vector));
    };
    const expectVectorOf = (vector: number[] | undefined, text: string) => {
      const expected = fake.vector(text);
      expect(vector).toHaveLength(expected.length);
      vector!.forEach((x, j) => expect(x).toBeCloseTo(expected[j]!, 5));
    };
    // A query has every memory of the end user embedded (in the background), the summary included.
    await query(t, 'canine', { endUser });
    expectVectorOf(await until(() => vectorOf(summary.id), 'the summary embedded'), summary.text);

    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [sources[2].id] } })).body).toEqual([
      sources[2].id,
    ]);
    const rewritten = (await t.call('GET', `/memory/${summary.id}`, { endUser })).body.text;
    expect(rewritten).not.toContain('sushi');
    // Its old vector went in the forgetting transaction; the index, brought up to date once that committed, may
    // already have the new text embedded, never the old.
    const meanwhile = await vectorOf(summary.id);
    if (meanwhile) expectVectorOf(meanwhile, rewritten);
    await query(t, 'canine', { endUser });
    expectVectorOf(await until(() => vectorOf(summary.id), 'the rewritten summary embedded'), rewritten);
  });
});

forEachDialect('retrieval when the embedding provider is down', (dialect) => {
  // Nothing listens on port 9 (discard) here: every embedding call fails to connect.
  const t = useTestApp(dialect, () => ({
    ...retrievalConfig({ embedder: { kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1', model: 'down' } }),
  }));

  it('answers 503 unavailable, keeps the write, and recovers nothing half-done', async () => {
    const added = await t.call('POST', '/memory/add', { body: { text: 'Writes do not wait for the embedder' } });
    expect(added.status).toBe(201);
    const res = await t.call('POST', '/memory/query', { body: { query: 'embedder' } });
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 'unavailable' });
    expect(res.body.error.message).toContain('embedding provider');
    const stored = await t.database.db.selectFrom('memory_embeddings').selectAll().execute();
    expect(stored).toHaveLength(0);
    expect((await t.call('GET', `/memory/${added.body.id}`)).status).toBe(200);
  });
});

forEachDialect('background embedding while the provider fails', (dialect) => {
  let fake: FakeEmbedder;
  beforeAll(async () => {
    fake = await startFakeEmbedder();
  });
  afterAll(() => fake?.close());
  // In process, to shorten the pauses after a failure.
  const t = useTestApp(dialect, () => ({
    ...retrievalConfig({
      embedder: { kind: 'openai', baseUrl: fake.baseUrl, model: 'fake-embed' },
      searchThread: false,
    }),
  }));
  const cache = () => {
    const c = t.services.retrieval.cache as IndexCache;
    c.embedBackoffMs = 10;
    return c;
  };

  it('tries a failing provider again after a pause until it answers, and keeps the words searchable meanwhile', async () => {
    const endUser = freshUser();
    const texts = ['My puppy chewed the sofa', 'The sedan needs new tyres'];
    const failures = cache().embedded.failures;
    let failed = 0;
    // Unreachable, then rate limiting, then failing: five calls in a row, more than a refused memory's tries.
    fake.fail = (input) =>
      input.some((text) => texts.includes(text)) && failed < 5 ? [502, 429, 503, 500, 408][failed++]! : null;
    const added = await addAll(t, texts, { endUser });
    expect(idsOf(await query(t, 'sofa', { endUser }))).toEqual([added[0]!.id]);
    await until(
      async () => (await query(t, 'canine', { endUser }))[0]?.id === added[0]!.id,
      'the puppy memory found by its vector',
    );
    fake.fail = null;
    expect(failed).toBe(5);
    expect(cache().embedded.failures - failures).toBe(5);
  });

  it('sends a refused batch again a memory a call, and gives up on the memory the provider refuses', async () => {
    const endUser = freshUser();
    const bad = 'A text the provider refuses';
    // Texts no other test embeds (a text embedded in the project before would take its stored vector, no call).
    const texts = ['Our old hound sleeps all day', bad, 'I washed the vehicle on Sunday'];
    const calls: string[][] = [];
    fake.fail = (input) => {
      if (!input.some((text) => texts.includes(text))) return null;
      calls.push(input);
      return input.includes(bad) ? 400 : null;
    };
    const added = await addAll(t, texts, { endUser });
    await query(t, 'sleeps', { endUser });
    await until(
      async () => (await query(t, 'automobile', { endUser }))[0]?.id === added[2]!.id,
      'the sedan memory found by its vector',
    );
    // The batch of three once, then one call a memory; the refused one three times in all.
    await until(
      async () => calls.filter((c) => c.length === 1 && c[0] === bad).length === 3,
      `three tries: ${JSON.stringify(calls)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    fake.fail = null;
    expect(calls[0]!.length).toBe(3);
    expect(calls.filter((c) => c.includes(bad))).toHaveLength(4);
    expect(calls.filter((c) => c.length === 1 && c[0] !== bad)).toHaveLength(2);
    const stored = await t.database.db
      .selectFrom('memory_embeddings')
      .select('memory_id')
      .where('memory_id', 'in', idsOf(added))
      .execute();
    expect(stored.map((s) => s.memory_id).sort((a, b) => a - b)).toEqual([added[0]!.id, added[2]!.id]);
  });
});
