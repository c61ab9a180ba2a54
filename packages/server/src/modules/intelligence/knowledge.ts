// What an end user's memories say, derived: the entity graph with fact validity, and conflicting statements.
// Pure functions of the extracted memories, so every process derives the same answer from the same rows.
import { sha256Hex } from '../../core/crypto.js';
import {
  ELSEWHERE,
  placeWithin,
  PRONOUN_SUBJECT,
  pronounFits,
  personAliases,
  SELF,
  type EntityRef,
  type Extraction,
  type RelationFact,
} from '../../engine/nlp/index.js';
import { KIND_RELATIONS, updateFits, valueNamed, valueWords } from './fact-ends.js';
import { isOfKind, KIND_OF, thingWord, TIME_WORDS } from './thing-words.js';

export interface ExtractedMemory {
  id: number;
  createdAt: string;
  supersededBy: number | null;
  isSummary: boolean;
  extraction: Extraction;
}

export interface GraphNode {
  id: string;
  name: string;
  type: string;
  aliases: string[];
  memory_ids: number[];
  is_end_user: boolean;
}

export interface GraphEdge {
  id: string;
  source: string;
  target: string;
  type: string;
  memory_ids: number[];
  valid_at: string;
  invalid_at: string | null;
  /** The memory whose statement ended this fact. */
  invalidated_by: number | null;
}

export interface Conflict {
  id: number;
  kind: 'single_valued' | 'negation';
  subject: { id: string; name: string };
  attribute: string;
  values: Array<{ memory_id: number; value: string; negated: boolean; stated_at: string }>;
  older: number;
  newer: number;
  detected_at: string;
}

export interface Knowledge {
  nodes: Map<string, GraphNode>;
  edges: GraphEdge[];
  conflicts: Conflict[];
}

const nodeId = (ref: EntityRef) => (ref.name === SELF ? 'self' : `${ref.type}:${ref.name.toLowerCase()}`);

/** A stable positive integer (48 bits) for a decision, so its id survives recomputation on any process. */
export function decisionId(key: string): number {
  return parseInt(sha256Hex(key).slice(0, 12), 16);
}

const edgeId = (key: string) => `e_${sha256Hex(key).slice(0, 16)}`;

/** Memories in the order their statements were made (creation time, then id). */
const chronological = (memories: ExtractedMemory[]) =>
  [...memories].sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id - b.id));

/** The extractor keeps a relative's age as the end user's with the relative as aspect ("My dad is 66"). */
const KIN_AGE = /^my (\w+)$/;

/** The last person other than the end user a memory's facts are of ("my dad" for "My dad is 66"). */
function personSpokenOf(relations: RelationFact[]): EntityRef | undefined {
  const r = relations.findLast(
    (r) => (r.subject.type === 'person' && r.subject.name !== SELF) || (r.relation === 'age' && r.aspect),
  );
  return r && r.subject.name === SELF ? { name: `my ${r.aspect}`, type: 'person' } : r?.subject;
}

/** A pronoun's fact as the extractor states it of the person named. */
function ofPerson(fact: RelationFact, person: EntityRef): RelationFact {
  const kin = KIN_AGE.exec(person.name);
  if (fact.relation === 'age' && kin && !fact.aspect)
    return { ...fact, subject: { name: SELF, type: 'person' }, aspect: kin[1]! };
  return { ...fact, subject: person };
}

/**
 * "Priya lives in Chicago." then "She's moved to Atlanta.": a fact the extractor read of a bare pronoun is of the
 * person the end user's memory just before spoke of (that memory's last subject other than the end user); with
 * no such person, or one the pronoun cannot stand for, it is dropped.
 */
function pronounsNamed(ordered: ExtractedMemory[]): ExtractedMemory[] {
  let previous: EntityRef | null = null;
  return ordered.map((m) => {
    if (m.isSummary) return m;
    const before = previous;
    let resolved: RelationFact[] = [];
    if (before && m.extraction.ofPronoun) {
      resolved = m.extraction.ofPronoun
        .filter((r) => pronounFits(r.subject.name.slice(PRONOUN_SUBJECT.length), before.name))
        .map((r) => ofPerson(r, before));
    }
    previous = personSpokenOf([...m.extraction.relations, ...resolved]) ?? null;
    if (!resolved.length) return m;
    return { ...m, extraction: { ...m.extraction, relations: [...m.extraction.relations, ...resolved] } };
  });
}

