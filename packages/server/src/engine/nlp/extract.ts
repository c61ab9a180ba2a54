// Statements -> entities, typed relations (with polarity) and categories, by rules. Deterministic and offline.
import { analyze } from '../text.js';
import { findEntities, type CustomNames, type EntityMention } from './entities.js';
import { FAVORITE_PREFIX, type Ontology, type RelationTypeDef } from './ontology.js';
import { keyOf, tokenizeWithOffsets, type Token } from './tokens.js';
import { favoriteKind, HEDGES, PHRASE_ENDS, speaksOfFuture } from './lexicon.js';
import { unframed } from './fact-frames.js';
import { personalFacts } from './facts.js';
import { type Emit, PRONOUN_SUBJECT } from './fact-model.js';
import { nounFacts } from './fact-nouns.js';
import {
  type HabitChange,
  habitChangesOf,
  lapsesOf,
  likingsGivenUp,
  replacedEndings,
  rivalPreferences,
} from './fact-shifts.js';
import { agesReached } from './fact-ages.js';
import { coupleStatuses, ownBreakUps } from './fact-couples.js';
import { favouritesSwitched, favouritesUnnamed } from './fact-favourites.js';
import { pastFrame } from './past-frames.js';
import { slotFacts } from './fact-slots.js';
import { THING_PRONOUN, worldFacts } from './fact-world.js';
import { type Ending, endingsOf } from './fact-endings.js';
import { presupposedFacts } from './fact-presupposed.js';
import { type Update, updatesOf } from './fact-kinds.js';
import { endedState } from './fact-phrases.js';
import { chatText } from './chat-text.js';

/** The end user (or the speaker of a turn) when a statement is in the first person. */
export const SELF = '@self';

export interface EntityRef {
  name: string;
  type: string;
}

export interface RelationFact {
  subject: EntityRef;
  relation: string;
  object: EntityRef;
  /** "I don't live in Paris anymore": the statement denies the relation. */
  negated: boolean;
  singleValued: boolean;
  /** What one value is held per, besides subject and relation ("coffee | tea" for prefers, "swim | frequency" for habit). */
  aspect?: string;
  /** "I used to live in Paris": a denial of now that ends the fact, but makes no later statement of it a change. */
  past?: boolean;
}

export interface Extraction {
  entities: EntityRef[];
  relations: RelationFact[];
  categories: string[];
  /** Facts of a bare "he"/"she"/"they" the text does not name (subject named `PRONOUN_SUBJECT` + the pronoun). */
  ofPronoun?: RelationFact[];
  /** Possessions a text ends by naming them "it" ("I sold it"), object `THING_PRONOUN`: of the thing named before. */
  ofThing?: RelationFact[];
  /** Sentences saying that something of a subject's ended, by the words they name (fact-endings.ts). */
  endings?: Ending[];
  /** A habit's new time or frequency, said without the rules' frame (fact-shifts.ts). */
  habitChanges?: HabitChange[];
  /** Sentences stating a new value of a kind of attribute without naming it in a rule's frame (fact-kinds.ts). */
  updates?: Update[];
}

interface Cue {
  relation: RelationTypeDef;
  keys: string[];
}

