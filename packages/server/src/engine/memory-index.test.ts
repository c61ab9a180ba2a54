import { describe, expect, it } from 'vitest';
import { MemoryIndex } from './memory-index.js';
import type { EngineDoc } from './types.js';

const T0 = Date.UTC(2023, 4, 8);
let nextId = 1;
function doc(text: string, extra: Partial<EngineDoc> = {}): EngineDoc {
  return { id: nextId++, text, sessionId: null, createdAt: T0, importance: 0.5, feedback: 0, ...extra };
}
function build(docs: EngineDoc[], opts?: ConstructorParameters<typeof MemoryIndex>[0]): MemoryIndex {
  const idx = new MemoryIndex(opts);
  for (const d of docs) idx.upsert(d);
  return idx;
}
const ids = (idx: MemoryIndex, q: string, k = 10, extra = {}) =>
  idx.search(q, { k, now: T0, ...extra }).map((h) => h.id);

describe('MemoryIndex lexical search', () => {
  it('finds an inflected form through stemming', () => {
    const painted = doc('I painted a sunrise over the lake last summer');
    const idx = build([doc('We went hiking in the mountains'), painted, doc('The kids love swimming')]);
    expect(ids(idx, 'painting')[0]).toBe(painted.id);
  });

  it('reads a query word no memory holds as the held word one edit away (a typo), the one most memories hold', () => {
    const restaurant = doc('We booked the Italian restaurant for Friday');
    const kitchen = doc('The kitchen needs a new table');
    const docs = [restaurant, kitchen, doc('We went hiking in the mountains'), doc('The kids love swimming')];
    const idx = build(docs);
    expect(ids(idx, 'restuarant booking')[0]).toBe(restaurant.id); // two letters swapped
    expect(ids(idx, 'kitchn')).toEqual([kitchen.id]); // a letter dropped
    expect(ids(idx, 'kittchen')).toEqual([kitchen.id]); // one added
    // A typo in a suffix keeps the stemmer from removing it: the held term that begins it.
    const vacation = doc('Our vacation in Lisbon was lovely');
    expect(ids(build([vacation, ...docs]), 'vacaton')[0]).toBe(vacation.id);
    expect(ids(build(docs, { weights: { typo: 0 } }), 'kitchn')).toEqual([]);
    // A held word is what it is; a short one is not read as another.
    expect(ids(idx, 'kids')).toEqual([docs[3]!.id]);
    expect(ids(build([doc('a big cat')]), 'cart')).toEqual([]);
    // Among held neighbours, the one the most memories hold.
    const many = build([
      doc('the painter arrived'),
      doc('a painted wall'),
      doc('paint it blue'),
      doc('the pointer moved'),
    ]);
    expect(many.search('paintr', { k: 10, now: T0 }).length).toBeGreaterThan(0);
  });

  it('finds an instance of the kind a question names (answer types), below a memory naming the kind itself', () => {
    const violin = doc('My violin lessons start on Monday');
    const kind = doc('I bought a book about musical instruments');
    const docs = [violin, kind, doc('The lessons at school were boring'), doc('Monday was rainy')];
    const search = (answerType: number) => {
      const idx = new MemoryIndex({ weights: { answerType } });
      for (const d of docs) idx.upsert(d);
      return idx.search('Which instruments does she play?', { k: 3, now: T0, explain: true });
    };
    expect(search(0).map((h) => h.id)).toEqual([kind.id]);
    const hits = search(0.2);
    expect(hits.slice(0, 2).map((h) => h.id)).toEqual([kind.id, violin.id]);
    expect(hits[1]!.explanation!.lexical).toBeGreaterThan(0);
  });

  it('prefers rarer terms (idf) and returns at most k, best first', () => {
    const docs = [doc('dog dog dog'), doc('dog and cat'), doc('cat'), doc('dog'), doc('axolotl and dog')];
    const idx = build(docs);
    const hits = idx.search('axolotl dog', { k: 2, now: T0 });
    expect(hits).toHaveLength(2);
    expect(hits[0]!.id).toBe(docs[4]!.id);
    expect(hits[0]!.score).toBeGreaterThanOrEqual(hits[1]!.score);
  });

  it('lifts the answer turn through its session neighbour (question -> answer)', () => {
    const s = 'session_1';
    const question = doc('What did you research for the adoption?', { sessionId: s, speaker: 'Mel' });
    const answer = doc('Mostly agencies that support single parents.', { sessionId: s, speaker: 'Caro' });
    const far = doc('Unrelated chat about football and snacks.', { sessionId: s });
    const other = doc('Agencies everywhere are closed on Sunday.', { sessionId: 'session_2' });
    // Expansion is off here: it would rightly pull in `other` through "agencies" (tested below).
    const withContext = build([question, answer, far, other], { weights: { expansion: 0 } });
    const without = build([question, answer, far, other], { weights: { context: 0, expansion: 0 } });
    expect(ids(without, 'research adoption')).toEqual([question.id]); // the answer shares no word with the query
    const hits = ids(withContext, 'research adoption');
    expect(hits[0]).toBe(question.id);
    expect(hits[1]).toBe(answer.id); // next to the matching question
    expect(hits).not.toContain(other.id);
  });

  it('expansion finds docs that share the characteristic words of the best matches, below them', () => {
    const a = doc('Our sourdough starter needs rye flour and warm water', { sessionId: 'a' });
    const b = doc('Baking sourdough: the starter, rye flour, a long proof', { sessionId: 'b' });
    const c = doc('Rye flour keeps the starter active for days', { sessionId: 'c' });
    const unrelated = doc('The train to Lisbon leaves at nine', { sessionId: 'd' });
    const noExpansion = build([a, b, c, unrelated], { weights: { expansion: 0 } });
    const withExpansion = build([a, b, c, unrelated], { weights: { expansion: 0.1 } });
    expect(ids(noExpansion, 'sourdough').sort((x, y) => x - y)).toEqual([a.id, b.id].sort((x, y) => x - y));
    const hits = withExpansion.search('sourdough', { k: 10, now: T0, explain: true });
    expect(hits.map((h) => h.id)).toContain(c.id); // no "sourdough", but "rye", "flour", "starter"
    expect(hits.map((h) => h.id)).not.toContain(unrelated.id);
    const byId = new Map(hits.map((h) => [h.id, h]));
    expect(byId.get(c.id)!.score).toBeLessThan(Math.min(byId.get(a.id)!.score, byId.get(b.id)!.score));
    expect(byId.get(c.id)!.explanation!.expansion).toBeGreaterThan(0);
  });

  it('weighs context from the turn before a doc above the turn after it (answers follow questions)', () => {
    const s = 'session_q';
    const before = doc('Quiet evening.', { sessionId: s });
    const question = doc('What got you into running?', { sessionId: s });
    const after = doc('Sunny weather?', { sessionId: s });
    const docs = [before, question, after];
    const explainOf = (idx: MemoryIndex, id: number) =>
      idx.search('running', { k: 5, now: T0, explain: true }).find((h) => h.id === id);
    const symmetric = build(docs, { weights: { contextBackward: 1 } });
    // Symmetric: the turns on both sides of the match get the same context evidence.
    expect(explainOf(symmetric, before.id)!.explanation!.context).toBeCloseTo(
      explainOf(symmetric, after.id)!.explanation!.context!,
      9,
    );
    const idx = build(docs); // default: evidence flowing backwards is down-weighted
    const a = explainOf(idx, after.id)!;
    const b = explainOf(idx, before.id)!;
    expect(a.explanation!.context).toBeGreaterThan(b.explanation!.context!);
    expect(ids(idx, 'running')).toEqual([question.id, after.id, before.id]);
    // Contributions still add up to the score.
    const sum = Object.values(a.explanation!).reduce((x, y) => x + y, 0);
    expect(sum).toBeCloseTo(a.score, 9);
    const none = build(docs, { weights: { contextBackward: 0 } });
    expect(ids(none, 'running')).toEqual([question.id, after.id]);
  });

  it('removing a doc removes it from results and from its session links', () => {
    const s = 'sx';
    const a = doc('tell me about the volcano trip', { sessionId: s });
    const b = doc('the volcano was huge', { sessionId: s });
    const c = doc('we ate pizza afterwards', { sessionId: s });
    const idx = build([a, b, c]);
    expect(ids(idx, 'volcano')).toContain(b.id);
    idx.remove(b.id);
    expect(idx.size).toBe(2);
    expect(ids(idx, 'volcano')).not.toContain(b.id);
    idx.remove(b.id); // idempotent
    // a and c are now neighbours: c gets context evidence from a.
    const hit = idx.search('volcano', { k: 5, now: T0, explain: true }).find((h) => h.id === c.id);
    expect(hit?.explanation?.context).toBeGreaterThan(0);
  });

  it('upsert replaces a doc in place (no duplicate, new text wins)', () => {
    const d = doc('old words about gardening');
    const idx = build([d, doc('something else')]);
    idx.upsert({ ...d, text: 'new words about sailing' });
    expect(idx.size).toBe(2);
    expect(ids(idx, 'gardening')).toEqual([]);
    expect(ids(idx, 'sailing')).toEqual([d.id]);
  });

  it('filter and sessionId restrict candidates', () => {
    const a = doc('coffee in the morning', { sessionId: 's1' });
    const b = doc('coffee after lunch', { sessionId: 's2' });
    const c = doc('coffee at night', { sessionId: 's2' });
    const idx = build([a, b, c]);
    expect(ids(idx, 'coffee').sort()).toEqual([a.id, b.id, c.id].sort());
    expect(ids(idx, 'coffee', 10, { filter: (id: number) => id !== b.id }).sort()).toEqual([a.id, c.id].sort());
    expect(ids(idx, 'coffee', 10, { sessionId: 's1' })).toEqual([a.id]);
    expect(ids(idx, 'coffee', 10, { sessionId: 'nope' })).toEqual([]);
  });

  it('asks the filter once per doc in a search, and again in the next search', () => {
    // The docs the ranking meets first fail the filter: its seed and pruning passes meet them again.
    const docs = Array.from({ length: 400 }, (_, i) =>
      doc(`a note about topic ${i % 13}`, { createdAt: T0 - (400 - i) * 60_000 }),
    );
    const idx = build(docs);
    const passing = new Set(docs.slice(200).map((d) => d.id));
    for (let round = 0; round < 2; round++) {
      const asked = new Map<number, number>();
      const hits = ids(idx, 'note about topic 5', 10, {
        filter: (id: number) => (asked.set(id, (asked.get(id) ?? 0) + 1), passing.has(id)),
      });
      expect(hits.length).toBe(10);
      expect(hits.every((id) => passing.has(id))).toBe(true);
      expect(Math.max(...asked.values())).toBe(1);
      expect(asked.size).toBeGreaterThan(200);
    }
  });

  it('explanation contributions sum to the score', () => {
    const idx = build([
      doc('I adopted a dog named Rex', { sessionId: 'a', speaker: 'Ann', importance: 0.9, feedback: 2 }),
      doc('Rex loves the beach', { sessionId: 'a', speaker: 'Bob' }),
      doc('Ann went to the beach last week', { sessionId: 'b', speaker: 'Bob', feedback: -1 }),
    ]);
    const hits = idx.search('What did Ann say about the dog at the beach?', {
      k: 3,
      now: T0 + 86_400_000,
      explain: true,
    });
    expect(hits.length).toBeGreaterThan(0);
    for (const h of hits) {
      const sum = Object.values(h.explanation!).reduce((a, b) => a + b, 0);
      expect(sum).toBeCloseTo(h.score, 9);
    }
    expect(Object.keys(hits[0]!.explanation!)).toContain('lexical');
  });

  it('speaker field: a name in the query favours what that person said', () => {
    const byAnn = doc('I started pottery classes', { speaker: 'Ann' });
    const toAnn = doc('Ann, your pottery classes sound great', { speaker: 'Bob' });
    const filler = [
      'went for a run',
      'made soup for dinner',
      'the weather is nice',
      'Bob likes jazz',
      'new shoes today',
    ];
    const idx = build([toAnn, byAnn, ...filler.map((t, i) => doc(t, { speaker: i % 2 ? 'Ann' : 'Bob' }))]);
    expect(ids(idx, 'What pottery did Ann do?')[0]).toBe(byAnn.id);
  });

  it('speaker match lifts word evidence (metaEvidence) and never a doc that has none', () => {
    // Two turns by Ann with the same words but one is longer: without the lift Bob's short
    // turn wins on BM25 length normalisation; with it, what Ann said comes first.
    const byAnn = doc('I tried kickboxing at the gym downtown with friends', { speaker: 'Ann' });
    const byBob = doc('kickboxing gym', { speaker: 'Bob' });
    const annNoWords = doc('see you tomorrow', { speaker: 'Ann' });
    const docs = [byAnn, byBob, annNoWords, doc('soup for dinner', { speaker: 'Bob' })];
    const lifted = build(docs, { weights: { meta: 0, metaEvidence: 1, expansion: 0 } });
    const flat = build(docs, { weights: { meta: 0, metaEvidence: 0, expansion: 0 } });
    expect(ids(flat, 'Ann kickboxing gym')[0]).toBe(byBob.id);
    const hits = lifted.search('Ann kickboxing gym', { k: 10, now: T0, explain: true });
    expect(hits[0]!.id).toBe(byAnn.id);
    expect(hits.map((h) => h.id)).not.toContain(annNoWords.id);
    expect(hits[0]!.explanation!.meta).toBeGreaterThan(0);
  });

  it('a speaker match counts less for a turn with no first-person word (metaNotSelf)', () => {
    // Both turns are Nate's; the short one is about Joanna and wins on length normalisation
    // unless the speaker match is discounted for a turn that does not speak of its speaker.
    const self = doc('I keep two turtles in a big tank at home', { speaker: 'Nate' });
    const aboutOther = doc('Cool turtles tank, Joanna', { speaker: 'Nate' });
    const filler = ['went for a run', 'made soup for dinner', 'the weather is nice', 'new shoes today', 'jazz night'];
    const docs = [aboutOther, self, ...filler.map((t, i) => doc(t, { speaker: i % 2 ? 'Nate' : 'Joanna' }))];
    const q = 'What turtles tank does Nate have?';
    expect(ids(build(docs, { weights: { expansion: 0, metaNotSelf: 1 } }), q)[0]).toBe(aboutOther.id);
    const hits = build(docs, { weights: { expansion: 0 } }).search(q, { k: 2, now: T0, explain: true });
    expect(hits.map((h) => h.id)).toEqual([self.id, aboutOther.id]);
    expect(hits[1]!.explanation!.meta).toBeLessThan(hits[0]!.explanation!.meta!);
  });

  it('a turn that ends asking counts less than one that tells (asking)', () => {
    const ask = doc('Have you seen the turtles tank?', { sessionId: 'a' });
    const tell = doc('The turtles tank at the zoo was huge and lovely', { sessionId: 'b' });
    const docs = [ask, tell, doc('went for a run'), doc('made soup for dinner'), doc('new shoes today')];
    expect(ids(build(docs, { weights: { expansion: 0, asking: 1 } }), 'turtles tank')[0]).toBe(ask.id);
    expect(ids(build(docs, { weights: { expansion: 0 } }), 'turtles tank')).toEqual([tell.id, ask.id]);
  });

  it('a "when" question prefers the turn that names a time (whenNamesTime)', () => {
    const says = doc('We adopted the puppy two weeks ago, she is lovely and tiny', { sessionId: 's' });
    const plain = doc('The puppy is lovely', { sessionId: 't' });
    const idx = build([plain, says, doc('soup for dinner')], { weights: { expansion: 0 } });
    const off = build([plain, says, doc('soup for dinner')], { weights: { expansion: 0, whenNamesTime: 0 } });
    expect(ids(off, 'When did they adopt the puppy?')).toContain(plain.id);
    const hits = idx.search('When did they adopt the puppy?', { k: 2, now: T0, explain: true });
    expect(hits[0]!.id).toBe(says.id);
    expect(hits[0]!.explanation!.time).toBeGreaterThan(0);
    // Not a when-question: no lift.
    const other = idx.search('puppy lovely', { k: 2, now: T0, explain: true });
    expect(other.every((h) => h.explanation!.time === undefined)).toBe(true);
  });

  it('expansion never outweighs its weight when the first pass matched only a weak word', () => {
    const docs = [
      doc('Bye Ann!', { speaker: 'Bob', sessionId: 'a' }),
      doc('Our sourdough starter needs rye flour', { speaker: 'Ann', sessionId: 'b' }),
      doc('Rye flour keeps the starter alive', { speaker: 'Bob', sessionId: 'c' }),
    ];
    const idx = build(docs, { weights: { expansion: 0.1 } });
    for (const h of idx.search('Where did Ann travel?', { k: 3, now: T0, explain: true })) {
      expect(h.explanation!.expansion ?? 0).toBeLessThanOrEqual(0.1 + 1e-12);
    }
  });

  it('temporal phrase prefers docs from that period', () => {
    const may = doc('went to the museum', { createdAt: Date.UTC(2023, 4, 10) });
    const june = doc('went to the museum', { createdAt: Date.UTC(2023, 5, 10) });
    const idx = build([may, june]);
    const now = Date.UTC(2023, 8, 1);
    expect(idx.search('museum in June', { k: 2, now })[0]!.id).toBe(june.id);
    expect(idx.search('museum in May', { k: 2, now })[0]!.id).toBe(may.id);
  });

  it('feedback and importance move ranking between otherwise equal docs', () => {
    const a = doc('the blue car');
    const b = doc('the blue car');
    const idx = build([a, b]);
    idx.upsert({ ...b, feedback: 3 });
    expect(ids(idx, 'blue car')[0]).toBe(b.id);
    idx.upsert({ ...b, feedback: -3 });
    expect(ids(idx, 'blue car')[0]).toBe(a.id);
  });

  it('odd queries do not throw', () => {
    const idx = build([doc('東京タワーに行きました'), doc('emoji party 🎉'), doc('plain english text')]);
    for (const q of [
      '',
      '   ',
      '?!...',
      '🎉🎉🎉',
      'the of and',
      'x'.repeat(100_000),
      'word '.repeat(20_000),
      '\u0000\uffff',
    ]) {
      expect(() => idx.search(q, { k: 5 })).not.toThrow();
    }
    expect(ids(idx, '東京タワー')[0]).toBe(idx.search('東京タワー', { k: 1 })[0]!.id);
    expect(idx.search('タワー', { k: 1 })).toHaveLength(1);
    expect(idx.search('anything', { k: 0 })).toEqual([]);
    expect(new MemoryIndex().search('anything', { k: 5 })).toEqual([]);
  });

  it('a query with no content words ranks by priors instead of failing', () => {
    const old = doc('alpha', { createdAt: T0 - 365 * 86_400_000 });
    const fresh = doc('beta', { createdAt: T0 });
    const idx = build([old, fresh]);
    expect(ids(idx, 'what is it')).toEqual([fresh.id, old.id]);
  });

  it('caller-supplied vectors give semantic matches without shared words', () => {
    const idx = new MemoryIndex();
    const cat = doc('feline companion');
    const car = doc('automobile repair');
    idx.upsert(cat, Float32Array.from([1, 0, 0]));
    idx.upsert(car, Float32Array.from([0, 1, 0]));
    const hits = idx.search('kitty', { k: 2, queryVector: Float32Array.from([0.9, 0.1, 0]), explain: true });
    expect(hits[0]!.id).toBe(cat.id);
    expect(hits[0]!.explanation!.semantic).toBeGreaterThan(0);
    expect(() => idx.upsert(doc('x'), Float32Array.from([1, 2]))).toThrow(/dimensions/);
  });

  it('approxBytes grows with content and shrinks back on removal', () => {
    const idx = new MemoryIndex();
    const empty = idx.approxBytes();
    const docs = Array.from({ length: 200 }, (_, i) => doc(`memory number ${i} about topic${i % 17}`));
    for (const d of docs) idx.upsert(d);
    const full = idx.approxBytes();
    expect(full).toBeGreaterThan(empty);
    for (const d of docs) idx.remove(d.id);
    expect(idx.size).toBe(0);
    expect(idx.approxBytes()).toBeLessThan(full);
  });
});