/**
 * "I bought a Honda last year." then "I sold it last week.": a possession a memory ends by naming it "it" is the
 * thing the end user's memory just before had (its last possession of the same subject); with none, it is dropped.
 */
function thingsNamed(ordered: ExtractedMemory[]): ExtractedMemory[] {
  let previous: RelationFact[] = [];
  return ordered.map((m) => {
    if (m.isSummary) return m;
    const before = previous;
    previous = m.extraction.relations.filter((r) => !r.negated && (r.relation === 'has' || r.relation === 'drives'));
    if (!m.extraction.ofThing) return m;
    const resolved = m.extraction.ofThing.flatMap((r) => {
      const thing = before.findLast((b) => b.subject.name === r.subject.name);
      return thing ? [{ ...r, object: thing.object }] : [];
    });
    if (!resolved.length) return m;
    return { ...m, extraction: { ...m.extraction, relations: [...m.extraction.relations, ...resolved] } };
  });
}

/** Builds nodes (with person short names merged into full names), edges with validity, and conflicts. */
export function deriveKnowledge(memories: ExtractedMemory[], endUserName: string): Knowledge {
  const ordered = thingsNamed(pronounsNamed(chronological(memories)));
  const aliases = personAliases(
    ordered.flatMap((m) => [
      ...m.extraction.entities.filter((e) => e.type === 'person').map((e) => e.name),
      ...m.extraction.relations
        .flatMap((r) => [r.subject, r.object])
        .filter((e) => e.type === 'person' && e.name !== SELF)
        .map((e) => e.name),
    ]),
  );
  const canonical = (ref: EntityRef): EntityRef =>
    ref.type === 'person' && aliases.has(ref.name) ? { name: aliases.get(ref.name)!, type: 'person' } : ref;

  const nodes = new Map<string, GraphNode & { aliasSet: Set<string>; memorySet: Set<number> }>();
  const touch = (ref: EntityRef, memoryId: number) => {
    const c = canonical(ref);
    const id = nodeId(c);
    let node = nodes.get(id);
    if (!node) {
      const self = c.name === SELF;
      node = {
        id,
        name: self ? endUserName : c.name,
        type: c.type,
        aliases: [],
        memory_ids: [],
        is_end_user: self,
        aliasSet: new Set(),
        memorySet: new Set(),
      };
      nodes.set(id, node);
    }
    if (ref.name !== c.name) node.aliasSet.add(ref.name);
    node.memorySet.add(memoryId);
    return id;
  };

  for (const m of ordered) {
    for (const e of m.extraction.entities) touch(e, m.id);
    for (const r of m.extraction.relations) {
      touch(r.subject, m.id);
      touch(r.object, m.id);
    }
  }
  const idOf = (ref: EntityRef) => nodeId(canonical(ref));
  const resolve = (r: RelationFact) => ({ ...r, source: idOf(r.subject), target: idOf(r.object) });
  const edges = timeline(ordered, resolve, idOf, true).edges;
  const conflicts = timeline(ordered, resolve, idOf, false).conflicts.map((c) => ({
    ...c,
    subject: { id: c.subject, name: nodes.get(c.subject)?.name ?? c.subject },
    values: c.values.map((v) => ({ ...v, value: nodes.get(v.value)?.name ?? v.value })),
  }));
  const finished = new Map<string, GraphNode>();
  for (const [id, { aliasSet, memorySet, ...node }] of nodes) {
    finished.set(id, { ...node, aliases: [...aliasSet].sort(), memory_ids: [...memorySet].sort((a, b) => a - b) });
  }
  return { nodes: finished, edges, conflicts };
}

type Resolved = RelationFact & { source: string; target: string };

/** Relations whose positive statement denies the other's (the same object liked, then hated). */
const OPPOSITES: Record<string, string> = { likes: 'dislikes', dislikes: 'likes' };
/**
 * Facts that cannot hold together though their relations differ: a vegetarian who eats meat, a
 * teetotaller who drinks. Either, stated after the other, ends it (a conflict of kind negation).
 */
