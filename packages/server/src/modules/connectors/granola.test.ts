import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { connectorsClient } from '../../testing/connectors.js';
import { GRANOLA_KEY, startFakeGranola, type FakeGranola, type FakeNote } from '../../testing/fake-granola.js';
import { expectError } from '../../testing/memories.js';
import { decodeJson } from '../../store/database.js';

const note = (
  id: string,
  title: string,
  day: string,
  summary: string,
  transcript: FakeNote['transcript'] = [],
): FakeNote => ({
  id,
  title,
  created_at: `${day}T10:00:00.000Z`,
  updated_at: `${day}T11:00:00.000Z`,
  owner: { name: 'Dana Fox', email: 'dana@example.com' },
  attendees: [
    { name: 'Dana Fox', email: 'dana@example.com' },
    { name: 'Sam Lee', email: 'sam@example.com' },
  ],
  summary_markdown: summary,
  transcript,
});

forEachDialect('Granola meeting notes connector (local Granola API)', (dialect) => {
  let granola: FakeGranola;
  beforeAll(async () => {
    granola = await startFakeGranola();
  });
  afterAll(() => granola?.close());
  const t = useTestApp(dialect, () => ({
    outbound: { allow: ['127.0.0.1'] },
    connectors: { redirectUrl: 'https://console.example.com/cb', vendors: { granola: { baseUrl: granola.base } } },
  }));
  const owner = useOwner(t);
  const endUser = `granola-${dialect}`;
  const live = () =>
    t.database.db
      .selectFrom('memories')
      .selectAll()
      .where('end_user_id', '=', endUser)
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .execute();

  it('syncs summaries and transcript turns, follows edits and deletions, honours 429, stops when cancelled, and reports a revoked key', async () => {
    granola.notes.push(
      note(
        'not_1d3tmYTlCICgjy',
        'Pricing review',
        '2026-02-03',
        '## Decisions\n\nRaise the Pro plan to 49 euros.\n\nKeep the free tier.',
        [
          {
            speaker: { source: 'microphone' },
            text: 'We should raise prices.',
            start_time: '2026-02-03T10:00:05.000Z',
            end_time: '2026-02-03T10:00:08.000Z',
          },
          {
            speaker: { source: 'microphone' },
            text: 'Maybe to 49.',
            start_time: '2026-02-03T10:00:09.000Z',
            end_time: '2026-02-03T10:00:10.000Z',
          },
          {
            speaker: { source: 'speaker', diarization_label: 'Speaker B' },
            text: 'Agreed, 49 it is.',
            start_time: '2026-02-03T10:00:15.000Z',
            end_time: '2026-02-03T10:00:17.000Z',
          },
        ],
      ),
      note('not_2HiringSync01', 'Hiring sync', '2026-02-02', 'Two backend engineers start in April.'),
      note('not_3RoadmapPlan1', 'Roadmap', '2026-02-01', 'Offline mode ships in Q3.'),
    );
    const c = connectorsClient(t, owner);
    const base = { provider: 'granola', name: 'Meetings', end_user_id: endUser, config: { page_size: 2 } };
    expectError(
      await c.call('POST', '/connectors/connections', {
        body: { ...base, credentials: { api_key: 'grn_wrongwrongwrong' } },
      }),
      400,
      'validation_error',
      'credentials',
    );
    expectError(
      await c.call('POST', '/connectors/connections', { body: base }),
      400,
      'validation_error',
      'credentials',
    );
    const connection = await c.create({ ...base, credentials: { api_key: GRANOLA_KEY } });

    granola.rateLimitNextList = true;
    const listsBefore = granola.requests.filter((r) => r.path === '/v1/notes').length;
    const first = await c.waitForSync((await c.sync(connection.id)).id);
    expect(first).toMatchObject({ status: 'succeeded', progress: { created: 3, failed: 0 } });
    // A 429, then the two pages.
    expect(granola.requests.filter((r) => r.path === '/v1/notes').length).toBe(listsBefore + 3);
    const memories = await live();
    expect(memories.map((m) => [m.text, m.speaker, new Date(m.created_at).toISOString()])).toEqual([
      ['Offline mode ships in Q3.', null, '2026-02-01T10:00:00.000Z'],
      ['Two backend engineers start in April.', null, '2026-02-02T10:00:00.000Z'],
      ['## Decisions\n\nRaise the Pro plan to 49 euros.\n\nKeep the free tier.', null, '2026-02-03T10:00:00.000Z'],
      ['We should raise prices. Maybe to 49.', 'Dana Fox', '2026-02-03T10:00:05.000Z'],
      ['Agreed, 49 it is.', 'Speaker B', '2026-02-03T10:00:15.000Z'],
    ]);
    expect(memories[4]!.session_id).toBe('granola:not_1d3tmYTlCICgjy');
    expect(decodeJson<any>(memories[4]!.metadata).granola).toMatchObject({
      note_id: 'not_1d3tmYTlCICgjy',
      title: 'Pricing review',
      kind: 'transcript',
      attendees: ['Dana Fox', 'Sam Lee'],
      start_time: '2026-02-03T10:00:15.000Z',
    });
    expect(granola.requests.find((r) => r.path === '/v1/notes/not_1d3tmYTlCICgjy')!.query.get('include')).toBe(
      'transcript',
    );

    // An edited note is read again (its updated_at changed); unchanged notes are not; a deleted note is forgotten.
    Object.assign(granola.notes[1]!, {
      summary_markdown: 'Three backend engineers start in April.',
      updated_at: '2026-02-04T09:00:00.000Z',
    });
    granola.notes.splice(2, 1);
    const detailsBefore = granola.requests.filter((r) => r.path.startsWith('/v1/notes/')).length;
    const second = await c.waitForSync((await c.sync(connection.id)).id);
    expect(second).toMatchObject({
      status: 'succeeded',
      progress: { updated: 1, unchanged: 1, deleted: 1, created: 0 },
    });
    expect(granola.requests.filter((r) => r.path.startsWith('/v1/notes/')).length).toBe(detailsBefore + 1);
    expect((await live()).map((m) => m.text)).toEqual([
      'Three backend engineers start in April.',
      '## Decisions\n\nRaise the Pro plan to 49 euros.\n\nKeep the free tier.',
      'We should raise prices. Maybe to 49.',
      'Agreed, 49 it is.',
    ]);

    // Cancelled mid-way, on the second page.
    granola.notes.push(note('not_4OldRetro0001', 'Retro', '2026-01-15', 'Deploys on Fridays stop.'));
    const held = granola.holdNextPage();
    const third = await c.sync(connection.id);
    await held.reached;
    expect((await c.call('POST', `/connectors/syncs/${third.id}/cancel`)).status).toBe(200);
    held.release();
    expect(await c.waitForSync(third.id)).toMatchObject({ status: 'cancelled' });
    const cancelled = await t.database.db
      .selectFrom('connector_syncs')
      .selectAll()
      .where('id', '=', third.id)
      .executeTakeFirstOrThrow();
    expect(cancelled).toMatchObject({ status: 'cancelled', deleted: 0 });
    expect((await c.waitForSync((await c.sync(connection.id)).id)).status).toBe('succeeded');
    expect((await live()).map((m) => m.text)).toContain('Deploys on Fridays stop.');

    // The key is revoked in Granola: the sync fails, the connection is in error until new credentials are given.
    granola.keys.clear();
    const failed = await c.waitForSync((await c.sync(connection.id)).id);
    expect(failed).toMatchObject({ status: 'failed', error: expect.stringContaining('API key') });
    const row = await t.database.db
      .selectFrom('connector_connections')
      .selectAll()
      .where('id', '=', connection.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ state: 'error' });
    expect(row.credentials).not.toContain(GRANOLA_KEY);
    expect(await live()).toHaveLength(5);
    granola.keys.add('grn_SecondKey0987654321');
    const patched = await c.call('PATCH', `/connectors/connections/${connection.id}`, {
      body: { credentials: { api_key: 'grn_SecondKey0987654321' } },
    });
    expect(patched.body).toMatchObject({ state: 'active' });
  });
});