// Words that may stand between a subject and its verb without changing who acts.
const BETWEEN = new Set([
  'just',
  'recently',
  'finally',
  'now',
  'also',
  'still',
  'currently',
  'really',
  'actually',
  'already',
  'have',
  'do',
  'be',
  'not',
  'never',
  'no',
  'longer',
  'always',
  'absolut',
  'total',
  'truli',
  'so',
  'offici',
  'eventu',
  'then',
  'again',
  'sinc',
  'happili',
  'definit',
  'honest',
  'genuin',
  'realli',
  'too',
  'even',
  'all',
  'both',
  'current',
  'last',
  'year',
  'month',
  'week',
  'get',
  'new',
  'proud',
  'on',
  'off',
]);
// Words that make a statement hypothetical or past rather than a fact about now.
const HYPOTHETICAL = new Set([...HEDGES, 'go', 'can']);
const NEGATIONS = new Set(['not', 'never']);
const OBJECT_STOP = new Set([
  ...PHRASE_ENDS,
  'be',
  'veri',
  'a',
  'right',
  'tonight',
  'togeth',
  'sometim',
  'everi',
  'whenev',
  // A relative clause's subject: "an old car I barely drive".
  'i',
  'we',
  'you',
  'he',
  'she',
  'they',
]);
const DETERMINERS = new Set([
  'a',
  'an',
  'the',
  'my',
  'our',
  'some',
  'his',
  'her',
  'their',
  'your',
  'this',
  'that',
  'these',
  'those',
  'two',
  'three',
  'new',
  'own',
  'little',
  'big',
  'first',
  'second',
  'lovely',
  'beauti',
  'cute',
  'old',
]);
const OBJECT_PRONOUNS = new Set([
  'it',
  'that',
  'this',
  'them',
  'him',
  'her',
  'you',
  'me',
  'us',
  'there',
  'here',
  'someth',
  'anyth',
  'everyth',
  'noth',
  'one',
  'what',
  'lot',
  'way',
  'time',
  'to',
  'home',
  'bit',
]);
const THIRD_PERSON = new Set(['he', 'she']);
const FAVOURITE_ADVERBS = new Set([
  'now',
  'current',
  'still',
  'definit',
  'probabl',
  'actual',
  'realli',
  'offici',
  'total',
  'absolut',
  'easili',
]);
const SPOUSE = new Set(['wife', 'husband', 'spous']);

/** Compiles an ontology's relation cues and category cues once; `extract` is then a pure function of the text. */
export class Extractor {
  private readonly cues: Cue[];
  private readonly favorites: RelationTypeDef | undefined;
  private readonly byName: Map<string, RelationTypeDef>;
  private readonly married: RelationTypeDef | undefined;
  private readonly custom: CustomNames;
  private readonly categoryCues: Array<{ name: string; stems: string[][] }>;

  constructor(ontology: Ontology) {
    this.cues = ontology.relation_types
      .flatMap((relation) =>
        relation.cues.map((cue) => ({ relation, keys: tokenizeWithOffsets(cue).map((t) => t.key) })),
      )
      .filter((c) => c.keys.length > 0)
      .sort((a, b) => b.keys.length - a.keys.length);
    this.favorites = ontology.relation_types.find((r) => r.name === `${FAVORITE_PREFIX}*`);
    this.married = ontology.relation_types.find((r) => r.name === 'married_to');
    this.byName = new Map(ontology.relation_types.map((r) => [r.name, r]));
    this.custom = new Map(
      ontology.entity_types.flatMap((t) => t.examples.map((e) => [e.toLowerCase(), t.name] as [string, string])),
    );
    this.categoryCues = ontology.categories.map((c) => ({
      name: c.name,
      stems: c.cues.map((cue) => analyze(cue)).filter((s) => s.length > 0),
    }));
  }

  /**
   * An extraction with facts read elsewhere (a chat model's, model-facts.ts) added: those of relations the ontology
   * declares, valued by the types it allows, and not stated already.
   */
  withFacts(extraction: Extraction, facts: Array<Omit<RelationFact, 'singleValued'>>): Extraction {
    const relations = [...extraction.relations];
    const seen = new Set(relations.map(factKey));
    const entities = new Map(extraction.entities.map((e) => [`${e.type}\u0000${e.name}`, e]));
    for (const f of facts) {
      const favorite = f.relation.startsWith(FAVORITE_PREFIX);
      const def = favorite ? this.favorites : this.byName.get(f.relation);
      if (!def || (!favorite && !allowed(def.target_types, f.object.type))) continue;
      const fact: RelationFact = { ...f, singleValued: def.single_valued };
      if (seen.has(factKey(fact))) continue;
      seen.add(factKey(fact));
      relations.push(fact);
      if (f.object.type !== 'concept') entities.set(`${f.object.type}\u0000${f.object.name}`, f.object);
    }
    return { ...extraction, entities: [...entities.values()], relations };
  }

  /** Entities, relations and categories of one memory; `speaker` names who "I" is in a conversation turn. */
  extract(said: string, speaker?: string | null): Extraction {
    const text = chatText(said);
    const extraction = this.read(text, speaker);
    // A fact stated only in a sentence of the past or of a wish ("I was 18 when I moved out") is no fact of now.
    const frame = pastFrame(text);
    if (!frame) return extraction;
    const now = new Set(frame.rest.trim() ? this.read(frame.rest, speaker).relations.map(factKey) : []);
    const then = new Set(
      this.read(frame.past, speaker)
        .relations.filter(
          (r) =>
            // "I used to drink five coffees a day in grad school": a habit of then, which says nothing of now.
            (!r.negated || frame.stateDenied || r.past) &&
            !(frame.begun && (r.relation === 'does' || r.relation === 'habit')) &&
            !now.has(factKey(r)),
        )
        .map(factKey),
    );
    return { ...extraction, relations: extraction.relations.filter((r) => !then.has(factKey(r))) };
  }