const EXCLUSIVE: Array<[string, string]> = [
  // "*": any value of a single-valued relation (being single ends a partner, any job ends being out of work).
  ['relationship_status|concept:single', 'partner|*'],
  ['relationship_status|concept:single', 'married_to|*'],
  ['relationship_status|concept:single', 'has|concept:girlfriend'],
  ['relationship_status|concept:single', 'has|concept:boyfriend'],
  ['relationship_status|concept:single', 'has|concept:partner'],
  // The employment frame: out of work, retired or one's own boss has no employer.
  ['works_as|concept:unemployed', 'works_at|*'],
  ['works_as|concept:retired', 'works_at|*'],
  ['works_as|concept:self-employed', 'works_at|*'],
  ['is|concept:vegetarian', 'does|concept:eat meat'],
  ['is|concept:vegan', 'does|concept:eat meat'],
  ['is|concept:vegan', 'does|concept:eat dairy'],
  ['is|concept:vegetarian', 'does|concept:eat fish'],
  ['is|concept:vegan', 'does|concept:eat fish'],
  ['is|concept:pescatarian', 'does|concept:eat meat'],
  ['is|concept:sober', 'does|concept:drink'],
  ['is|concept:teetotal', 'does|concept:drink'],
  ['is|concept:non-smoker', 'does|concept:smoke'],
];
const EXCLUDES = new Map<string, string[]>();
for (const [a, b] of EXCLUSIVE) {
  EXCLUDES.set(a, [...(EXCLUDES.get(a) ?? []), b]);
  EXCLUDES.set(b, [...(EXCLUDES.get(b) ?? []), a]);
}
type RawConflict = Omit<Conflict, 'subject'> & { subject: string };

/**
 * Replays the statements in order. A single-valued relation keeps one current edge per subject: a
 * different value ends it (and is a conflict); a denial of a current fact ends it (also a conflict).
 * With `honourSupersession`, a memory that a resolution overruled never ends another fact.
 */
