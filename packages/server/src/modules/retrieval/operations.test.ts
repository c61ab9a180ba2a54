import { expect, it } from 'vitest';
import { estimateTokens } from '../../engine/index.js';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { addMemory, expectError } from '../../testing/memories.js';
import {
  addAll,
  fieldOfError,
  freshUser,
  idsOf,
  post200,
  retrievalConfig,
  setColumns,
} from '../../testing/retrieval.js';

const DAY = 86_400_000;
const sumTokens = (memories: Array<{ text: string }>) => memories.reduce((n, m) => n + estimateTokens(m.text), 0);

forEachDialect('POST /memory/retrieve', (dialect) => {
  const t = useTestApp(dialect);

  it('finds the memory for each of several questions in one prompt', async () => {
    const endUser = freshUser();
    const [sister, gym, allergy] = await addAll(
      t,
      [
        "My sister's name is Margarethe and she lives in Vienna",
        'I go to the Ironworks gym on Tuesdays and Fridays',
        'I am allergic to peanuts and carry an epipen',
        'The weather was nice on the weekend',
        'I bought a new phone case yesterday',
        'My favourite colour is teal',
      ],
      { endUser },
    );
    const prompt = [
      "I'm planning my week and need a few reminders from you.",
      'What is the name of my sister?',
      'Which gym do I usually go to?',
      'And remind me, am I allergic to anything?',
    ].join(' ');
    const body = await post200(t, '/memory/retrieve', { prompt, k: 5 }, { endUser });
    expect(idsOf(body.memories)).toEqual(expect.arrayContaining([sister.id, gym.id, allergy.id]));
    expect(body.memories.length).toBeLessThanOrEqual(5);
    expect(body.tokens).toBe(sumTokens(body.memories));
    expect(body.token_budget).toBeNull();
  });

  it('keeps the returned memories within token_budget', async () => {
    const endUser = freshUser();
    await addAll(
      t,
      Array.from(
        { length: 12 },
        (_, i) => `Recipe ${i}: the soup needs ${'carrots, onions and stock, simmered slowly '.repeat(1 + (i % 4))}`,
      ),
      { endUser },
    );
    for (const budget of [1, 20, 45, 100, 10_000]) {
      const body = await post200(
        t,
        '/memory/retrieve',
        { prompt: 'How do I make the soup?', k: 20, token_budget: budget },
        { endUser },
      );
      expect(sumTokens(body.memories)).toBeLessThanOrEqual(budget);
      expect(body.tokens).toBe(sumTokens(body.memories));
      expect(body.token_budget).toBe(budget);
    }
    const all = await post200(
      t,
      '/memory/retrieve',
      { prompt: 'How do I make the soup?', k: 20, token_budget: 10_000 },
      { endUser },
    );
    expect(all.memories).toHaveLength(12);
  });

  it('answers bad input with 400 naming the field and an empty scope with an empty list', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'prompt'],
      [{ prompt: '' }, 'prompt'],
      [{ prompt: '  ' }, 'prompt'],
      [{ prompt: 'x'.repeat(32_001) }, 'prompt'],
      [{ prompt: 'ok', k: 101 }, 'k'],
      [{ prompt: 'ok', token_budget: 0 }, 'token_budget'],
      [{ prompt: 'ok', token_budget: '5' }, 'token_budget'],
    ];
    const got = [];
    for (const [body] of cases) got.push(fieldOfError(await t.call('POST', '/memory/retrieve', { body })));
    expect(got).toEqual(cases.map(([, field]) => field));
    expect(await post200(t, '/memory/retrieve', { prompt: '?!? ... 🎉 北京' }, { endUser: freshUser() })).toEqual({
      memories: [],
      tokens: 0,
      token_budget: null,
    });
  });
});

