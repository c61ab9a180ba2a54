import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { addMemory } from '../../testing/memories.js';
import { addAll, explained, freshUser, query } from '../../testing/retrieval.js';
import { loadConfig } from '../../config.js';
import type { KyselyPlugin } from 'kysely';
import { revisionOf } from '../memories/index.js';
import { IntelligenceCache } from './cache.js';
import { Extractors } from './ontology.js';

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
// A second set, written by another hand (issue 53, wave 3) before reading the fact rules: 13 of 24 came
// first; the rules were then changed until all did (it is tuned on, like bench/intelligence/conflicts-dev.txt).
const WAVE3: Array<[kind: string, older: string, newer: string, question: string]> = [
  ['residence', 'Home for me is Manchester.', 'We packed up and moved to Leeds in October.', 'what city do I live in?'],
  ['residence', 'Tom lives in Dublin.', 'Tom moved to Cork last spring.', 'where does Tom live?'],
  [
    'residence',
    "I'm living in a flat in Glasgow.",
    "I've just moved into a house in Edinburgh.",
    'where am I living these days?',
  ],
  ['employer', "I'm employed by Siemens.", 'I started a new job at Bosch this week.', 'which company do I work for?'],
  ['employer', 'Ana works for the Red Cross.', 'Ana quit the Red Cross and joined UNICEF.', 'who does Ana work for?'],
  ['job', 'I work as a chef.', "I'm a food critic now.", "what's my occupation?"],
  ['job', 'Sam is a firefighter.', 'Sam retired last year.', 'what does Sam do for a living?'],
  ['age', "I'm 29 years old.", 'I just turned 30!', 'what is my age?'],
  ['birthday', 'My birthday is March 3rd.', 'Correction: my birthday is March 13th.', 'when is my birthday'],
  ['spouse', "I'm married to Elena.", 'Elena and I got divorced.', 'am I married?'],
  ['partner', 'My boyfriend is Jake.', 'My boyfriend is Luis.', 'who is my boyfriend?'],
  ['relationship', "I'm engaged.", 'We called off the engagement.', 'am I engaged?'],
  ['children', 'We have two kids.', 'We have three kids now.', 'how many kids do we have?'],
  ['car', 'I drive a Honda Civic.', 'I traded the Civic for a Tesla.', 'what do I drive?'],
  ['phone', 'My phone is a Samsung Galaxy.', 'I got an iPhone to replace my Samsung.', 'what phone do I have?'],
  ['favourite', 'My favorite sport is tennis.', 'Golf is my favorite sport these days.', 'what is my favorite sport?'],
  ['favourite', 'My favorite author is Tolkien.', 'My favorite author is now Le Guin.', 'who is my favourite author?'],
  ['preference', 'I prefer cats to dogs.', 'Honestly I prefer dogs over cats now.', 'cats or dogs, which do I prefer?'],
  ['trait', "I'm a smoker.", 'I quit smoking in January.', 'do I smoke?'],
  ['liking', 'I enjoy running.', "I don't enjoy running anymore.", 'do I enjoy running?'],
  ['habit', 'I go to the gym every Monday.', 'I go to the gym on Fridays now.', 'which day do I go to the gym?'],
  ['habit', 'I meditate twice a day.', 'I meditate once a day now.', 'how often do I meditate?'],
  ['possession', 'I have a motorbike.', 'I sold the motorbike in June.', 'do I have a motorbike?'],
  ['possession', 'I own a house in the country.', 'We sold the country house.', 'do I own a house?'],
  // Session 5 of wave 3: the mechanisms of that session (tuned on).
  ['pet', 'I have a dog named Rex.', 'Rex died last spring.', 'do I have a dog?'],
  ['job', "I'm a pharmacist.", 'I lost my job at the pharmacy.', 'what do I do for work?'],
  ['partner', 'I have a girlfriend.', 'My girlfriend and I broke up.', 'do I have a girlfriend?'],
  ['count', 'I have two dogs.', 'We have three dogs now.', 'how many dogs do I have?'],
  ['used to', 'I smoke.', 'I used to smoke.', 'do I smoke?'],
  [
    'habit',
    'I go to choir practice every Thursday.',
    "I haven't been going to choir lately.",
    'do I still go to choir?',
  ],
  ['favourite', 'My favorite movie is Alien.', 'My favorite film these days is Heat.', 'what is my favourite film?'],
  ['age', 'My son is eight.', 'My son turned nine.', 'how old is my son?'],
];
/** The changes (with their question) of a bench/intelligence set: kind || older || newer || yes || question. */
const changesOf = (file: string) =>
  readFileSync(new URL(`../../../../../bench/intelligence/${file}`, import.meta.url), 'utf8')
    .split('\n')
    .filter((line) => !line.startsWith('#') && line.includes('|| yes ||'))
    .map((line) => line.split('||').map((field) => field.trim()))
    .map(([kind, older, newer, , question]) => [kind!, older!, newer!, question!] as const);