function timeline(
  ordered: ExtractedMemory[],
  resolve: (r: RelationFact) => Resolved,
  idOf: (ref: EntityRef) => string,
  honourSupersession: boolean,
) {
  const edges: GraphEdge[] = [];
  const conflicts: RawConflict[] = [];
  const current = new Map<string, GraphEdge>(); // subject|relation|object (multi) or subject|relation (single)
  const denied = new Map<string, { memoryId: number; at: string }>(); // subject|relation|object -> last denial
  const conflict = (
    kind: RawConflict['kind'],
    f: Resolved,
    older: GraphEdge | { memoryId: number; at: string; target: string; negated: boolean },
    m: ExtractedMemory,
  ) => {
    const olderId = 'memory_ids' in older ? older.memory_ids[older.memory_ids.length - 1]! : older.memoryId;
    const olderAt = 'memory_ids' in older ? older.valid_at : older.at;
    const olderTarget = 'memory_ids' in older ? older.target : older.target;
    const olderNegated = 'memory_ids' in older ? false : older.negated;
    if (olderId === m.id) return;
    conflicts.push({
      id: decisionId(`${kind}|${f.source}|${f.relation}|${olderId}|${m.id}`),
      kind,
      subject: f.source,
      attribute: f.relation,
      values: [
        { memory_id: olderId, value: olderTarget, negated: olderNegated, stated_at: olderAt },
        { memory_id: m.id, value: f.target, negated: f.negated, stated_at: m.createdAt },
      ],
      older: olderId,
      newer: m.id,
      detected_at: m.createdAt,
    });
  };
  const end = (edge: GraphEdge, m: ExtractedMemory) => {
    edge.invalid_at = m.createdAt;
    edge.invalidated_by = m.id;
  };
  for (const m of ordered) {
    if (m.isSummary) continue;
    const overruled = honourSupersession && m.supersededBy !== null;
    for (const raw of m.extraction.relations) {
      const f = resolve(raw);
      // Keys (and so edge ids) of facts without an aspect are as before aspects existed.
      const relation = f.aspect === undefined ? f.relation : `${f.relation}|${f.aspect}`;
      const factKey = `${f.source}|${relation}|${f.target}`;
      const slot = f.singleValued ? `${f.source}|${relation}` : factKey;
      const live = current.get(slot);
      // Liking what one disliked (or the reverse) ends the opposite fact, as its denial would.
      const opposite = OPPOSITES[f.relation];
      const contraries = f.negated
        ? []
        : [
            ...(opposite ? [`${opposite}|${f.target}`] : []),
            ...(EXCLUDES.get(`${f.relation}|${f.target}`) ?? []),
            ...(EXCLUDES.get(`${f.relation}|*`) ?? []),
          ];
      for (const contraryFact of contraries) {
        // A many-valued contrary has its own slot; a single-valued one ("partner|*", "works_as|…") the relation's.
        const [contraryRelation, contraryTarget] = contraryFact.split('|') as [string, string];
        const held = current.get(`${f.source}|${contraryRelation}`);
        const contrarySlot =
          held && (contraryTarget === '*' || held.target === contraryTarget)
            ? `${f.source}|${contraryRelation}`
            : `${f.source}|${contraryFact}`;
        const contrary = current.get(contrarySlot);
        if (contrary) {
          conflict('negation', { ...f, relation: contrary.type }, contrary, m);
          if (!overruled) {
            end(contrary, m);
            current.delete(contrarySlot);
          }
        }
      }
      // "I donated my old car" ends "I drive a Corolla": a vehicle no longer had is no longer driven.
      const drivenThing = (denied: Resolved) => {
        const driven = current.get(`${denied.source}|drives`);
        return denied.relation === 'has' && driven && sameThing(denied, `|${driven.target}`, true)
          ? `${denied.source}|drives`
          : undefined;
      };
      if (f.negated) {
        // A many-valued fact is denied by its head too ("I quit choir" ends "choir practice").
        // A single value is denied by its head too ("I resigned from the library" ends "the city library").
        const liveSlot =
          live && (sameValue(live.target, f.target) || (!f.aspect && sameThing(f, live.target, true)))
            ? slot
            : !matchedByHead(f)
              ? undefined
              : ([...current.keys()].find((k) => k.startsWith(`${f.source}|${relation}|`) && sameThing(f, k, true)) ??
                drivenThing(f));
        if (liveSlot) {
          const ended = current.get(liveSlot)!;
          conflict('negation', f, ended, m);
          if (!overruled) {
            end(ended, m);
            current.delete(liveSlot);
            // "I have a cat named Miso" / "Miso died": the kind the name was had as, stated with it, ends too.
            const kind = liveSlot.split('|').length === 4 ? liveSlot.split('|')[2] : undefined;
            const kindSlot = `${f.source}|${f.relation}|concept:${kind}`;
            const kindEdge = kind ? current.get(kindSlot) : undefined;
            if (kindEdge?.memory_ids.some((id) => ended.memory_ids.includes(id))) {
              end(kindEdge, m);
              current.delete(kindSlot);
            }
          }
        }
        // "I used to …" ends today's fact, but a later "I … again" is no change from it.
        if (!f.past) denied.set(factKey, { memoryId: m.id, at: m.createdAt });
        continue;
      }
      const deniedKey = !matchedByHead(f)
        ? factKey
        : [...denied.keys()].find(
            (k) => k === factKey || (k.startsWith(`${f.source}|${relation}|`) && sameThing(f, k, false)),
          );
      const denial = deniedKey === undefined ? undefined : denied.get(deniedKey);
      if (denial && !(live && sameValue(live.target, f.target))) {
        conflict('negation', f, { ...denial, target: f.target, negated: true }, m);
        denied.delete(deniedKey!);
      }
      if (live && (sameValue(live.target, f.target) || sameSlotValue(f.relation, live.target, f.target))) {
        if (!live.memory_ids.includes(m.id)) live.memory_ids.push(m.id);
        continue;
      }
      const edge: GraphEdge = {
        id: edgeId(`${factKey}|${m.id}`),
        source: f.source,
        target: f.target,
        type: f.relation,
        memory_ids: [m.id],
        valid_at: m.createdAt,
        invalid_at: null,
        invalidated_by: null,
      };
      edges.push(edge);
      // A home or a job begun unnamed ("we moved", "a new job") is named, not changed, by the value stated next.
      if (live && live.target !== UNNAMED) conflict('single_valued', f, live, m);
      if (overruled) {
        // Kept for the record, but never true: the resolution preferred another statement.
        edge.invalid_at = m.createdAt;
        edge.invalidated_by = m.supersededBy;
        continue;
      }
      if (live) end(live, m);
      current.set(slot, edge);
    }
    // Facts of a subject's that a sentence ends without a rule's frame (fact-ends.ts): "we said goodbye to the
    // caravan" ends the fact whose value it names; "Porto is home now" the fact of its kind whose value it does not.
    const endFacts = (
      kind: RawConflict['kind'],
      subject: EntityRef,
      ends: (slot: string, edge: GraphEdge) => boolean,
    ) => {
      const source = idOf(subject);
      for (const [slot, edge] of current) {
        if (edge.source !== source || edge.memory_ids.includes(m.id) || !ends(slot, edge)) continue;
        const statement = { subject, relation: edge.type, object: subject, negated: kind === 'negation' };
        conflict(kind, { ...statement, singleValued: kind === 'single_valued', source, target: edge.target }, edge, m);
        if (overruled) continue;
        end(edge, m);
        current.delete(slot);
      }
    };
    for (const ending of m.extraction.endings ?? [])
      endFacts('negation', ending.subject, (slot, edge) =>
        valueNamed(slot, edge.target, new Set(ending.words), ending.objectKeys),
      );
    for (const change of m.extraction.habitChanges ?? []) {
      const source = idOf(change.subject);
      const ofDimension = [...current].filter(
        ([slot, edge]) =>
          edge.source === source &&
          edge.type === 'habit' &&
          slot.endsWith(` | ${change.dimension}`) &&
          !edge.memory_ids.includes(m.id),
      );
      const named = ofDimension.filter(([slot]) => activityNamed(slot, change.keys));
      const changed = named.length ? named : change.switched && ofDimension.length === 1 ? ofDimension : [];
      for (const [slot, edge] of changed) {
        if (sameValue(edge.target, `concept:${change.value}`)) continue;
        const statement = { subject: change.subject, relation: 'habit', object: change.subject, negated: false };
        conflict(
          'single_valued',
          { ...statement, singleValued: true, source, target: `concept:${change.value}` },
          edge,
          m,
        );
        if (overruled) continue;
        end(edge, m);
        current.delete(slot);
      }
    }
    for (const update of m.extraction.updates ?? [])
      endFacts(
        'single_valued',
        update.subject,
        (_, edge) =>
          !!KIND_RELATIONS[update.kind]?.test(edge.type) &&
          updateFits(edge.type, edge.target, update) &&
          !valueWords(edge.target).some((w) => update.words.includes(w)),
      );
  }
  return { edges, conflicts };
}