  /** The extraction of a text already in the rules' spelling (chat-text.ts). */
  private read(text: string, speaker?: string | null): Extraction {
    const tokens = tokenizeWithOffsets(text);
    const mentions = findEntities(tokens, this.custom);
    const self: EntityRef = speaker ? { name: speaker, type: 'person' } : { name: SELF, type: 'person' };
    // The cues and the fact rules read the clauses with their frames removed (fact-frames.ts); entities are the text's.
    const read = unframed(tokens, mentions);
    const relations = this.relations(read.tokens, read.mentions, self);
    const seen = new Set(relations.map(factKey));
    const personal: Emit = (subject, relation, object, negated, aspect, past) => {
      const def = relation.startsWith(FAVORITE_PREFIX) ? this.favorites : this.byName.get(relation);
      if (!def || !object.name) return;
      const fact: RelationFact = {
        subject,
        relation,
        object,
        negated,
        singleValued: def.single_valued,
        ...(aspect ? { aspect } : {}),
        ...(past ? { past } : {}),
      };
      const key = factKey(fact);
      if (seen.has(key)) return;
      seen.add(key);
      relations.push(fact);
    };
    personalFacts(read.tokens, read.mentions, self, personal);
    // A fact stated through its attribute's noun ("our new place in Leeds"), when no rule above read it.
    nounFacts(read.tokens, read.mentions, self, personal);
    // Values only world knowledge tells apart (a religion, a language, a team) and a thing named by "it".
    worldFacts(read.tokens, read.mentions, self, personal);
    // A home or an employer implied by what surrounds it ("the landlord here in Leeds", "my shift at the bank").
    slotFacts(read.tokens, read.mentions, self, personal);
    // Preferences and likings said without a verb of liking ("I'm a tea person", "I'm so over jazz").
    rivalPreferences(read.tokens, read.mentions, self, personal);
    likingsGivenUp(read.tokens, read.mentions, self, personal);
    favouritesUnnamed(read.tokens, self, personal);
    favouritesSwitched(read.tokens, self, personal);
    agesReached(read.tokens, read.mentions, self, personal);
    coupleStatuses(read.tokens, read.mentions, self, personal);
    ownBreakUps(tokens, self, personal);
    // Facts an event presupposes ("we welcomed our baby girl", "my dog Max", "made an Instagram").
    presupposedFacts(read.tokens, read.mentions, self, personal);
    // A state the personal-fact rules read as ended ("I worked at IKEA for ten years") is not also a fact of now.
    const ended = new Set(relations.filter((r) => r.past).map((r) => factKey({ ...r, negated: false })));
    const kept = relations.filter((r) => r.negated || !ended.has(factKey(r)));
    const ofPronoun = kept.filter((r) => r.subject.name.startsWith(PRONOUN_SUBJECT));
    const ofThing = kept.filter((r) => r.object.name === THING_PRONOUN);
    relations.splice(
      0,
      relations.length,
      ...kept.filter((r) => !r.subject.name.startsWith(PRONOUN_SUBJECT) && r.object.name !== THING_PRONOUN),
    );
    const entities = new Map<string, EntityRef>();
    for (const m of mentions) entities.set(`${m.type}\u0000${m.name}`, { name: m.name, type: m.type });
    const endings = [
      ...endingsOf(tokens, mentions, self),
      ...lapsesOf(tokens, mentions, self),
      ...replacedEndings(tokens, mentions, self),
    ];
    const habitChanges = habitChangesOf(tokens, mentions, self);
    const updates = updatesOf(tokens, mentions, self);
    return {
      entities: [...entities.values()],
      relations,
      categories: this.categorise(text),
      ...(ofPronoun.length ? { ofPronoun } : {}),
      ...(ofThing.length ? { ofThing } : {}),
      ...(endings.length ? { endings } : {}),
      ...(habitChanges.length ? { habitChanges } : {}),
      ...(updates.length ? { updates } : {}),
    };
  }