describe('MemoryIndex after changes', () => {
  it('the top k is the start of the ranking of every doc (the pruned scans skip only docs that cannot enter it)', () => {
    // k = every doc never fills the top k, so nothing is pruned: the reference. Speakers named in the
    // questions bring docs found by expansion and a name alone, the case the last scan is for.
    const words = Array.from({ length: 300 }, (_, i) => `w${i.toString(36)}x`);
    let seed = 11;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const speakers = ['Ann', 'Bo', 'Cy'];
    // Most words from five of the session's topic, so that sessions have topics expansion can follow.
    const word = (session: number) =>
      words[rand() < 0.6 ? (session * 5 + Math.floor(rand() * 5)) % words.length : Math.floor(rand() * words.length)]!;
    const docs: EngineDoc[] = Array.from({ length: 600 }, (_, i) => {
      const session = Math.ceil((i + 1) / 12);
      const text = Array.from({ length: 2 + Math.floor(rand() * 5) }, () => word(session)).join(' ');
      return {
        id: i + 1,
        text: rand() < 0.3 ? `${text} I did` : text,
        sessionId: `s${session}`,
        createdAt: T0 + i * 60_000,
        importance: 0.5,
        feedback: 0,
        speaker: speakers[i % 3],
      };
    });
    const idx = build(docs);
    for (let q = 0; q < 60; q++) {
      const question = `what did ${speakers[q % 3]} say about the ${words[q % words.length]} ${q % 4 === 0 ? '' : words[(q * 7) % words.length]}`;
      const all = idx.search(question, { k: docs.length, now: T0 });
      const scoreOf = new Map(all.map((h) => [h.id, h.score]));
      for (const k of [1, 5, 10]) {
        // Docs of equal score may come in either order: the scores, and each doc's, are what must match.
        const top = idx.search(question, { k, now: T0 });
        expect(
          top.map((h) => h.score),
          `${question} k=${k}`,
        ).toEqual(all.slice(0, k).map((h) => h.score));
        for (const h of top) expect(h.score).toBe(scoreOf.get(h.id));
      }
    }
  });

  it('ranks as an index built from the final docs alone after replacements, removals and re-additions', () => {
    const words = [
      'garden',
      'piano',
      'tomato',
      'violin',
      'harbour',
      'lantern',
      'orchard',
      'meadow',
      'compass',
      'ferry',
      'pottery',
      'canyon',
    ];
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const text = (n: number) =>
      `${Array.from({ length: 3 + (n % 5) }, () => words[Math.floor(rand() * words.length)]!).join(' ')} note${n}`;
    const final = new Map<number, EngineDoc>();
    const docAt = (id: number, version: number): EngineDoc => ({
      id,
      text: text(id * 31 + version),
      sessionId: `s${Math.ceil(id / 5)}`,
      createdAt: T0 + id * 60_000,
      importance: 0.5,
      feedback: 0,
      speaker: id % 3 ? 'Ann' : 'Bo',
    });
    const churned = new MemoryIndex();
    for (let id = 1; id <= 120; id++) churned.upsert(docAt(id, 0));
    for (let round = 1; round <= 40; round++) {
      const id = 1 + Math.floor(rand() * 120);
      if (round % 3 === 0) churned.remove(id);
      else churned.upsert(docAt(id, round));
      // A search between changes compacts postings; the next changes then dirty them again.
      if (round % 7 === 0) churned.search('garden piano', { k: 5, now: T0 });
    }
    for (let id = 1; id <= 120; id++) {
      // Removed ones are added back, the rest replaced once more: every posting sees a stale entry.
      const d = docAt(id, 100 + id);
      churned.upsert(d);
      final.set(id, d);
    }
    for (let id = 1; id <= 120; id += 4) {
      churned.remove(id);
      final.delete(id);
    }
    const fresh = build([...final.values()]);
    expect(churned.size).toBe(fresh.size);
    for (const q of [
      'garden piano',
      'tomato violin harbour',
      'lantern',
      'what did Ann say about the ferry',
      'canyon pottery meadow compass',
    ]) {
      const a = churned.search(q, { k: 10, now: T0, explain: true });
      const b = fresh.search(q, { k: 10, now: T0, explain: true });
      expect(
        a.map((h) => h.id),
        q,
      ).toEqual(b.map((h) => h.id));
      a.forEach((h, i) => expect(h.score).toBeCloseTo(b[i]!.score, 9));
    }
  });

  it("keeps common terms' context postings between searches and answers exactly as without them, through every kind of write", () => {
    const words = [
      'garden',
      'piano',
      'tomato',
      'violin',
      'harbour',
      'lantern',
      'orchard',
      'meadow',
      'compass',
      'ferry',
    ];
    let seed = 11;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const docOf = (id: number, session: string | null): EngineDoc => ({
      id,
      text: Array.from({ length: 2 + Math.floor(rand() * 6) }, () => words[Math.floor(rand() * words.length)]!).join(
        ' ',
      ),
      sessionId: session,
      createdAt: T0 + id * 60_000,
      importance: 0.5,
      feedback: 0,
    });
    const kept = new MemoryIndex({ embedder: null, contextCacheShare: 4 });
    const none = new MemoryIndex({ embedder: null, contextCacheShare: 0 });
    const both = (f: (idx: MemoryIndex) => void) => [kept, none].forEach(f);
    // Sessions of 10, so that every common word has far more than the postings a term needs to be kept.
    for (let id = 1; id <= 400; id++) {
      const d = docOf(id, `s${Math.ceil(id / 10)}`);
      both((idx) => idx.upsert(d));
    }
    const queries = ['garden piano', 'tomato violin harbour', 'lantern orchard', 'meadow compass ferry', 'piano'];
    const same = () => {
      for (const q of queries)
        expect(kept.search(q, { k: 8, now: T0, explain: true }), q).toEqual(
          none.search(q, { k: 8, now: T0, explain: true }),
        );
    };
    same();
    const grown = kept.approxBytes();
    expect(grown).toBeGreaterThan(none.approxBytes());
    let nextNew = 1000;
    for (let round = 0; round < 60; round++) {
      const kind = round % 5;
      const id = 1 + Math.floor(rand() * 400);
      // New turns at a session's end and in its middle (an id below its last), replacements that keep,
      // change or drop their session, removals: each changes some doc's neighbours.
      const d =
        kind === 0
          ? docOf(nextNew++, `s${1 + Math.floor(rand() * 40)}`)
          : kind === 1
            ? docOf(id + 0.5, `s${Math.ceil(id / 10)}`)
            : kind === 2
              ? docOf(id, `s${Math.ceil(id / 10)}`)
              : kind === 3
                ? docOf(id, rand() < 0.5 ? null : `s${1 + Math.floor(rand() * 40)}`)
                : null;
      if (d) both((idx) => idx.upsert(d));
      else both((idx) => idx.remove(id));
      same();
    }
    // A restored index keeps them too, from its first search on.
    const restored = MemoryIndex.restore(kept.snapshot(), { embedder: null, contextCacheShare: 4 });
    for (const q of queries)
      expect(restored.search(q, { k: 8, now: T0, explain: true }), q).toEqual(
        none.search(q, { k: 8, now: T0, explain: true }),
      );
    expect(restored.approxBytes()).toBeGreaterThan(
      MemoryIndex.restore(kept.snapshot(), { embedder: null, contextCacheShare: 0 }).approxBytes(),
    );
  });

  it('indexes of every size share the search buffers: a search that throws leaves none of its scores to the next', () => {
    const words = ['garden', 'piano', 'tomato', 'violin', 'harbour', 'lantern', 'orchard', 'meadow'];
    const docsOf = (n: number, salt: number): EngineDoc[] =>
      Array.from({ length: n }, (_, i) => ({
        id: i + 1,
        text: `${words[(i * salt) % words.length]} ${words[(i + salt) % words.length]} note${i % 7}`,
        sessionId: `s${i >> 3}`,
        createdAt: T0 + i * 60_000,
        importance: 0.5,
        feedback: 0,
        speaker: i % 2 ? 'Ann' : 'Bo',
      }));
    const [small, large] = [build(docsOf(40, 3)), build(docsOf(900, 5))];
    const queries = ['garden piano', 'what did Ann say about the harbour', 'lantern meadow note3'];
    const answers = (index: MemoryIndex) => queries.map((q) => index.search(q, { k: 10, now: T0, explain: true }));
    const expected = [answers(build(docsOf(40, 3))), answers(build(docsOf(900, 5)))];
    let calls = 0;
    const failing = () => {
      if (++calls > 5) throw new Error('filter failed');
      return true;
    };
    for (const index of [large, small, large]) {
      expect(() => index.search('garden piano harbour', { k: 3, now: T0, filter: failing })).toThrow('filter failed');
      calls = 0;
      expect([answers(small), answers(large)]).toEqual(expected);
    }
  });
});
