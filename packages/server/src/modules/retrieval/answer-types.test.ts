import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { addAll, freshUser, idsOf, query } from '../../testing/retrieval.js';

// Answer types (issue 53, item 3): a question naming a kind of thing finds the memory naming an instance of it,
// though they share no word. The instances below are in no hand-written list (engine/answer-types.ts), only in the
// lexicon of kinds generated from WordNet (engine/nlp/word-kinds.txt).
forEachDialect('answer types in POST /memory/query', (dialect) => {
  const t = useTestApp(dialect);

  it('finds an instance of the kind the question names through the lexicon of kinds', async () => {
    const endUser = freshUser();
    const [bassoon, ferret] = await addAll(
      t,
      [
        'Practised the bassoon for an hour before dinner',
        'We adopted a ferret from the rescue centre',
        'Booked the dentist for Thursday morning',
        'The kitchen needs a new coat of paint',
      ],
      { endUser },
    );
    const instruments = await query(t, { query: 'Which instruments have I learned?', explain: true }, { endUser });
    expect(idsOf(instruments)).toEqual([bassoon.id]);
    expect(instruments[0].explanation.lexical).toBeGreaterThan(0);
    expect(idsOf(await query(t, 'What pets do we have?', { endUser }))).toEqual([ferret.id]);
  });

  it('reads two words naming a kind as one ("martial arts"), not as the second word alone', async () => {
    const endUser = freshUser();
    const [taekwondo, painting] = await addAll(
      t,
      ['Got my yellow belt in taekwondo last week', 'Finished a painting of the harbour', 'Paid the electricity bill'],
      { endUser },
    );
    // "painting" answers "what art", not "what martial arts".
    expect(idsOf(await query(t, 'What martial arts do I practise?', { endUser }))).toEqual([taekwondo.id]);
    expect(idsOf(await query(t, 'What art do I make?', { endUser }))).toEqual([painting.id]);
  });
});