// Written and committed before wave 3 changed the rules; tuned on since session 4 (all 24 first).
const UNSEEN = changesOf('conflicts-unseen.txt');
// Written and committed before session 4 changed the rules, never run pair by pair while changing them.
const FRESH = changesOf('changes-fresh.txt');
// Drawn from the LoCoMo dev conversations and committed before session 5 changed the rules; held out (counted only).
const LOCOMO = changesOf('changes-locomo.txt');
/** How many changes had their newer statement first when each set was first run (README, "The current fact first"). */
const FIRST_AT_FIRST_RUN = { unseen: 15, fresh: 16, locomo: 21 };
// The same end user said these too: some share the question's words ("lives in", "works at").
const AROUND = [
  'My sister lives in Rome.',
  'My brother works at a bank.',
  'I went to a concert last night.',
  'We had pizza for dinner.',
];

forEachDialect('the current fact first', (dialect) => {
  const t = useTestApp(dialect);

  const tuned = [...CHANGES, ...WAVE3];
  it(`answers a question about a changed fact with the newer statement first, saying why (${tuned.length} changes of ${new Set(tuned.map((c) => c[0])).size} kinds)`, async () => {
    const failures: string[] = [];
    for (const [kind, older, newer, question] of tuned) {
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

  // What each set found the first time it was run is what README reports; the unseen set has been tuned on since.
  for (const [name, set] of [
    ['unseen', UNSEEN],
    ['fresh', FRESH],
    ['locomo', LOCOMO],
  ] as const) {
    it(`answers the ${name} changes of bench/intelligence (${set.length}) with the newer statement first`, async () => {
      expect(set.length).toBeGreaterThanOrEqual(24);
      const missed: string[] = [];
      // First by its words alone (no current_fact: the graph did not read the change) counts as first, and is told apart.
      let byWords = 0;
      for (const [kind, older, newer, question] of set) {
        const endUser = freshUser();
        await addMemory(t, AROUND[0]!, { endUser });
        await addMemory(t, older, { endUser });
        await addMemory(t, AROUND[1]!, { endUser });
        await addMemory(t, AROUND[2]!, { endUser });
        const newId = (await addMemory(t, newer, { endUser })).id as number;
        await addMemory(t, AROUND[3]!, { endUser });
        const found = await query(t, { query: question, explain: true }, { endUser });
        if (found[0]?.id !== newId)
          missed.push(
            `${kind}: "${older}" -> "${newer}", asked "${question}": got ${JSON.stringify(found.map((m) => m.text))}`,
          );
        else if (!('current_fact' in found[0].explanation)) byWords++;
      }
      console.log(
        `${name} changes: ${set.length - missed.length} of ${set.length} first (${byWords} by their words alone)`,
        JSON.stringify(missed, null, 1),
      );
      expect(set.length - missed.length).toBeGreaterThanOrEqual(FIRST_AT_FIRST_RUN[name]);
    });
  }

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
  const t = useTestApp(dialect, () => ({
    intelligence: { ...loadConfig({}).intelligence, currentFactMaxMemories: 2 },
  }));

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

forEachDialect('the current fact first on the read path', (dialect) => {
  const t = useTestApp(dialect);

  it('checks its view against the revision the ranking was read at: a steady query reads nothing more, a write only its changes', async () => {
    const endUser = freshUser();
    await addMemory(t, 'I live in Paris.', { endUser });
    await addMemory(t, 'I moved to Berlin last May.', { endUser });
    const owner = { projectId: t.projectId, tenantId: '', endUserId: endUser };
    // Every statement the cache runs on this connection is counted (a plugin sees each result).
    let statements = 0;
    const counting: KyselyPlugin = {
      transformQuery: (args) => args.node,
      transformResult: async (args) => (statements++, args.result),
    };
    const database = { ...t.database, db: t.database.db.withPlugin(counting) };
    const cache = new IntelligenceCache(database, new Extractors(t.database), 10);
    const first = await cache.forOwnerWithin(owner, 2_000);
    expect(first?.items.size).toBe(2);
    expect(statements).toBeGreaterThan(0);

    const revision = await revisionOf(t.database.db, owner);
    statements = 0;
    expect(await cache.forOwnerWithin(owner, 2_000, revision)).toBe(first);
    expect(statements).toBe(0);

    await addMemory(t, 'I work at Oracle.', { endUser });
    const moved = await revisionOf(t.database.db, owner);
    expect(moved).toBeGreaterThan(revision);
    statements = 0;
    const after = await cache.forOwnerWithin(owner, 2_000, moved);
    expect(after?.items.size).toBe(3);
    // The changed rows, and whether a row is still at or before the held revision (after a purge, an end-user id
    // used again starts its view over: e8c25b4).
    expect(statements).toBe(2);
    // Told nothing, it reads the revision itself (the ontology's read is held for a second).
    statements = 0;
    expect(await cache.forOwnerWithin(owner, 2_000)).toBe(after);
    expect(statements).toBe(1);
  });

  it('holds at most its bytes (ENGRAM_INTELLIGENCE_CACHE_MB): the least recently used end users go first (issue 46, defect 8)', async () => {
    const owners = [freshUser(), freshUser(), freshUser()].map((endUserId) => ({
      projectId: t.projectId,
      tenantId: '',
      endUserId,
    }));
    for (const owner of owners) {
      await addAll(
        t,
        Array.from({ length: 20 }, (_, i) => `I moved to city number ${i} and my sister Anna works at Oracle there.`),
        { endUser: owner.endUserId },
      );
    }
    const unbounded = new IntelligenceCache(t.database, new Extractors(t.database), 10);
    await unbounded.forOwner(owners[0]!);
    const one = unbounded.bytes;
    // 20 memories of some 70 characters, their extractions: tens of kilobytes, not a guess per user.
    expect(one).toBeGreaterThan(20 * 300);
    // Room for two end users' views, not three.
    const cache = new IntelligenceCache(t.database, new Extractors(t.database), 10, Math.floor(2.5 * one));
    const first = await cache.forOwner(owners[0]!);
    const second = await cache.forOwner(owners[1]!);
    expect(await cache.forOwner(owners[0]!)).toBe(first);
    await cache.forOwner(owners[2]!);
    expect(cache.bytes).toBeLessThanOrEqual(Math.floor(2.5 * one));
    // The first end user was used after the second: the second went (its view is made again), the first stayed.
    expect(await cache.forOwner(owners[0]!)).toBe(first);
    expect(await cache.forOwner(owners[1]!)).not.toBe(second);
    expect(cache.bytes).toBeLessThanOrEqual(Math.floor(2.5 * one));
  });
});