/** Whether a habit's activity (its slot's aspect, as word keys) is named by a sentence's word keys. */
const activityNamed = (slot: string, keys: string[]) =>
  slot
    .slice(slot.indexOf('|habit|') + 7, slot.lastIndexOf(' | '))
    .split(' ')
    .some((w) => w.length > 2 && keys.includes(w));

const UNNAMED = `concept:${ELSEWHERE}`;
/**
 * One home or employer named more or less closely: a place inside the other ("I live in Sweden", "my flat in
 * Gothenburg"), a workplace by fewer of its words ("a dental clinic", "my shift at the clinic").
 */
const sameSlotValue = (relation: string, a: string, b: string) => {
  if (relation === 'lives_in') return placeWithin(a.slice(a.indexOf(':') + 1), b.slice(b.indexOf(':') + 1));
  if (relation !== 'works_at' || !a.startsWith('concept:') || !b.startsWith('concept:')) return false;
  const [x, y] = [valueWords(a), valueWords(b)];
  const [fewer, more] = x.length <= y.length ? [x, y] : [y, x];
  return fewer.at(-1) === more.at(-1) && fewer.every((w) => more.includes(w));
};

/** One value named alike, whatever type the entity rules gave it ("Alien" a person in one sentence, a concept in another). */
const sameValue = (a: string, b: string) => a === b || a.slice(a.indexOf(':') + 1) === b.slice(b.indexOf(':') + 1);

/**
 * What is done, had or liked is matched by its head: the denied words must all be in the affirmed value, so "I don't
 * like big dogs" does not deny "I like dogs", but "I'm not into games" is denied by "I'm into board games".
 */
const matchedByHead = (f: Resolved) =>
  !f.singleValued && (f.relation === 'does' || f.relation === 'has' || f.relation === 'likes');

/**
 * Whether a fact's value and the value at the end of a many-valued key name the same thing: the denied words
 * are all in the affirmed value ("choir" / "choir practice", "van" / "old van"); a possession also shares its head noun.
 */
/** What one drinks without drinking in the sense of "I don't drink". */
const SOFT_DRINKS = new Set([
  'water',
  'coffee',
  'coffe',
  'tea',
  'juice',
  'milk',
  'soda',
  'lemonade',
  'smoothie',
  'coke',
]);

function sameThing(f: Resolved, key: string, denying: boolean): boolean {
  const other = key.slice(key.lastIndexOf('|') + 1);
  const a = f.target
    .slice(f.target.indexOf(':') + 1)
    .split(' ')
    .map(thingWord);
  const b = other
    .slice(other.indexOf(':') + 1)
    .split(' ')
    .map(thingWord);
  // The denied words are all in the affirmed value: "I don't drink" ends "drink coffee", "I don't drink tea" not "drink";
  // a kind is denied by one of its members ("I don't have any pets" / "I got a puppy").
  const [allDenied, affirmed] = denying ? [a, b] : [b, a];
  // "I quit smoking three months ago" denies "smoke": a time said with the act is no part of the thing.
  const denied = allDenied.filter((w) => !TIME_WORDS.has(w));
  if (!denied.length) return false;
  const covered = (w: string) => affirmed.some((x) => x === w || KIND_OF[x]?.includes(w) || isOfKind(x, w));
  if (!denied.every(covered)) return false;
  // "I don't drink" is of alcohol: "I drink a lot of water" keeps it.
  if (denied.length === 1 && denied[0] === 'drink' && affirmed.some((x) => SOFT_DRINKS.has(x))) return false;
  return f.relation !== 'has' || covered(denied[denied.length - 1]!);
}

