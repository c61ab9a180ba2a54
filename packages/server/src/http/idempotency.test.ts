import { sql } from 'kysely';
import { loadConfig } from '../config.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sha256Hex } from '../core/crypto.js';
import { buildApp } from '../app.js';
import { write } from '../core/unit-of-work.js';
import { ownerOf, writeContextOf } from './auth.js';
import { addMemory } from '../modules/memories/index.js';
import { buildServices } from '../services.js';
import { forEachDialect, startTestApp, type TestApp } from '../testing/harness.js';
import { purgeExpiredIdempotencyKeys } from '../core/idempotency-keys.js';
import { until } from '../testing/until.js';

forEachDialect('Idempotency-Key', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(dialect);
  });
  afterAll(() => t.close());

  const count = async (table: 'memories' | 'audit_log' | 'api_keys') =>
    Number(
      (
        await t.database.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const withKey = (key: string) => ({ headers: { 'idempotency-key': key } });

  it('replays a data-plane write unchanged, and runs it once', async () => {
    const [memories, audits] = [await count('memories'), await count('audit_log')];
    const first = await t.call('POST', '/memory/add', { ...withKey('add-1'), body: { text: 'Drinks oat milk' } });
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const second = await t.call('POST', '/memory/add', { ...withKey('add-1'), body: { text: 'Drinks oat milk' } });
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(second.headers['content-type']).toBe(first.headers['content-type']);
    expect(await count('memories')).toBe(memories + 1);
    expect(await count('audit_log')).toBe(audits + 1);
    // Key order in the body does not make it another request.
    const reordered = await t.call('POST', '/memory/add', { ...withKey('add-2'), body: { text: 'a', tags: ['x'] } });
    const again = await t.call('POST', '/memory/add', {
      ...withKey('add-2'),
      payload: '{"tags":["x"],"text":"a"}',
      headers: { 'idempotency-key': 'add-2', 'content-type': 'application/json' },
    });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(reordered.body);
  });

  it('refuses the same key for a different request with 422', async () => {
    await t.call('POST', '/memory/add', { ...withKey('reuse'), body: { text: 'First use' } });
    const otherBody = await t.call('POST', '/memory/add', { ...withKey('reuse'), body: { text: 'Second use' } });
    expect(otherBody.status).toBe(422);
    expect(otherBody.body.error).toMatchObject({ code: 'idempotency_key_reused', field: 'Idempotency-Key' });
    const otherUser = await t.call('POST', '/memory/add', {
      ...withKey('reuse'),
      endUser: 'user-2',
      body: { text: 'First use' },
    });
    expect(otherUser.status).toBe(422);
    // Another principal has its own keys.
    const other = await t.newKey();
    const mine = await t.call('POST', '/memory/add', {
      ...withKey('reuse'),
      key: other.key,
      body: { text: 'Second use' },
    });
    expect(mine.status).toBe(201);
  });

  it('answers 409 to a duplicate while the first is in flight, and takes over an abandoned claim', async () => {
    // The real plugin stack with one extra route that waits until released, so the race is certain.
    const app = await buildApp({
      services: buildServices({ config: { ...loadConfig({}), logLevel: 'silent' }, database: t.database }),
    });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let runs = 0;
    app.post('/slow', { config: { auth: { scope: 'memories:write', project: 'required' } } }, async () => {
      runs++;
      await gate;
      return { runs };
    });
    await app.ready();
    const send = () =>
      app.inject({
        method: 'POST',
        url: '/slow',
        payload: { n: 1 },
        headers: { 'x-api-key': t.key, 'x-project-id': t.projectId, 'idempotency-key': 'race' },
      });
    try {
      const first = send();
      while (
        !(await t.database.db
          .selectFrom('idempotency_keys')
          .select('key_hash')
          .where('key_hash', '=', sha256Hex('race'))
          .executeTakeFirst())
      ) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      const duplicate = await send();
      expect(duplicate.statusCode).toBe(409);
      expect(duplicate.json().error.code).toBe('idempotency_in_progress');
      expect(duplicate.headers['retry-after']).toBe('1');
      release();
      expect((await first).json()).toEqual({ runs: 1 });
      const replay = await send();
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.json()).toEqual({ runs: 1 });
      expect(runs).toBe(1);
    } finally {
      await app.close();
    }
    const original = await t.call('POST', '/memory/add', { ...withKey('abandoned'), body: { text: 'Only once' } });
    expect(original.status).toBe(201);

    // A process that died between commit and answer leaves a claim with committed results and no response:
    // the retry is recognised at once (no 409 until the lock lapses) and answers what the write did.
    await t.database.db
      .updateTable('idempotency_keys')
      .set({ status: null, response: null })
      .where('key_hash', '=', sha256Hex('abandoned'))
      .execute();
    const memories = await count('memories');
    const retried = await t.call('POST', '/memory/add', { ...withKey('abandoned'), body: { text: 'Only once' } });
    expect(retried.status, retried.text).toBe(201);
    expect(retried.body).toEqual(original.body);
    expect(await count('memories')).toBe(memories);

    // One that died before its write committed leaves no results; once its lock lapses, a retry runs.
    const past = new Date(Date.now() - 1000).toISOString();
    await t.database.db
      .updateTable('idempotency_keys')
      .set({ status: null, response: null, committed: null, locked_until: past })
      .where('key_hash', '=', sha256Hex('abandoned'))
      .execute();
    const rerun = await t.call('POST', '/memory/add', { ...withKey('abandoned'), body: { text: 'Only once' } });
    expect(rerun.status).toBe(200);
    expect(rerun.body).toMatchObject({ status: 'skipped', reason: 'duplicate_text' });
    expect(rerun.headers['idempotent-replayed']).toBeUndefined();
  });

  it('keeps the claim of a request whose writes committed before it failed, and hands the retry those results in order', async () => {
    const app = await buildApp({
      services: buildServices({ config: { ...loadConfig({}), logLevel: 'silent' }, database: t.database }),
    });
    const auth = { auth: { scope: 'memories:write', project: 'required' } } as const;
    let attempt = 0;
    // Three steps, each its own committed write; the first attempt dies (500) after the second step.
    app.post('/steps', { config: auth }, async (request) => {
      attempt++;
      const journal = request.idempotencyClaim!.journal;
      const seen: unknown[] = [];
      for (const step of [1, 2, 3]) {
        // write() replays a step an earlier attempt committed, and records one it runs.
        const value = await write(t.database, writeContextOf(request), async () => ({ step, attempt }));
        seen.push(value.attempt === attempt ? { ran: step } : { replayed: value });
        if (attempt === 1 && step === 2) throw new Error('the process fails after two committed steps');
      }
      return { seen, after: journal.replay() ?? null };
    });
    let failures = 0;
    // Fails before any write on its first attempt: nothing committed, so the key is free again.
    app.post('/fails-first', { config: auth }, async () => {
      if (failures++ === 0) throw new Error('fails before writing');
      return { failures };
    });
    // Answers with no body at all.
    app.post('/empty', { config: auth }, async (_request, reply) => reply.code(202).send());
    await app.ready();
    const send = (url: string, key: string) =>
      app.inject({
        method: 'POST',
        url,
        payload: { n: 1 },
        headers: { 'x-api-key': t.key, 'x-project-id': t.projectId, 'idempotency-key': key },
      });
    const claimOf = (key: string) =>
      t.database.db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('key_hash', '=', sha256Hex(key))
        .executeTakeFirst();
    try {
      const failed = await send('/steps', 'steps');
      expect(failed.statusCode).toBe(500);
      const kept = await claimOf('steps');
      expect(kept).toMatchObject({ status: null, response: null });
      expect(kept!.committed).not.toBeNull();

      const retried = await send('/steps', 'steps');
      expect(retried.statusCode, retried.body).toBe(200);
      expect(retried.json()).toEqual({
        seen: [{ replayed: { step: 1, attempt: 1 } }, { replayed: { step: 2, attempt: 1 } }, { ran: 3 }],
        after: null,
      });
      const replayed = await send('/steps', 'steps');
      expect(replayed.headers['idempotent-replayed']).toBe('true');
      expect(replayed.json()).toEqual(retried.json());
      expect(attempt).toBe(2);

      const firstFailure = await send('/fails-first', 'fails');
      expect(firstFailure.statusCode).toBe(500);
      expect(await claimOf('fails')).toBeUndefined();
      const rerun = await send('/fails-first', 'fails');
      expect(rerun.statusCode).toBe(200);
      expect(rerun.headers['idempotent-replayed']).toBeUndefined();
      expect(rerun.json()).toEqual({ failures: 2 });

      const empty = await send('/empty', 'empty');
      expect(empty.statusCode).toBe(202);
      const emptyAgain = await send('/empty', 'empty');
      expect(emptyAgain.statusCode).toBe(202);
      expect(emptyAgain.headers['idempotent-replayed']).toBe('true');
      expect(emptyAgain.body).toBe('');
    } finally {
      await app.close();
    }
  });

  /** A resolvable promise: the test's hand on a request under way. */
  const signal = () => {
    let done!: () => void;
    const promise = new Promise<void>((resolve) => (done = resolve));
    return [promise, done] as const;
  };
  const lapse = (key: string) =>
    t.database.db
      .updateTable('idempotency_keys')
      .set({ locked_until: new Date(Date.now() - 1000).toISOString() })
      .where('key_hash', '=', sha256Hex(key))
      .execute();

  it("a request whose claim a retry took over writes nothing more and leaves the retry's answer in place", async () => {
    const app = await buildApp({
      services: buildServices({ config: { ...loadConfig({}), logLevel: 'silent' }, database: t.database }),
    });
    const auth = { auth: { scope: 'memories:write', project: 'required' } } as const;
    const [released, release] = signal();
    const committed: number[] = [];
    let runs = 0;
    // Its first run stalls until released (past its lock), then writes; later runs write at once.
    app.post('/stalls', { config: auth }, async (request) => {
      const run = ++runs;
      if (run === 1) await released;
      await write(t.database, writeContextOf(request), async () => ({ run }));
      committed.push(run);
      return { run };
    });
    const [failureReleased, releaseFailure] = signal();
    let failing = 0;
    // Its first run stalls, then fails (500) having written nothing.
    app.post('/stalls-then-fails', { config: auth }, async () => {
      const run = ++failing;
      if (run === 1) {
        await failureReleased;
        throw new Error('fails after its claim was taken over');
      }
      return { run };
    });
    await app.ready();
    const send = (url: string, key: string) =>
      app.inject({
        method: 'POST',
        url,
        payload: { n: 1 },
        headers: { 'x-api-key': t.key, 'x-project-id': t.projectId, 'idempotency-key': key },
      });
    try {
      const stalled = send('/stalls', 'stalled');
      await until(() => runs === 1, 'the first run');
      await lapse('stalled');
      const retried = await send('/stalls', 'stalled');
      expect(retried.json()).toEqual({ run: 2 });
      release();
      const late = await stalled;
      expect(late.statusCode, late.body).toBe(409);
      expect(late.json().error.code).toBe('conflict');
      expect(committed).toEqual([2]);
      const replayed = await send('/stalls', 'stalled');
      expect(replayed.headers['idempotent-replayed']).toBe('true');
      expect(replayed.json()).toEqual({ run: 2 });

      const failed = send('/stalls-then-fails', 'failed');
      await until(() => failing === 1, 'the first run');
      await lapse('failed');
      expect((await send('/stalls-then-fails', 'failed')).json()).toEqual({ run: 2 });
      releaseFailure();
      expect((await failed).statusCode).toBe(500);
      const kept = await send('/stalls-then-fails', 'failed');
      expect(kept.headers['idempotent-replayed']).toBe('true');
      expect(kept.json()).toEqual({ run: 2 });
      expect(failing).toBe(2);
    } finally {
      await app.close();
    }
  });

  it.runIf(dialect === 'postgres')(
    "a retry taking over a claim while its write commits is handed that write's result",
    async () => {
      const app = await buildApp({
        services: buildServices({ config: { ...loadConfig({}), logLevel: 'silent' }, database: t.database }),
      });
      const [lapsed, lockLapsed] = signal();
      const [locked, claimLocked] = signal();
      const [commitReleased, releaseCommit] = signal();
      const writes: number[] = [];
      let runs = 0;
      // Its first run's transaction locks the claim row (as recording its write does, which follows) and waits to be
      // released before it records and commits; a retry replays a committed write.
      app.post('/commits', { config: { auth: { scope: 'memories:write', project: 'required' } } }, async (request) => {
        const run = ++runs;
        const journal = request.idempotencyClaim!.journal;
        const earlier = journal.replay();
        if (earlier) return { run, replayed: earlier.value };
        if (run === 1) await lapsed;
        await write(t.database, writeContextOf(request), async (trx) => {
          if (run === 1) {
            await sql`SELECT 1 FROM idempotency_keys WHERE key_hash = ${sha256Hex('committing')} FOR UPDATE`.execute(
              trx,
            );
            claimLocked();
            await commitReleased;
          }
          return { wrote: run };
        });
        writes.push(run);
        return { run };
      });
      await app.ready();
      const send = () =>
        app.inject({
          method: 'POST',
          url: '/commits',
          payload: { n: 1 },
          headers: { 'x-api-key': t.key, 'x-project-id': t.projectId, 'idempotency-key': 'committing' },
        });
      try {
        const first = send();
        await until(() => runs === 1, 'the first run');
        await lapse('committing');
        lockLapsed();
        await locked;
        const retry = send();
        await until(
          async () =>
            (
              await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%idempotency_keys%'`.execute(
                t.database.db,
              )
            ).rows[0]!.n > 0,
          "the retry's takeover to wait for the write",
          10_000,
        );
        releaseCommit();
        expect((await first).json()).toEqual({ run: 1 });
        expect((await retry).json()).toEqual({ run: 2, replayed: { wrote: 1 } });
        expect(writes).toEqual([1]);
      } finally {
        await app.close();
      }
    },
  );

  it('adds sent together with keys each record their memory, and a retry of one left unanswered is handed it', async () => {
    const keys = Array.from({ length: 12 }, (_, i) => `together-${i}`);
    const body = (i: number) => ({ text: `Keyed memory ${i} sent together`, tags: [`k${i}`] });
    const answers = await Promise.all(
      keys.map((key, i) => t.call('POST', '/memory/add', { ...withKey(key), body: body(i) })),
    );
    expect(answers.map((a) => a.status)).toEqual(keys.map(() => 201));
    const ids = answers.map((a) => a.body.id as number);
    expect(new Set(ids).size).toBe(keys.length);
    const claims = await t.database.db
      .selectFrom('idempotency_keys')
      .select(['key_hash', 'committed', 'committed_id', 'status'])
      .where('key_hash', 'in', keys.map(sha256Hex))
      .execute();
    expect(claims).toHaveLength(keys.length);
    for (const claim of claims) {
      const i = keys.findIndex((key) => sha256Hex(key) === claim.key_hash);
      expect(claim.status).toBe(201);
      expect(claim.committed).not.toBeNull();
      // PostgreSQL records each add's result in its own grouped statement, beside the id that statement gave the row.
      expect(claim.committed_id).toBe(dialect === 'postgres' ? ids[i] : null);
    }

    // The process died after the add committed and before its answer was stored: the retry takes the claim over at
    // once and answers with the committed memory, id included, writing nothing again.
    await t.database.db
      .updateTable('idempotency_keys')
      .set({ status: null, response: null })
      .where('key_hash', '=', sha256Hex(keys[3]!))
      .execute();
    const memories = await count('memories');
    const retried = await t.call('POST', '/memory/add', { ...withKey(keys[3]!), body: body(3) });
    expect(retried.status).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(retried.body).toEqual(answers[3]!.body);
    expect(await count('memories')).toBe(memories);
    const replayed = await t.call('POST', '/memory/add', { ...withKey(keys[3]!), body: body(3) });
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body).toEqual(answers[3]!.body);

    // One key sent several times at once: the add is written once; each request finds it in flight (409), or is
    // answered with that memory (the one that ran it, a replay, or a takeover of its committed, not yet answered, result).
    const before = await count('memories');
    const sent = await Promise.all(
      [0, 1, 2, 3, 4, 5].map(() =>
        t.call('POST', '/memory/add', { ...withKey('sent-together'), body: { text: 'Sent several times at once' } }),
      ),
    );
    expect(await count('memories')).toBe(before + 1);
    const added = sent.filter((a) => a.status === 201);
    expect(added.length).toBeGreaterThan(0);
    for (const answer of sent)
      expect(
        answer.status === 409 || (answer.status === 201 && answer.body.id === added[0]!.body.id),
        JSON.stringify(answer.body),
      ).toBe(true);
  });

  it('an add whose claim a retry took over before it wrote writes nothing and answers 409', async () => {
    const app = await buildApp({
      services: buildServices({ config: { ...loadConfig({}), logLevel: 'silent' }, database: t.database }),
    });
    const [released, release] = signal();
    let runs = 0;
    // The add route's own service; its first run stalls (past its lock) before it writes.
    app.post(
      '/stalled-add',
      { config: { auth: { scope: 'memories:write', endUser: 'required' } } },
      async (request, reply) => {
        if (++runs === 1) await released;
        const outcome = await addMemory(
          t.database,
          writeContextOf(request),
          ownerOf(request),
          request.body as { text: string },
        );
        return reply.code(201).send(outcome);
      },
    );
    await app.ready();
    const send = () =>
      app.inject({
        method: 'POST',
        url: '/stalled-add',
        payload: { text: 'Added by whoever holds the claim' },
        headers: {
          'x-api-key': t.key,
          'x-project-id': t.projectId,
          'x-end-user-id': 'stalled-adder',
          'idempotency-key': 'stalled-add',
        },
      });
    const live = () =>
      t.database.db
        .selectFrom('memories')
        .select('id')
        .where('end_user_id', '=', 'stalled-adder')
        .where('deleted_at', 'is', null)
        .execute();
    try {
      const stalled = send();
      await until(() => runs === 1, 'the first run');
      await lapse('stalled-add');
      const retried = await send();
      expect(retried.statusCode, retried.body).toBe(201);
      const [memory] = await live();
      expect(retried.json()).toMatchObject({ created: { id: memory!.id } });
      // Forgotten since, so the stalled run's text is no duplicate: only its lost claim stops it.
      const forgot = await t.call('DELETE', '/memory/forget', {
        endUser: 'stalled-adder',
        body: { ids: [memory!.id] },
      });
      expect(forgot.body).toEqual([memory!.id]);
      const [memories, audits] = [await count('memories'), await count('audit_log')];
      release();
      const late = await stalled;
      expect(late.statusCode, late.body).toBe(409);
      expect(late.json().error.code).toBe('conflict');
      expect(await live()).toEqual([]);
      expect([await count('memories'), await count('audit_log')]).toEqual([memories, audits]);
      const claim = await t.database.db
        .selectFrom('idempotency_keys')
        .select(['status', 'committed_id'])
        .where('key_hash', '=', sha256Hex('stalled-add'))
        .executeTakeFirstOrThrow();
      // The retry's answer showed the memory forgotten since: it was erased with it, so the replay is 410.
      expect(claim).toEqual({ status: 201, committed_id: null });
      const replayed = await send();
      expect(replayed.statusCode).toBe(410);
      expect(replayed.json().error).toMatchObject({ code: 'gone', field: 'Idempotency-Key' });
    } finally {
      await app.close();
    }
  });

  it('records no key on a read sent as POST: the official clients send one with every POST', async () => {
    await t.call('POST', '/memory/add', { endUser: 'reader-of-keys', body: { text: 'Plays the cello on Sundays' } });
    const claims = async () =>
      Number(
        (
          await t.database.db
            .selectFrom('idempotency_keys')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await claims();
    const query = (text: string) =>
      t.call('POST', '/memory/query', { endUser: 'reader-of-keys', ...withKey('a-read'), body: { query: text, k: 3 } });
    const first = await query('cello');
    expect(first.status).toBe(200);
    expect(first.body.memories[0].text).toBe('Plays the cello on Sundays');
    // The same key again, even for another question, simply reads again: nothing was recorded to replay or refuse.
    const second = await query('what instrument');
    expect(second.status).toBe(200);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    const recall = await t.call('POST', '/v1/memory/recall', {
      headers: { 'idempotency-key': 'a-read', 'x-tenant-id': 'no-such-tenant' },
      body: { tenant_id: 'no-such-tenant', user_id: 'nobody', query: 'cello' },
    });
    expect(recall.status, JSON.stringify(recall.body)).toBe(200);
    expect(await claims()).toBe(before);
    // A write with the same key is recorded as ever.
    expect(
      (
        await t.call('POST', '/memory/add', {
          endUser: 'reader-of-keys',
          ...withKey('a-read'),
          body: { text: 'Also plays the viola' },
        })
      ).status,
    ).toBe(201);
    expect(await claims()).toBe(before + 1);
  });

  it('replays an answered request even after its lock lapsed, and claims nothing for an unknown route', async () => {
    const first = await t.call('POST', '/memory/add', { ...withKey('lapsed'), body: { text: 'Answered long ago' } });
    expect(first.status).toBe(201);
    const past = new Date(Date.now() - 1000).toISOString();
    await t.database.db
      .updateTable('idempotency_keys')
      .set({ locked_until: past })
      .where('key_hash', '=', sha256Hex('lapsed'))
      .execute();
    const memories = await count('memories');
    const again = await t.call('POST', '/memory/add', { ...withKey('lapsed'), body: { text: 'Answered long ago' } });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    // Only the headers the first answer had are replayed.
    for (const name of ['content-type', 'location']) expect(again.headers[name]).toBe(first.headers[name]);
    expect(await count('memories')).toBe(memories);

    for (let i = 0; i < 2; i++) {
      const unknown = await t.call('POST', '/memory/no-such-operation', { ...withKey('nowhere'), body: { text: 'x' } });
      expect(unknown.status).toBe(404);
      expect(unknown.headers['idempotent-replayed']).toBeUndefined();
    }
    expect(
      await t.database.db
        .selectFrom('idempotency_keys')
        .select('key_hash')
        .where('key_hash', '=', sha256Hex('nowhere'))
        .executeTakeFirst(),
    ).toBeUndefined();
  });

  it('covers control-plane writes, replaying a new key without storing its secret in clear', async () => {
    const owner = await t.login();
    const keys = await count('api_keys');
    const first = await t.call('POST', '/org/api-keys', {
      token: owner.token,
      ...withKey('mint'),
      body: { name: 'retry-safe' },
    });
    const second = await t.call('POST', '/org/api-keys', {
      token: owner.token,
      ...withKey('mint'),
      body: { name: 'retry-safe' },
    });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.key).toBe(first.body.key);
    expect(await count('api_keys')).toBe(keys + 1);
    const stored = await t.database.db.selectFrom('idempotency_keys').select(['response', 'key_hash']).execute();
    for (const row of stored) {
      expect(row.response ?? '').not.toContain(first.body.key);
      expect(row.key_hash).not.toBe('mint');
    }
    // The same Idempotency-Key by a user is not the same as by an API key.
    const patch = await t.call('PATCH', `/org/projects/${t.projectId}`, {
      token: owner.token,
      ...withKey('add-1'),
      body: { description: 'x' },
    });
    expect(patch.status).toBe(200);
    const deleted = await t.call('DELETE', `/org/api-keys/${first.body.id}`, {
      token: owner.token,
      ...withKey('revoke'),
    });
    const replayed = await t.call('DELETE', `/org/api-keys/${first.body.id}`, {
      token: owner.token,
      ...withKey('revoke'),
    });
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body).toEqual(deleted.body);

    // Replaying the creation now must not hand out the revoked key's secret (nor call it active).
    const resurrected = await t.call('POST', '/org/api-keys', {
      token: owner.token,
      ...withKey('mint'),
      body: { name: 'retry-safe' },
    });
    expect(resurrected.status, resurrected.text).toBe(409);
    expect(resurrected.body.error.code).toBe('conflict');
    expect(resurrected.text).not.toContain(first.body.key);
    // Nor when the creation is recognised after a crash between commit and answer.
    await t.database.db
      .updateTable('idempotency_keys')
      .set({ status: null, response: null })
      .where('key_hash', '=', sha256Hex('mint'))
      .execute();
    const recovered = await t.call('POST', '/org/api-keys', {
      token: owner.token,
      ...withKey('mint'),
      body: { name: 'retry-safe' },
    });
    expect(recovered.status, recovered.text).toBe(409);
    expect(recovered.text).not.toContain(first.body.key);
    expect(await count('api_keys')).toBe(keys + 1);
  });

  it('rejects a malformed key and purges expired ones', async () => {
    const bad = await t.call('POST', '/memory/add', { ...withKey('x'.repeat(256)), body: { text: 'never' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('Idempotency-Key');
    const past = new Date(Date.now() - 1000).toISOString();
    await t.database.db
      .insertInto('idempotency_keys')
      .values({
        principal: `api_key:${t.keyId}`,
        key_hash: sha256Hex('old'),
        fingerprint: 'f',
        status: 201,
        response: 'sealed',
        created_at: past,
        locked_until: past,
        expires_at: past,
      })
      .execute();
    // An expired key is free again even before the purge runs.
    expect((await t.call('POST', '/memory/add', { ...withKey('old'), body: { text: 'Fresh start' } })).status).toBe(
      201,
    );
    await t.database.db
      .updateTable('idempotency_keys')
      .set({ expires_at: past })
      .where('key_hash', '=', sha256Hex('old'))
      .execute();
    expect(await purgeExpiredIdempotencyKeys(t.database.db)).toBe(1);
    expect(
      await t.database.db
        .selectFrom('idempotency_keys')
        .select('key_hash')
        .where('key_hash', '=', sha256Hex('old'))
        .executeTakeFirst(),
    ).toBeUndefined();
  });
});