  private categorise(text: string): string[] {
    const stems = analyze(text);
    const joined = ` ${stems.join(' ')} `;
    return this.categoryCues.filter((c) => c.stems.some((s) => joined.includes(` ${s.join(' ')} `))).map((c) => c.name);
  }

  private relations(tokens: Token[], mentions: EntityMention[], self: EntityRef): RelationFact[] {
    const mentionAt = new Map<number, EntityMention>();
    const mentionEnding = new Map<number, EntityMention>();
    for (const m of mentions) {
      mentionAt.set(m.first, m);
      mentionEnding.set(m.last - 1, m);
    }
    const out: RelationFact[] = [];
    const seen = new Set<string>();
    const add = (fact: RelationFact) => {
      const key = factKey(fact);
      if (!seen.has(key)) {
        seen.add(key);
        out.push(fact);
      }
    };
    let lastPerson: EntityRef | null = null;
    for (let i = 0; i < tokens.length; i++) {
      const ending = mentionEnding.get(i);
      if (ending?.type === 'person') lastPerson = { name: ending.name, type: 'person' };
      const possessive = this.possessiveFact(tokens, i, mentionAt, mentionEnding, self);
      if (possessive) add(possessive);
      for (const cue of this.cues) {
        if (!cue.keys.every((k, j) => tokens[i + j]?.key === k)) continue;
        const fact = this.cueFact(tokens, i, cue, mentionAt, mentionEnding, self, lastPerson);
        if (fact) add(fact);
        break;
      }
    }
    return out;
  }

  /** Walks left from a cue over auxiliaries and adverbs to its subject; notes negation and hedging on the way. */
  private subjectBefore(
    tokens: Token[],
    cueStart: number,
    mentionEnding: Map<number, EntityMention>,
    self: EntityRef,
    lastPerson: EntityRef | null,
  ): { subject: EntityRef; negated: boolean; past: boolean } | null {
    let negated = false;
    let past = false;
    for (let j = cueStart - 1; j >= 0 && j >= cueStart - 6; j--) {
      const t = tokens[j]!;
      if (t.lower === 'i' || t.lower === 'we') return { subject: self, negated, past };
      const person = mentionEnding.get(j);
      if (person?.type === 'person') return { subject: { name: person.name, type: 'person' }, negated, past };
      if (THIRD_PERSON.has(t.lower)) return lastPerson ? { subject: lastPerson, negated, past } : null;
      // "I used to live in Paris": true once, not now.
      if (t.key === 'to' && tokens[j - 1]?.lower === 'used') {
        negated = true;
        past = true;
        j--;
        continue;
      }
      if (HYPOTHETICAL.has(t.key)) return null;
      if (NEGATIONS.has(t.key) || (t.key === 'no' && tokens[j + 1]?.key === 'longer')) negated = true;
      if (!BETWEEN.has(t.key) && !NEGATIONS.has(t.key)) return null;
    }
    return null;
  }

  private objectAfter(
    tokens: Token[],
    start: number,
    mentionAt: Map<number, EntityMention>,
  ): { ref: EntityRef; end: number } | null {
    let i = start;
    while (tokens[i] && DETERMINERS.has(tokens[i]!.key) && !mentionAt.has(i)) i++;
    const mention = mentionAt.get(i);
    if (mention) return { ref: { name: mention.name, type: mention.type }, end: mention.last };
    const words: string[] = [];
    let j = i;
    while (tokens[j] && words.length < 3 && !OBJECT_STOP.has(tokens[j]!.key) && !mentionAt.has(j)) {
      words.push(tokens[j]!.lower);
      j++;
    }
    if (words.length === 0 || OBJECT_PRONOUNS.has(keyOf(words[0]!)) || /^\d/.test(words[0]!)) return null;
    if (/ing$/.test(words[0]!) && words.length > 1) words.splice(1);
    return { ref: { name: words.join(' '), type: 'concept' }, end: j };
  }