forEachDialect('POST /memory/search', (dialect) => {
  const t = useTestApp(dialect);
  const search = (endUser: string, body: Record<string, unknown>) => post200(t, '/memory/search', body, { endUser });

  it('routes time phrases to temporal search, which keeps to the named period', async () => {
    const weekStartOf = (ms: number) => Math.floor(ms / DAY) * DAY - ((new Date(ms).getUTCDay() + 6) % 7) * DAY;
    // The server resolves "last week" with its own clock: should the run cross a UTC week boundary
    // (Monday 00:00) between setting up and asking, set up again in the new week.
    const scenario = async () => {
      const endUser = freshUser();
      const now = Date.now();
      const weekStart = weekStartOf(now);
      const [lastWeek, thisWeek, march] = await addAll(
        t,
        ['Went hiking in the hills with Sam', 'Went hiking by the lake with Sam', 'Went hiking in the snow with Sam'],
        { endUser },
      );
      await setColumns(t, lastWeek.id, { created_at: new Date(weekStart - 3 * DAY).toISOString() });
      await setColumns(t, thisWeek.id, { created_at: new Date(now).toISOString() });
      await setColumns(t, march.id, { created_at: '2023-03-15T12:00:00.000Z' });
      const a = await search(endUser, { query: 'where did I go hiking last week?' });
      return { endUser, weekStart, lastWeek, thisWeek, march, a, sameWeek: weekStartOf(Date.now()) === weekStart };
    };
    let run = await scenario();
    if (!run.sameWeek) run = await scenario();
    const { endUser, weekStart, lastWeek, march, a } = run;
    expect(a).toMatchObject({ route: 'temporal', reason: expect.stringContaining('last week') });
    expect(a.range).toEqual({
      from: new Date(weekStart - 7 * DAY).toISOString(),
      to: new Date(weekStart).toISOString(),
      matched: expect.stringMatching(/last week/i),
    });
    expect(idsOf(a.memories)).toEqual([lastWeek.id]);

    const b = await search(endUser, { query: 'hiking with Sam in March 2023' });
    expect(b.route).toBe('temporal');
    expect(b.range).toMatchObject({ from: '2023-03-01T00:00:00.000Z', to: '2023-04-01T00:00:00.000Z' });
    expect(idsOf(b.memories)).toEqual([march.id]);

    // Nothing dated then: the period stops filtering, and the reason says so.
    const c = await search(endUser, { query: 'hiking in March 2021' });
    expect(c.reason).toContain('results come from any time');
    expect(idsOf(c.memories).sort((x, y) => x - y)).toEqual(
      [lastWeek.id, march.id, run.thisWeek.id].sort((x, y) => x - y),
    );
  });

  it('routes "latest" queries to recent, short ones to keyword and descriptive ones to semantic', async () => {
    const endUser = freshUser();
    const [old, mid, recent] = await addAll(
      t,
      [
        'Started learning the violin with a private teacher',
        'Adopted a grey cat called Smudge',
        'Booked flights to Lisbon for the summer',
      ],
      { endUser },
    );
    await setColumns(t, old.id, { created_at: '2022-01-01T00:00:00.000Z' });
    await setColumns(t, mid.id, { created_at: '2023-01-01T00:00:00.000Z' });

    const latest = await search(endUser, { query: 'latest updates' });
    expect(latest).toMatchObject({ route: 'recent', reason: expect.any(String) });
    expect(idsOf(latest.memories)).toEqual([recent.id, mid.id, old.id]);

    const keyword = await search(endUser, { query: 'violin' });
    expect(keyword).toMatchObject({ route: 'keyword', reason: expect.any(String) });
    expect(idsOf(keyword.memories)[0]).toBe(old.id);
    expect(keyword).not.toHaveProperty('range');

    const semantic = await search(endUser, {
      query: 'tell me about the musical instrument I was learning to play with my teacher',
    });
    expect(semantic).toMatchObject({ route: 'semantic', reason: expect.any(String) });
    expect(idsOf(semantic.memories)[0]).toBe(old.id);
  });

  it('honours an explicit route and refuses an unknown one', async () => {
    const endUser = freshUser();
    const [first, second] = await addAll(t, ['Paid the electricity bill', 'Paid the water bill'], { endUser });
    await setColumns(t, first.id, { created_at: '2023-01-01T00:00:00.000Z' });
    const recent = await search(endUser, { query: 'electricity bill', route: 'recent', k: 1 });
    expect(recent).toMatchObject({ route: 'recent', reason: 'route chosen by the caller' });
    expect(idsOf(recent.memories)).toEqual([second.id]);
    const keyword = await search(endUser, {
      query: 'tell me everything about how the electricity bill was paid this time',
      route: 'keyword',
    });
    expect(keyword.route).toBe('keyword');
    expect(idsOf(keyword.memories)[0]).toBe(first.id);
    expect((await search(endUser, { query: 'last week bills', route: 'semantic' })).route).toBe('semantic');
    expect((await search(endUser, { query: 'electricity', route: 'auto' })).route).toBe('keyword');
    for (const route of ['fuzzy', '', 7, null]) {
      expectError(
        await t.call('POST', '/memory/search', { endUser, body: { query: 'bill', route } }),
        400,
        'validation_error',
        'route',
      );
    }
    expectError(
      await t.call('POST', '/memory/search', { endUser, body: { query: ' ' } }),
      400,
      'validation_error',
      'query',
    );
    expectError(
      await t.call('POST', '/memory/search', { endUser, body: { query: 'bill', k: 101 } }),
      400,
      'validation_error',
      'k',
    );
  });
});

