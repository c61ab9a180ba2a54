import { expect, it } from 'vitest';
import { forEachDialect, useTestApp, type TestApp } from '../../testing/harness.js';
import { holdUncommitted, lockWaiterCount, lockWaiters } from '../../testing/locks.js';
import { addMemory, expectAudited, expectError, historyRows, withEffects } from '../../testing/memories.js';
import { freshUser, idsOf, query, setColumns } from '../../testing/retrieval.js';
import { until } from '../../testing/until.js';

/** Adds memories stated at the given times (set before any intelligence read of this end user). */
async function stated(t: TestApp, endUser: string, items: Array<[string, string]>): Promise<number[]> {
  const out: number[] = [];
  for (const [text, at] of items) {
    const m = await addMemory(t, text, { endUser });
    await setColumns(t, m.id, { created_at: at });
    out.push(m.id as number);
  }
  return out;
}

const get = async (t: TestApp, url: string, endUser: string) => {
  const res = await t.call('GET', url, { endUser });
  expect(res.status, res.text).toBe(200);
  return res.body;
};

forEachDialect('intelligence: graph, decisions, clusters, report, ontology', (dialect) => {
  const t = useTestApp(dialect);

  it('builds a graph whose single-valued facts end when a new value is stated, answers as_of, and merges short names', async () => {
    const endUser = freshUser();
    const [paris, berlin, mel1] = await stated(t, endUser, [
      ['I live in Paris.', '2024-01-10T10:00:00.000Z'],
      ['I moved to Berlin last spring.', '2024-06-01T10:00:00.000Z'],
      ['My friend Melanie works at Google.', '2024-02-01T10:00:00.000Z'],
      ['Mel said she loves pottery.', '2024-03-01T10:00:00.000Z'],
    ]);
    const graph = await get(t, '/memory/graph', endUser);
    const node = (id: string) => graph.nodes.find((n: any) => n.id === id);
    expect(node('self')).toMatchObject({ name: endUser, type: 'person', is_end_user: true });
    expect(node('place:paris')).toMatchObject({ name: 'Paris', memory_ids: [paris] });
    expect(node('person:melanie')).toMatchObject({ name: 'Melanie', aliases: ['Mel'] });
    const edge = (target: string) => graph.edges.find((e: any) => e.target === target);
    expect(edge('place:paris')).toMatchObject({
      source: 'self',
      type: 'lives_in',
      memory_ids: [paris],
      valid_at: '2024-01-10T10:00:00.000Z',
      invalid_at: '2024-06-01T10:00:00.000Z',
      invalidated_by: berlin,
    });
    expect(edge('place:berlin')).toMatchObject({
      source: 'self',
      type: 'lives_in',
      memory_ids: [berlin],
      invalid_at: null,
      invalidated_by: null,
    });
    expect(edge('organization:google')).toMatchObject({
      source: 'person:melanie',
      type: 'works_at',
      memory_ids: [mel1],
    });
    expect(edge('concept:pottery')).toMatchObject({ source: 'person:melanie', type: 'likes' });

    const then = await get(t, '/memory/graph?as_of=2024-03-15T00:00:00Z', endUser);
    expect(then.as_of).toBe('2024-03-15T00:00:00.000Z');
    expect(then.edges.map((e: any) => e.target).sort()).toEqual([
      'concept:pottery',
      'organization:google',
      'place:paris',
    ]);

    const mel = await get(t, '/memory/graph?entity=mel', endUser);
    expect(mel.nodes.map((n: any) => n.id).sort()).toEqual([
      'concept:pottery',
      'organization:google',
      'person:melanie',
    ]);
    const places = await get(t, '/memory/graph?type=place', endUser);
    expect(places.nodes.map((n: any) => n.id).sort()).toEqual(['place:berlin', 'place:paris', 'self']);
    expect((await get(t, '/memory/graph?entity=nobody', endUser)).nodes).toEqual([]);
    expect((await get(t, '/memory/graph?limit=1', endUser)).nodes).toHaveLength(1);
    expectError(await t.call('GET', '/memory/graph?as_of=yesterday', { endUser }), 400, 'validation_error', 'as_of');
    expectError(await t.call('GET', '/memory/graph?limit=0', { endUser }), 400, 'validation_error', 'limit');
    expectError(await t.call('GET', '/memory/graph', { endUser: null }), 400, 'validation_error', 'X-End-User-ID');
  });

  it('shows the relations between memories (linked and summarized) beside the entity graph, current on every read', async () => {
    const endUser = freshUser();
    const [paris, berlin, mel] = await stated(t, endUser, [
      ['I live in Paris.', '2024-01-10T10:00:00.000Z'],
      ['I moved to Berlin last spring.', '2024-06-01T10:00:00.000Z'],
      ['My friend Melanie works at Google.', '2024-02-01T10:00:00.000Z'],
    ]);
    expect((await get(t, '/memory/graph', endUser)).memory_relations).toEqual([]);
    // Relations do not move the end user's revision: a graph read just before must not hide them.
    const linked = await t.call('POST', '/memory/relations', {
      endUser,
      body: { source_id: berlin, target_id: paris, type: 'updates' },
    });
    expect(linked.status, linked.text).toBe(201);
    const summary = await t.call('POST', '/memory/summarize', { endUser, body: { memory_ids: [paris, mel] } });
    expect(summary.status, summary.text).toBe(201);
    const summaryId = summary.body.memory.id;

    const graph = await get(t, '/memory/graph', endUser);
    const links = (g: any) => g.memory_relations.map((r: any) => [r.type, r.source_id, r.target_id]);
    expect(links(graph)).toEqual([
      ['updates', berlin, paris],
      ['summarizes', summaryId, paris],
      ['summarizes', summaryId, mel],
    ]);
    expect(graph.memory_relations[0]).toMatchObject({
      id: linked.body.id,
      metadata: {},
      created_at: linked.body.created_at,
    });
    // Filtered, only links touching a memory behind the shown entities (the summary mentions Melanie too);
    // as of a time, only links made by then.
    expect(links(await get(t, '/memory/graph?entity=melanie', endUser))).toEqual([
      ['summarizes', summaryId, paris],
      ['summarizes', summaryId, mel],
    ]);
    expect((await get(t, '/memory/graph?as_of=2024-12-31T00:00:00Z', endUser)).memory_relations).toEqual([]);
    expect(links(await get(t, '/memory/graph?limit=1', endUser))).toEqual([['summarizes', summaryId, mel]]);
    // Another end user sees none of them; forgetting a memory takes its links out of the graph.
    expect((await get(t, '/memory/graph', freshUser())).memory_relations).toEqual([]);
    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [berlin] } })).status).toBe(200);
    expect(links(await get(t, '/memory/graph', endUser))).toEqual([
      ['summarizes', summaryId, paris],
      ['summarizes', summaryId, mel],
    ]);
  });

  it("never shows another end user's or another project's knowledge", async () => {
    const owner = freshUser();
    await stated(t, owner, [
      ['I live in Lisbon.', '2024-01-01T00:00:00.000Z'],
      ['I moved to Madrid.', '2024-02-01T00:00:00.000Z'],
    ]);
    const decision = (await get(t, '/memory/decisions', owner)).items[0];
    expect(decision).toBeDefined();
    const stranger = freshUser();
    for (const url of [
      '/memory/graph',
      '/memory/decisions',
      '/memory/clusters',
      '/memory/intelligence',
      '/memory/knowledge/stats',
    ]) {
      const body = await get(t, url, stranger);
      expect(JSON.stringify(body)).not.toMatch(/Lisbon|Madrid/);
    }
    expect((await get(t, '/memory/knowledge/stats', stranger)).memories).toBe(0);
    expectError(
      await t.call('POST', `/memory/decision/${decision.id}/resolve`, {
        endUser: stranger,
        body: { resolution: 'dismiss' },
      }),
      404,
      'not_found',
    );
    const other = await t.otherTenant();
    const foreign = await t.call('GET', '/memory/graph', { endUser: owner, key: other.key, project: other.projectId });
    expect(foreign.status).toBe(200);
    expect(foreign.body.nodes).toEqual([]);
    expectError(
      await t.call('POST', `/memory/decision/${decision.id}/resolve`, {
        endUser: owner,
        key: other.key,
        project: other.projectId,
        body: { resolution: 'dismiss' },
      }),
      404,
      'not_found',
    );
    expectError(await t.call('GET', '/memory/graph', { endUser: owner, project: other.projectId }), 404, 'not_found');
    expect(await t.database.db.selectFrom('decision_resolutions').selectAll().execute()).toEqual([]);
  });

  it('lists conflicts with a suggested resolution; keep_one supersedes the other memory, audited, once', async () => {
    const endUser = freshUser();
    const [old, recent] = (await stated(t, endUser, [
      ['I work at Microsoft as an engineer.', '2023-05-01T09:00:00.000Z'],
      ['I started working at Google this year.', '2024-05-01T09:00:00.000Z'],
    ])) as [number, number];
    const [sushi, noSushi] = (await stated(t, endUser, [
      ['I love sushi.', '2023-01-01T09:00:00.000Z'],
      ["I don't love sushi anymore.", '2024-01-01T09:00:00.000Z'],
    ])) as [number, number];
    const listed = await get(t, '/memory/decisions', endUser);
    expect(listed).toMatchObject({ total: 2, offset: 0, limit: 50, has_next: false });
    const [job, food] = listed.items;
    expect(job).toMatchObject({
      id: expect.any(Number),
      kind: 'single_valued',
      subject: { id: 'self', name: endUser },
      attribute: 'works_at',
      values: [
        { memory_id: old, value: 'Microsoft', negated: false },
        { memory_id: recent, value: 'Google', negated: false },
      ],
      suggested_resolution: { resolution: 'keep_one', memory_id: recent, reason: expect.stringContaining('newer') },
      status: 'open',
      resolution: null,
    });
    expect(food).toMatchObject({
      kind: 'negation',
      attribute: 'likes',
      values: [
        { memory_id: sushi, value: 'sushi', negated: false },
        { memory_id: noSushi, value: 'sushi', negated: true },
      ],
    });

    for (const [body, field] of [
      [{ resolution: 'keep_one' }, 'memory_id'],
      [{ resolution: 'keep_one', memory_id: sushi }, 'memory_id'],
      [{ resolution: 'dismiss', memory_id: old }, 'memory_id'],
      [{ resolution: 'maybe' }, 'resolution'],
      [{ resolution: 'dismiss', extra: 1 }, 'extra'],
    ] as const) {
      expectError(
        await t.call('POST', `/memory/decision/${job.id}/resolve`, { endUser, body }),
        400,
        'validation_error',
        field,
      );
    }
    expectError(
      await t.call('POST', '/memory/decision/12345/resolve', { endUser, body: { resolution: 'dismiss' } }),
      404,
      'not_found',
    );

    const resolve = () =>
      t.call('POST', `/memory/decision/${job.id}/resolve`, {
        endUser,
        body: { resolution: 'keep_one', memory_id: recent, note: 'changed jobs' },
        headers: { 'idempotency-key': `resolve-${job.id}` },
      });
    const effects = await withEffects(t, resolve);
    expect(effects.res.status, effects.res.text).toBe(200);
    expect(effects.res.body).toMatchObject({
      id: job.id,
      status: 'resolved',
      resolution: {
        resolution: 'keep_one',
        memory_id: recent,
        note: 'changed jobs',
        actor: { type: 'api_key', id: t.keyId },
        resolved_at: expect.any(String),
      },
    });
    expectAudited(effects, t, { action: 'decision.resolve', target_type: 'decision', target_id: String(job.id) });
    expect(effects.events.map((e) => e.type)).toEqual(['memory.updated', 'decision.resolved']);
    expect(effects.events[1]!.payload).toEqual({
      decision_id: job.id,
      end_user_id: endUser,
      resolution: 'keep_one',
      kept_memory_id: recent,
      memory_ids: [old, recent],
    });
    const replay = await resolve();
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(effects.res.body);
    expectError(
      await t.call('POST', `/memory/decision/${job.id}/resolve`, { endUser, body: { resolution: 'dismiss' } }),
      409,
      'conflict',
    );

    expect((await get(t, `/memory/${old}`, endUser)).superseded_by).toBe(recent);
    expect((await get(t, `/memory/${recent}`, endUser)).superseded_by).toBeNull();
    const history = await historyRows(t, old);
    expect(history.at(-1)).toMatchObject({ action: 'supersede' });
    expect(JSON.stringify(history.at(-1)!.changes)).toContain(`Decision ${job.id}`);
    // The superseded statement ranks below its successor even where it matches the query better.
    const ranked = await query(t, { query: 'work at Microsoft engineer' }, { endUser });
    expect(idsOf(ranked).indexOf(recent)).toBeLessThan(idsOf(ranked).indexOf(old));

    expect((await get(t, '/memory/decisions?status=resolved', endUser)).items.map((d: any) => d.id)).toEqual([job.id]);
    expect((await get(t, '/memory/decisions?status=open', endUser)).items.map((d: any) => d.id)).toEqual([food.id]);
    const dismissed = await t.call('POST', `/memory/decision/${food.id}/resolve`, {
      endUser,
      body: { resolution: 'dismiss' },
    });
    expect(dismissed.body).toMatchObject({
      status: 'dismissed',
      resolution: { resolution: 'dismiss', memory_id: null },
    });
    expect((await get(t, '/memory/knowledge/stats', endUser)).decisions).toEqual({
      open: 0,
      resolved: 1,
      dismissed: 1,
    });
    expect(await get(t, '/memory/decisions?limit=1', endUser)).toMatchObject({ total: 2, has_next: true });
  });

  it.runIf(dialect === 'postgres')(
    'keeps no resolution made while one of its memories was being forgotten',
    async () => {
      const endUser = freshUser();
      const [lisbon, madrid] = (await stated(t, endUser, [
        ['I live in Lisbon.', '2024-01-01T00:00:00.000Z'],
        ['I moved to Madrid.', '2024-02-01T00:00:00.000Z'],
      ])) as [number, number];
      const [decision] = (await get(t, '/memory/decisions', endUser)).items;
      // Another transaction resolves the same decision and has not ended: the request's insert waits for
      // it, after finding no resolution.
      const other = await holdUncommitted(t, (trx) =>
        trx
          .insertInto('decision_resolutions')
          .values({
            project_id: t.projectId,
            tenant_id: '',
            end_user_id: endUser,
            decision_id: decision.id,
            older_memory_id: lisbon,
            newer_memory_id: madrid,
            resolution: 'dismiss',
            kept_memory_id: null,
            note: null,
            actor_type: 'api_key',
            actor_id: t.keyId,
            created_at: new Date().toISOString(),
          })
          .execute(),
      );
      const resolving = t.call('POST', `/memory/decision/${decision.id}/resolve`, {
        endUser,
        body: { resolution: 'keep_both', note: 'both true' },
      });
      await lockWaiters(t, 1, "the resolution's insert to wait for the other transaction");
      let forgotten = false;
      const forgetting = t
        .call('DELETE', '/memory/forget', { endUser, body: { ids: [lisbon] } })
        .finally(() => (forgotten = true));
      // The forget waits for the request's transaction, or (were the memories not kept live until it commits) is done.
      await until(
        async () => forgotten || (await lockWaiterCount(t)) >= 2,
        'the forget to end or to wait for the resolution',
      );
      await other.release();
      expect((await resolving).status).toBe(200);
      expect((await forgetting).body).toEqual([lisbon]);
      expect(
        await t.database.db.selectFrom('decision_resolutions').selectAll().where('end_user_id', '=', endUser).execute(),
      ).toEqual([]);
    },
  );

  it('finds conflicts between everyday personal facts stated in other words, and leaves compatible ones alone', async () => {
    const endUser = freshUser();
    const day = (n: number) => `2024-02-${String(n).padStart(2, '0')}T09:00:00.000Z`;
    // Each pair: older, newer, and the attribute of the decision expected (null: compatible, none expected).
    const pairs: Array<[string, string, string | null]> = [
      ["I'm 27 years old.", "I'm 28 now.", 'age'],
      ['I play golf every Thursday.', 'I play golf on Fridays now.', 'habit'],
      ['I own a motorbike.', 'I sold my motorbike.', 'has'],
      ['I prefer cats to dogs.', 'I prefer dogs over cats these days.', 'prefers'],
      ["I'm a pharmacist.", "I'm a librarian now.", 'works_as'],
      ["I'm single.", "I'm engaged to Omar.", 'relationship_status'],
      ["I'm vegetarian.", "I'm not vegetarian anymore.", 'is'],
      // Issue 53, session 4: a fact ended by an incompatible one, a fact stated through its use, a preference by "rather".
      ["I'm vegan.", 'I started eating meat again.', 'is'],
      ['I use an Android phone.', 'I switched to an iPhone.', 'phone'],
      ["I'd rather take the train than fly.", "These days I'd rather fly than take the train.", 'prefers'],
      ['I like tea.', 'I like juice.', null],
      ['I go to yoga every Monday.', 'I go to the library every Monday.', null],
      ['My birthday is in March.', "My brother's birthday is in March too.", null],
    ];
    const ids: number[][] = [];
    for (const [i, [older, newer]] of pairs.entries())
      ids.push(
        await stated(t, endUser, [
          [older, day(2 * i + 1)],
          [newer, day(2 * i + 2)],
        ]),
      );
    const listed = await get(t, '/memory/decisions?limit=50', endUser);
    const byOlder = new Map(listed.items.map((d: any) => [d.values[0].memory_id, d]));
    for (const [i, [older, newer, attribute]] of pairs.entries()) {
      const decision: any = byOlder.get(ids[i]![0]!);
      if (attribute === null) expect(decision, `${older} / ${newer}`).toBeUndefined();
      else
        expect(decision, `${older} / ${newer}`).toMatchObject({
          attribute,
          values: [{ memory_id: ids[i]![0] }, { memory_id: ids[i]![1] }],
        });
    }
    expect(listed.total).toBe(pairs.filter((p) => p[2] !== null).length);
    // The newer value is the current fact of the graph; the older one ended when it was stated.
    const graph = await get(t, '/memory/graph?limit=200', endUser);
    const ageEdges = graph.edges.filter((e: any) => e.type === 'age');
    expect(ageEdges.map((e: any) => [e.target, e.invalidated_by])).toEqual([
      ['quantity:27', ids[0]![1]],
      ['quantity:28', null],
    ]);
  });

  it('keeping the older statement keeps its fact current; forgetting removes what a memory alone supported', async () => {
    const endUser = freshUser();
    const [rome, oslo] = (await stated(t, endUser, [
      ['I live in Rome.', '2024-01-01T00:00:00.000Z'],
      ['I moved to Oslo.', '2024-02-01T00:00:00.000Z'],
    ])) as [number, number];
    const [decision] = (await get(t, '/memory/decisions', endUser)).items;
    expect(
      (
        await t.call('POST', `/memory/decision/${decision.id}/resolve`, {
          endUser,
          body: { resolution: 'keep_one', memory_id: rome },
        })
      ).status,
    ).toBe(200);
    const graph = await get(t, '/memory/graph', endUser);
    const current = graph.edges.filter((e: any) => e.invalid_at === null).map((e: any) => e.target);
    expect(current).toEqual(['place:rome']);
    expect(graph.edges.find((e: any) => e.target === 'place:oslo')).toMatchObject({ invalidated_by: rome });

    const marked = await get(t, `/memory/${oslo}`, endUser);
    expect(marked.superseded_by).toBe(rome);
    const forgotten = await withEffects(t, () =>
      t.call('DELETE', '/memory/forget', { endUser, body: { ids: [rome] } }),
    );
    expect(forgotten.res.body).toEqual([rome]);
    // The mark goes as it came: an update of the memory, with its history entry and memory.updated.
    expect(
      forgotten.events.map((e) => [
        e.type,
        (e.payload.memory as { id?: number } | undefined)?.id ?? e.payload.memory_id,
      ]),
    ).toEqual(
      expect.arrayContaining([
        ['memory.updated', oslo],
        ['memory.deleted', rome],
      ]),
    );
    const unmarked = await get(t, `/memory/${oslo}`, endUser);
    expect(unmarked.updated_at > marked.updated_at).toBe(true);
    expect((await historyRows(t, oslo)).at(-1)).toMatchObject({ action: 'supersede' });
    const after = await get(t, '/memory/graph', endUser);
    expect(after.nodes.map((n: any) => n.id)).not.toContain('place:rome');
    expect(after.edges).toEqual([
      expect.objectContaining({ target: 'place:oslo', invalid_at: null, memory_ids: [oslo] }),
    ]);
    expect((await get(t, '/memory/decisions', endUser)).items).toEqual([]);
    expect(
      await t.database.db.selectFrom('decision_resolutions').selectAll().where('end_user_id', '=', endUser).execute(),
    ).toEqual([]);
    expect((await get(t, `/memory/${oslo}`, endUser)).superseded_by).toBeNull();
  });

  it('groups memories by theme deterministically, and reports and counts them', async () => {
    const endUser = freshUser();
    await stated(t, endUser, [
      ['Went hiking in the mountains with my dog on Saturday.', '2024-01-01T00:00:00.000Z'],
      ['The mountains trail was steep but hiking there is my favorite.', '2024-01-02T00:00:00.000Z'],
      ['Planning another hiking trip to the mountains next month.', '2024-01-03T00:00:00.000Z'],
      ['Baked sourdough bread this morning, the crust came out great.', '2024-01-04T00:00:00.000Z'],
      ['My sourdough starter needs feeding before I bake bread again.', '2024-01-05T00:00:00.000Z'],
      ['Tax forms are due in April.', '2024-01-06T00:00:00.000Z'],
    ]);
    const clusters = await get(t, '/memory/clusters', endUser);
    expect(clusters.items).toHaveLength(2);
    expect(clusters.items[0]).toMatchObject({ size: 3, label: expect.stringMatching(/hiking|mountains/) });
    expect(clusters.items[1]).toMatchObject({ size: 2, label: expect.stringMatching(/sourdough|bread/) });
    expect(await get(t, '/memory/clusters', endUser)).toEqual(clusters);

    const report = await get(t, '/memory/intelligence', endUser);
    expect(report).toMatchObject({ clusters: clusters.items, open_decisions: [], revision: expect.any(Number) });
    expect(report.top_entities).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'April', type: 'date' })]),
    );
    const stats = await get(t, '/memory/knowledge/stats', endUser);
    expect(stats).toMatchObject({
      memories: 6,
      summaries: 0,
      clusters: 2,
      decisions: { open: 0, resolved: 0, dismissed: 0 },
    });
    expect(stats.categories).toMatchObject({ hobbies: 3, pets: 1 });
    expect(stats.entities_by_type.date).toBeGreaterThanOrEqual(2);
  });

  it('reads the default ontology, replaces it (validated, audited, idempotent), and reclassifies in a job', async () => {
    const base = await t.call('GET', '/memory/ontology');
    expect(base.status, base.text).toBe(200);
    expect(base.body).toMatchObject({ revision: 0, is_default: true, updated_at: null, reclassification: null });
    expect(base.body.relation_types.find((r: any) => r.name === 'lives_in')).toMatchObject({ single_valued: true });

    const ontology = {
      categories: [{ name: 'music', description: 'Playing music', cues: ['guitar', 'band'] }],
      entity_types: [{ name: 'instrument', description: 'A musical instrument', examples: ['guitar', 'cello'] }],
      relation_types: [
        {
          name: 'plays',
          description: 'An instrument someone plays',
          source_types: ['person'],
          target_types: ['instrument'],
          single_valued: true,
          cues: ['play', 'practice'],
        },
      ],
    };
    const bad = (patch: object) => ({ ...ontology, ...patch });
    for (const [body, field] of [
      [
        bad({ relation_types: [{ ...ontology.relation_types[0], target_types: ['spaceship'] }] }),
        'relation_types/0/target_types/0',
      ],
      [bad({ categories: [ontology.categories[0], ontology.categories[0]] }), 'categories/1/name'],
      [bad({ categories: [{ name: 'Bad Name', description: '', cues: [] }] }), 'categories/0/name'],
      [{ categories: [] }, 'entity_types'],
    ] as const) {
      expectError(await t.call('PUT', '/memory/ontology', { body }), 400, 'validation_error', field);
    }
    expect(await t.database.db.selectFrom('ontologies').selectAll().execute()).toEqual([]);

    const endUser = freshUser();
    await stated(t, endUser, [
      ['I play the cello.', '2024-01-01T00:00:00.000Z'],
      ['I practice guitar every day.', '2024-02-01T00:00:00.000Z'],
    ]);
    expect((await get(t, '/memory/decisions', endUser)).items).toEqual([]);
    const put = () =>
      t.call('PUT', '/memory/ontology', { body: ontology, headers: { 'idempotency-key': 'ontology-1' } });
    const effects = await withEffects(t, put);
    expect(effects.res.status, effects.res.text).toBe(200);
    expect(effects.res.body).toMatchObject({
      ...ontology,
      revision: 1,
      is_default: false,
      reclassification: { kind: 'ontology.reclassify' },
    });
    expectAudited(effects, t, { action: 'ontology.update', target_type: 'ontology', target_id: t.projectId });
    expect(effects.events).toEqual([
      expect.objectContaining({
        type: 'ontology.updated',
        payload: { revision: 1, job_id: effects.res.body.reclassification.id },
      }),
    ]);
    expect((await put()).headers['idempotent-replayed']).toBe('true');

    const job = await until(
      async () => {
        const reclassification = (await t.call('GET', '/memory/ontology')).body.reclassification;
        return reclassification.status === 'succeeded' || reclassification.status === 'failed'
          ? reclassification
          : undefined;
      },
      'the reclassification job',
      10_000,
    );
    expect(job).toMatchObject({ status: 'succeeded', progress: 1, result: { end_users: expect.any(Number) } });

    const [decision] = (await get(t, '/memory/decisions', endUser)).items;
    expect(decision).toMatchObject({
      kind: 'single_valued',
      attribute: 'plays',
      values: [{ value: 'Cello' }, { value: 'Guitar' }],
    });
    expect((await get(t, '/memory/knowledge/stats', endUser)).categories).toEqual({ music: 1 });
    const other = await t.otherTenant();
    const foreign = await t.call('GET', '/memory/ontology', { key: other.key, project: other.projectId });
    expect(foreign.body).toMatchObject({ revision: 0, is_default: true });
  });
});
