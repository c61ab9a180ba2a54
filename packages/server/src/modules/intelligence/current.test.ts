import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { addMemory } from '../../testing/memories.js';
import { explained, freshUser, query } from '../../testing/retrieval.js';
import { loadConfig } from '../../config.js';

// Written for this test, after the fact rules and apart from bench/intelligence's sets: an older
// statement, the newer one that changes it, and a question about the attribute.
const CHANGES: Array<[kind: string, older: string, newer: string, question: string]> = [
  ['residence', 'I live in Paris.', 'I moved to Berlin last May.', 'where do I live'],
  ['residence', "I'm based in Chicago.", 'We relocated to Denver in the summer.', 'which city is home for me?'],
  ['employer', 'I work at Oracle.', 'I just got hired at Adobe.', 'who is my employer'],
  ['employer', 'Priya works at Spotify.', 'Priya joined Netflix.', 'where does Priya work?'],
  ['employer', 'I work at Deloitte.', 'I left Deloitte in March.', 'where do I work'],
  ['job', "I'm a paramedic.", "I'm a pilot now.", 'what is my job?'],
  ['age', "I'm 41.", 'I turned 42 yesterday.', 'how old am I'],
  ['birthday', 'My birthday is on July 9.', 'Actually my birthday is on July 19.', 'when is my birthday?'],
  ['birth year', 'I was born in 1980.', 'Sorry, I was born in 1981.', 'what year was I born'],
  ['relationship', "I'm single.", "I'm dating Marco.", 'am I in a relationship?'],
  ['partner', 'My girlfriend is Chloe.', 'Chloe and I broke up.', 'who is my girlfriend'],
  ['spouse', 'My husband is Victor.', 'My husband is Pedro.', 'who am I married to?'],
  ['children', 'I have one kid.', 'I have two kids now.', 'how many children do I have'],
  ['car', 'I drive a Mazda.', 'I drive a Subaru now.', 'what car do I drive?'],
  ['phone', 'I have an iPhone.', 'I switched to a Pixel phone.', 'which phone do I use'],
  ['favourite', 'My favorite band is Queen.', 'My favorite band is Muse.', "what's my favorite band?"],
  ['favourite', 'My favourite food is curry.', 'These days my favourite food is ramen.', 'favorite food?'],
  ['preference', 'I prefer tea over coffee.', 'I prefer coffee to tea now.', 'do I prefer coffee or tea'],
  ['trait', "I'm vegetarian.", "I'm not vegetarian anymore.", 'am I vegetarian?'],
  ['liking', 'I love jogging.', 'I hate jogging now.', 'do I like jogging?'],
  ['habit', 'I swim every morning.', 'I swim in the evenings now.', 'when do I swim?'],
  ['habit', 'I go climbing once a week.', 'I go climbing three times a week now.', 'how often do I go climbing'],
  ['possession', 'I own a kayak.', 'I sold my kayak last month.', 'do I still own a kayak?'],
];
// The same end user said these too: some share the question's words ("lives in", "works at").
const AROUND = ['My sister lives in Rome.', 'My brother works at a bank.', 'I went to a concert last night.', 'We had pizza for dinner.'];

forEachDialect('the current fact first', (dialect) => {
  const t = useTestApp(dialect);

  it(`answers a question about a changed fact with the newer statement first, saying why (${CHANGES.length} changes of ${new Set(CHANGES.map((c) => c[0])).size} kinds)`, async () => {
    expect(CHANGES.length).toBeGreaterThanOrEqual(20);
    const failures: string[] = [];
    for (const [kind, older, newer, question] of CHANGES) {
      const endUser = freshUser();
      await addMemory(t, AROUND[0]!, { endUser });
      const oldId = (await addMemory(t, older, { endUser })).id as number;
      await addMemory(t, AROUND[1]!, { endUser });
      await addMemory(t, AROUND[2]!, { endUser });
      const newId = (await addMemory(t, newer, { endUser })).id as number;
      await addMemory(t, AROUND[3]!, { endUser });
      const found = await query(t, { query: question, explain: true }, { endUser });
      const ids = found.map((m) => m.id);
      const label = `${kind}: "${older}" -> "${newer}", asked "${question}": got ${JSON.stringify(found.map((m) => m.text))}`;
      if (ids[0] !== newId) {
        failures.push(label);
        continue;
      }
      expect(found[0].explanation, label).toHaveProperty('current_fact');
      if (ids.includes(oldId)) {
        const old = found[ids.indexOf(oldId)];
        expect(old.explanation, label).toHaveProperty('superseded_by');
        expect(old.score, label).toBeLessThanOrEqual(found[0].score);
      }
      // Scores never rise down the list, and explanations still add up to them.
      for (let i = 1; i < found.length; i++) expect(found[i].score, label).toBeLessThanOrEqual(found[i - 1].score);
      for (const m of found) expect(1 - Math.exp(-explained(m.explanation)), label).toBeCloseTo(m.score, 6);
    }
    expect(failures).toEqual([]);
  });

  it('leaves the order alone where no fact changed, and brings nothing in past filters', async () => {
    const endUser = freshUser();
    const paris = (await addMemory(t, { text: 'I live in Paris.', tags: ['home'] }, { endUser })).id as number;
    const berlin = (await addMemory(t, 'I moved to Berlin last May.', { endUser })).id as number;
    const filtered = await query(t, { query: 'where do I live', filters: { tags_any: ['home'] } }, { endUser });
    expect(filtered.map((m) => m.id)).toEqual([paris]);
    const other = freshUser();
    const a = (await addMemory(t, 'I like tea.', { endUser: other })).id as number;
    const b = (await addMemory(t, 'I like juice.', { endUser: other })).id as number;
    const plain = await query(t, { query: 'tea or juice', explain: true }, { endUser: other });
    expect(plain.map((m) => m.id).sort()).toEqual([a, b].sort());
    for (const m of plain) expect(Object.keys(m.explanation)).not.toContain('current_fact');
    expect((await query(t, 'where do I live', { endUser })).map((m) => m.id)).toEqual([berlin, paris]);
  });
});

forEachDialect('the current fact first, above ENGRAM_CURRENT_FACT_MAX_MEMORIES', (dialect) => {
  const t = useTestApp(dialect, () => ({ intelligence: { ...loadConfig({}).intelligence, currentFactMaxMemories: 2 } }));

  it('answers an end user with more memories than the limit as ranked', async () => {
    const small = freshUser();
    const paris = (await addMemory(t, 'I live in Paris.', { endUser: small })).id as number;
    const berlin = (await addMemory(t, 'I moved to Berlin last May.', { endUser: small })).id as number;
    expect((await query(t, 'where do I live', { endUser: small })).map((m) => m.id)).toEqual([berlin, paris]);
    const large = freshUser();
    const old = (await addMemory(t, 'I live in Paris.', { endUser: large })).id as number;
    await addMemory(t, 'I moved to Berlin last May.', { endUser: large });
    await addMemory(t, 'We had pizza for dinner.', { endUser: large });
    expect((await query(t, 'where do I live', { endUser: large })).map((m) => m.id)).toEqual([old]);
  });
});