  private cueFact(
    tokens: Token[],
    i: number,
    cue: Cue,
    mentionAt: Map<number, EntityMention>,
    mentionEnding: Map<number, EntityMention>,
    self: EntityRef,
    lastPerson: EntityRef | null,
  ): RelationFact | null {
    const found = this.subjectBefore(tokens, i, mentionEnding, self, lastPerson);
    if (!found) return null;
    // "We're moving to York next month": a plan.
    if (speaksOfFuture(tokens.slice(i, i + 10).map((t) => t.key))) return null;
    let object = this.objectAfter(tokens, i + cue.keys.length, mentionAt);
    // "I live in a small town in Ohio": a place named a few words on is where.
    if (object && !allowed(cue.relation.target_types, object.ref.type) && cue.relation.target_types.includes('place')) {
      const start = i + cue.keys.length;
      const place = [...Array(7).keys()].map((k) => mentionAt.get(start + k)).find((m) => m?.type === 'place');
      if (place) object = { ref: { name: place.name, type: 'place' }, end: place.last };
    }
    if (!object || !allowed(cue.relation.target_types, object.ref.type)) return null;
    // "joined a gym", "joined a mentorship program", "join forces": membership, not a job; only a named organisation is an employer.
    if (cue.keys.length === 1 && cue.keys[0] === 'join' && object.ref.type !== 'organization') return null;
    // "I worked at IKEA for ten years": a state over a span in the past is not one of now.
    const from = Math.max(0, i - 4);
    const verb = ['was', 'were'].includes(tokens[i - 1]?.lower ?? '') ? i - 1 : i;
    const ended = endedState(tokens.slice(from, i + 12), verb - from);
    return {
      subject: found.subject,
      relation: cue.relation.name,
      object: object.ref,
      negated: found.negated || ended,
      singleValued: cue.relation.single_valued,
      ...(found.past || ended ? { past: true } : {}),
    };
  }

  /** "my favorite color is blue", "Mel's favourite band is …", "my wife Anna" / "my husband is Tom". */
  private possessiveFact(
    tokens: Token[],
    i: number,
    mentionAt: Map<number, EntityMention>,
    mentionEnding: Map<number, EntityMention>,
    self: EntityRef,
  ): RelationFact | null {
    const t = tokens[i]!;
    let owner: EntityRef | null = null;
    let next = i + 1;
    if (t.lower === 'my') owner = self;
    else if (tokens[i + 1]?.text === "'s" && mentionEnding.get(i)?.type === 'person') {
      owner = { name: mentionEnding.get(i)!.name, type: 'person' };
      next = i + 2;
    }
    if (!owner) return null;
    // "my new favorite movie", "my all-time favourite band".
    while (tokens[next] && ['new', 'current', 'all-tim', 'all-time', 'absolut'].includes(tokens[next]!.key)) next++;
    if (this.favorites && tokens[next]?.key === 'favorit') {
      const thing: string[] = [];
      let j = next + 1;
      while (tokens[j] && tokens[j]!.key !== 'be' && !tokens[j]!.punct && thing.length < 3)
        thing.push(tokens[j++]!.lower);
      if (tokens[j]?.key !== 'be' || thing.length === 0) return null;
      // "my favorite author is now Le Guin", "... is still jazz", "... is not X".
      let k = j + 1;
      while (tokens[k] && FAVOURITE_ADVERBS.has(tokens[k]!.key)) k++;
      const negated = tokens[k]?.key === 'not';
      const object = this.objectAfter(tokens, k + (negated ? 1 : 0), mentionAt);
      if (!object) return null;
      const kind = favoriteKind(thing);
      if (!kind) return null;
      const relation = `${FAVORITE_PREFIX}${kind}`;
      return { subject: owner, relation, object: object.ref, negated, singleValued: this.favorites.single_valued };
    }
    if (this.married && SPOUSE.has(tokens[next]?.key ?? '')) {
      let j = next + 1;
      if (tokens[j]?.text === ',') j++;
      if (tokens[j]?.key === 'be') j++;
      const mention = mentionAt.get(j);
      if (mention?.type !== 'person') return null;
      return {
        subject: owner,
        relation: this.married.name,
        object: { name: mention.name, type: 'person' },
        negated: false,
        singleValued: this.married.single_valued,
      };
    }
    return null;
  }
}

const factKey = (f: RelationFact) =>
  `${f.subject.name}|${f.relation}|${f.object.name.toLowerCase()}|${f.negated}|${f.aspect ?? ''}`;

const allowed = (types: string[], type: string) =>
  types.length === 0 || types.includes(type) || (type === 'concept' && types.includes('concept'));
