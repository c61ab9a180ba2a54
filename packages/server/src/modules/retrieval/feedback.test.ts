import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { holdOwnerLocks, lockWaiters } from '../../testing/locks.js';
import { addMemory, expectError } from '../../testing/memories.js';
import { addAll, freshUser, idsOf, query } from '../../testing/retrieval.js';

forEachDialect('POST, GET, DELETE /memory/{id}/feedback', (dialect) => {
  const t = useTestApp(dialect);
  const feedbackRows = (memoryId: number) =>
    t.database.db.selectFrom('feedback').selectAll().where('memory_id', '=', memoryId).execute();

  it('moves the rated memory down for that end user, visibly, until withdrawn', async () => {
    const endUser = freshUser();
    const [first, second] = await addAll(t, ['Coffee at the Blue Door cafe', 'Coffee at the Red Lamp cafe'], {
      endUser,
    });
    const ranked = async () => query(t, { query: 'coffee cafe', explain: true }, { endUser });
    const before = await ranked();
    const top = before[0];
    const runnerUp = before[1];
    expect(idsOf(before).sort()).toEqual([first.id, second.id].sort());
    expect(top.explanation.feedback ?? 0).toBe(0);

    const res = await t.call('POST', `/memory/${top.id}/feedback`, {
      endUser,
      body: { rating: 'negative', query: 'coffee cafe', comment: 'closed now' },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.any(Number),
      memory_id: top.id,
      rating: 'negative',
      query: 'coffee cafe',
      comment: 'closed now',
      withdrawn_at: null,
      created_at: expect.any(String),
    });

    const after = await ranked();
    expect(idsOf(after)).toEqual([runnerUp.id, top.id]);
    expect(after[1].explanation.feedback).toBeLessThan(0);
    expect(after[1].score).toBeLessThan(top.score);

    const listed = await t.call('GET', `/memory/${top.id}/feedback`, { endUser });
    expect(listed.status).toBe(200);
    expect(listed.body.items).toEqual([res.body]);

    const withdrawn = await t.call('DELETE', `/memory/${top.id}/feedback/${res.body.id}`, { endUser });
    expect(withdrawn.status, withdrawn.text).toBe(200);
    expect(withdrawn.body).toMatchObject({ id: res.body.id, withdrawn_at: expect.any(String) });
    const restored = await ranked();
    expect(idsOf(restored)).toEqual(idsOf(before));
    expect(restored[0].explanation.feedback ?? 0).toBe(0);
    expect(restored[0].score).toBeCloseTo(top.score, 6);
    expectError(await t.call('DELETE', `/memory/${top.id}/feedback/${res.body.id}`, { endUser }), 404, 'not_found');
    expect((await t.call('GET', `/memory/${top.id}/feedback`, { endUser })).body.items).toEqual([withdrawn.body]);

    // Positive feedback lifts the runner-up above the other.
    expect(
      (await t.call('POST', `/memory/${runnerUp.id}/feedback`, { endUser, body: { rating: 'positive' } })).status,
    ).toBe(201);
    const lifted = await ranked();
    expect(lifted[0]).toMatchObject({ id: runnerUp.id, explanation: { feedback: expect.any(Number) } });
    expect(lifted[0].explanation.feedback).toBeGreaterThan(0);
  });

  it("answers 404 for another end user's memory, and 400 for a bad rating", async () => {
    const owner = freshUser();
    const m = await addMemory(t, 'Private note about the move', { endUser: owner });
    const stranger = freshUser();
    expectError(
      await t.call('POST', `/memory/${m.id}/feedback`, { endUser: stranger, body: { rating: 'negative' } }),
      404,
      'not_found',
    );
    expectError(await t.call('GET', `/memory/${m.id}/feedback`, { endUser: stranger }), 404, 'not_found');
    const mine = await t.call('POST', `/memory/${m.id}/feedback`, { endUser: owner, body: { rating: 'negative' } });
    expectError(
      await t.call('DELETE', `/memory/${m.id}/feedback/${mine.body.id}`, { endUser: stranger }),
      404,
      'not_found',
    );
    expect(await feedbackRows(m.id)).toHaveLength(1);
    expectError(
      await t.call('POST', `/memory/999999/feedback`, { endUser: owner, body: { rating: 'positive' } }),
      404,
      'not_found',
    );
    for (const [body, field] of [
      [{ rating: 'meh' }, 'rating'],
      [{}, 'rating'],
      [{ rating: 'positive', note: 'x' }, 'note'],
      [{ rating: 'positive', query: '' }, 'query'],
    ] as const) {
      expectError(
        await t.call('POST', `/memory/${m.id}/feedback`, { endUser: owner, body }),
        400,
        'validation_error',
        field,
      );
    }
    expectError(
      await t.call('POST', `/memory/${m.id}/feedback`, { body: { rating: 'positive' }, endUser: null }),
      400,
      'validation_error',
      'X-End-User-ID',
    );
  });

  it('deletes the feedback rows with the memory when it is forgotten', async () => {
    const endUser = freshUser();
    const m = await addMemory(t, 'Feedback that must not outlive its memory', { endUser });
    for (const rating of ['positive', 'negative']) {
      expect(
        (await t.call('POST', `/memory/${m.id}/feedback`, { endUser, body: { rating, comment: 'quotes the memory' } }))
          .status,
      ).toBe(201);
    }
    expect(await feedbackRows(m.id)).toHaveLength(2);
    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [m.id] } })).body).toEqual([m.id]);
    expect(await feedbackRows(m.id)).toEqual([]);
    expectError(await t.call('GET', `/memory/${m.id}/feedback`, { endUser }), 404, 'not_found');
  });

  it.runIf(dialect === 'postgres')(
    'answers 404 for feedback on a memory forgotten while it waited, keeping no row',
    async () => {
      const endUser = freshUser();
      const m = await addMemory(t, 'Rated while forgotten', { endUser });
      // The forget queues first for the owner's lock, then the feedback, which has read the memory live unless it waits first.
      const lock = await holdOwnerLocks(t, [endUser]);
      const forgetting = t.call('DELETE', '/memory/forget', { endUser, body: { ids: [m.id] } });
      await lockWaiters(t, 1, 'the forget to wait for the owner lock');
      const rating = t.call('POST', `/memory/${m.id}/feedback`, {
        endUser,
        body: { rating: 'negative', comment: 'quotes the memory' },
      });
      await lockWaiters(t, 2, 'the feedback to wait behind it');
      await lock.release();
      expect((await forgetting).body).toEqual([m.id]);
      expectError(await rating, 404, 'not_found');
      expect(await feedbackRows(m.id)).toEqual([]);
    },
  );
});