/** Edges true at `asOf` (all edges when absent): stated by then and not yet ended. */
export function edgesAsOf(edges: GraphEdge[], asOf: string | undefined): GraphEdge[] {
  if (asOf === undefined) return edges;
  return edges.filter((e) => e.valid_at <= asOf && (e.invalid_at === null || e.invalid_at > asOf));
}

/** What retrieval asks of the graph: which memory's facts a newer statement ended, and each subject's current facts. */
export interface FactIndex {
  /** A memory all of whose facts were ended -> the memory whose statement ended the last of them. */
  successorOf: Map<number, number>;
  /** A memory -> its facts that were ended, by relation: the memory that ended each (the latest). */
  endedIn: Map<number, Map<string, number>>;
  /** `<node id>|<relation>` -> the memories stating its current (not ended) facts or ending one, newest first, with the value's name (lower case). */
  current: Map<string, Array<{ id: number; value: string }>>;
  /** Lower-case names and aliases of people -> their node id, to find the subject a question names. */
  people: Map<string, string>;
}

export function factIndex({ nodes, edges }: Knowledge): FactIndex {
  const live = new Set<number>();
  const ended = new Map<number, { by: number; at: string }>();
  const current = new Map<string, Array<{ id: number; at: string; value: string }>>();
  const endedIn = new Map<number, Map<string, number>>();
  for (const e of edges) {
    if (e.invalid_at === null) {
      for (const id of e.memory_ids) live.add(id);
      const key = `${e.source}|${e.type}`;
      if (!current.has(key)) current.set(key, []);
      const value = (nodes.get(e.target)?.name ?? e.target).toLowerCase();
      for (const id of e.memory_ids) current.get(key)!.push({ id, at: e.valid_at, value });
      continue;
    }
    if (e.invalidated_by === null) continue;
    // The statement that ended a fact ("I quit smoking", "I sold my kayak") is the current word on it too.
    const key = `${e.source}|${e.type}`;
    if (!current.has(key)) current.set(key, []);
    current
      .get(key)!
      .push({ id: e.invalidated_by, at: e.invalid_at!, value: (nodes.get(e.target)?.name ?? e.target).toLowerCase() });
    for (const id of e.memory_ids) {
      if (id === e.invalidated_by) continue;
      if (!endedIn.has(id)) endedIn.set(id, new Map());
      endedIn.get(id)!.set(e.type, e.invalidated_by);
      const before = ended.get(id);
      if (!before || before.at < e.invalid_at) ended.set(id, { by: e.invalidated_by, at: e.invalid_at });
    }
  }
  const successorOf = new Map<number, number>();
  for (const [id, { by }] of ended) if (!live.has(id)) successorOf.set(id, by);
  const people = new Map<string, string>();
  for (const n of nodes.values()) {
    if (n.type !== 'person' || n.is_end_user) continue;
    for (const name of [n.name, ...n.aliases]) people.set(name.toLowerCase(), n.id);
  }
  const newestFirst = new Map(
    [...current].map(([k, v]) => [
      k,
      v.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : b.id - a.id)).map(({ id, value }) => ({ id, value })),
    ]),
  );
  return { successorOf, endedIn, current: newestFirst, people };
}

/** The memory that first stated a fact of the end user's that is still current, when `fact` states it again (its value named as a node or an alias). */
export function currentStatement(knowledge: Knowledge, fact: RelationFact): number | undefined {
  if (fact.negated || fact.subject.name !== SELF) return undefined;
  const target = nodeId(fact.object);
  const name = fact.object.name.toLowerCase();
  const names = (id: string) =>
    id === target || (knowledge.nodes.get(id)?.aliases.some((a) => a.toLowerCase() === name) ?? false);
  const edge = knowledge.edges.find(
    (e) => e.invalid_at === null && e.source === 'self' && e.type === fact.relation && names(e.target),
  );
  return edge?.memory_ids[0];
}