forEachDialect('POST /memory/compose', (dialect) => {
  const t = useTestApp(dialect);
  const compose = (body: Record<string, unknown>, endUser: string | null = null) =>
    post200(t, '/memory/compose', body, { endUser });
  const citations = (prompt: string) => [...prompt.matchAll(/\[m:(\d+)\]/g)].map((m) => Number(m[1]));

  it("spans the project's end users without X-End-User-ID, and only one end user with it", async () => {
    const alice = freshUser('alice');
    const bob = freshUser('bob');
    const a = await addMemory(t, 'The quarterly roadmap review is on Thursday', { endUser: alice });
    const b = await addMemory(t, 'The roadmap draft needs a security section', { endUser: bob });
    const other = await t.otherTenant();
    await addMemory(t, 'Roadmap of another organization', { key: other.key, project: other.projectId, endUser: alice });

    const all = await compose({ task: 'Summarise the roadmap work' });
    expect(idsOf(all.memories).sort()).toEqual([a.id, b.id].sort());
    expect(citations(all.prompt).sort()).toEqual(idsOf(all.memories).sort());
    expect(all.prompt).toContain('Summarise the roadmap work');
    expect(all.prompt).not.toContain('another organization');
    expect(all.tokens).toBe(estimateTokens(all.prompt));

    const onlyAlice = await compose({ task: 'Summarise the roadmap work' }, alice);
    expect(idsOf(onlyAlice.memories)).toEqual([a.id]);
    expect(citations(onlyAlice.prompt)).toEqual([a.id]);
    expect(onlyAlice.prompt).toContain(a.text);
  });

  it('fills a custom template and keeps the prompt within token_budget', async () => {
    const endUser = freshUser();
    await addAll(
      t,
      Array.from(
        { length: 10 },
        (_, i) => `Invoice ${i} for the garden project was ${'approved after a long discussion '.repeat(1 + (i % 3))}`,
      ),
      { endUser },
    );
    const custom = await compose(
      { task: 'invoices', template: 'Facts:\n{{memories}}\nDo: {{task}} ({{task}})' },
      endUser,
    );
    expect(custom.prompt.startsWith('Facts:\n[m:')).toBe(true);
    expect(custom.prompt.endsWith('\nDo: invoices (invoices)')).toBe(true);
    for (const budget of [60, 120, 400]) {
      const body = await compose({ task: 'List the garden project invoices', token_budget: budget }, endUser);
      expect(body.tokens).toBeLessThanOrEqual(budget);
      expect(estimateTokens(body.prompt)).toBe(body.tokens);
      expect(citations(body.prompt)).toEqual(idsOf(body.memories));
    }
    const small = await compose({ task: 'List the garden project invoices', token_budget: 60 }, endUser);
    const large = await compose({ task: 'List the garden project invoices', token_budget: 400 }, endUser);
    expect(large.memories.length).toBeGreaterThan(small.memories.length);
  });

  it('quotes the task and the memories verbatim, replacement patterns included', async () => {
    const endUser = freshUser();
    const m = await addMemory(t, "The fee is $5 off; ask for $& and $' at the {{task}} counter", { endUser });
    const task = "What is the fee? Reply with $& or $1, $$ and $'";
    const body = await compose({ task, template: '{{memories}} / {{task}} / {{task}}' }, endUser);
    expect(body.prompt).toBe(`[m:${m.id}] (${m.created_at.slice(0, 10)}) ${m.text} / ${task} / ${task}`);
  });

  it('refuses a template without {{memories}} and other bad input with 400 naming the field', async () => {
    expectError(
      await t.call('POST', '/memory/compose', { endUser: null, body: { task: 'x', template: 'Task: {{task}}' } }),
      400,
      'validation_error',
      'template',
    );
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'task'],
      [{ task: '' }, 'task'],
      [{ task: 'x', template: '' }, 'template'],
      [{ task: 'x', token_budget: 0 }, 'token_budget'],
      [{ task: 'x', token_budget: 2, template: 'A long frame that does not fit {{memories}}' }, 'token_budget'],
    ];
    const got = [];
    for (const [body] of cases)
      got.push(fieldOfError(await t.call('POST', '/memory/compose', { endUser: null, body })));
    expect(got).toEqual(cases.map(([, field]) => field));
  });
});

forEachDialect('POST /memory/compose on a project too large to index whole', (dialect) => {
  const t = useTestApp(dialect, retrievalConfig({ projectIndexMaxMemories: 2 }));

  it('asks for X-End-User-ID instead of loading the whole project', async () => {
    const user = freshUser();
    await addAll(t, ['Invoice paid in March', 'Invoice overdue in April', 'Invoice disputed in May'], {
      endUser: user,
    });
    const whole = await t.call('POST', '/memory/compose', { endUser: null, body: { task: 'invoices' } });
    expectError(whole, 400, 'validation_error', 'X-End-User-ID');
    const one = await post200(t, '/memory/compose', { task: 'invoices' }, { endUser: user });
    expect(one.memories.length).toBeGreaterThan(0);
  });
});
