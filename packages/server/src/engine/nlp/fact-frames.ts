// Sentence frames around a stated fact (issue 53, session 9). People rarely state a change bare: they ask
// ("Did I tell you I quit Siemens?"), report ("My doctor says I can't eat spicy food", "You know we're in
// Idaho now, right?"), date it ("It's been a year since we moved to Bremen", "Now that I'm 65 ...") or put
// it in the passive ("The boat was sold in the spring"). The fact rules read a clause from its subject, so
// a frame hid the fact whatever its words. `unframed` removes the frame by shape (an auxiliary, a subject, a
// verb that takes a clause, an optional hearer and "that", then a clause with a subject of its own) and
// turns a thing's passive loss into the owner's active one, before the rules read the clause; the words of
// the fact itself are untouched, so any wording the rules read bare is read framed too.
import type { EntityMention } from './entities.js';
import { KIN, NEGATORS, PARTNERS, SPOUSES } from './fact-words.js';
import { keyOf, type Token } from './tokens.js';
import { isKind, nounIs, verbClassAt } from './word-kinds.js';

/** Verbs that take a clause as their object ("say (that) ...", "tell you ...", "know ..."), by key. */
const CLAUSE_VERBS = new Set([
  'say',
  'said',
  'tell',
  'told',
  'mention',
  'know',
  'knew',
  'hear',
  'heard',
  'think',
  'thought',
  'guess',
  'believ',
  'realis',
  'realiz',
  'rememb',
  'forget',
  'forgot',
  'notic',
  'admit',
  'announc',
  'explain',
  'reckon',
  'suppos',
  'swear',
  'swore',
  'bet',
  'find',
  'found',
  'learn',
  'learnt',
  'confirm',
  'insist',
  'claim',
  'report',
  'write',
  'wrote',
  'text',
  'email',
]);
/** Auxiliaries that open a question about a frame ("Did I tell you", "Have I mentioned", "Do you know"). */
const QUESTION_AUX = new Set(['do', 'did', 'have', 'had', 'can', 'could']);
/** Who speaks or knows in a frame: a pronoun, one's relation ("my doctor"), or a name (a person mention). */
const FRAME_SUBJECTS = new Set(['i', 'you', 'we', 'he', 'she', 'they', 'everyon', 'everybodi', 'peopl']);
const POSSESSIVES = new Set(['my', 'our', 'his', 'her', 'their', 'your']);
/** Who a clause may be told to: "tell you", "told my boss". */
const HEARERS = new Set(['you', 'me', 'him', 'her', 'them', 'us', 'everyon', 'everybodi']);
/** Adverbs a frame may carry ("I just found out", "Did I ever tell you", "my mum keeps saying"). */
const FRAME_ADVERBS = new Set(['ever', 'alreadi', 'just', 'even', 'final', 'alway', 'keep', 'also', 'onli']);
/** Subjects an embedded clause opens with. */
const CLAUSE_SUBJECTS = new Set(['i', 'we', 'he', 'she', 'they', 'my', 'our', 'his', 'her', 'their']);

/** Tokens put in place of the tokens [from, to): a rewritten clause. */
interface Rewrite {
  from: number;
  to: number;
  tokens: Token[];
  /** A name among `tokens` the entity rules did not find (at a sentence's start), with its type. */
  named?: { tokens: Token[]; type: string };
}

/** The tokens of a text with its frames removed and its clauses put in the rules' shape; mentions moved with them. */
export function unframed(tokens: Token[], mentions: EntityMention[]): { tokens: Token[]; mentions: EntityMention[] } {
  const mentionAt = new Map(mentions.map((m) => [m.first, m]));
  const rewrites: Rewrite[] = [];
  let done = 0;
  let embedded = -1;
  for (let start = 0; start < tokens.length; start++) {
    if (start < done || (start > 0 && start !== embedded && !opensClause(tokens[start - 1]!))) continue;
    const frame =
      reportFrame(tokens, start, mentionAt) ?? sinceFrame(tokens, start) ?? leadingWord(tokens, start, mentionAt);
    const rewrite =
      frame !== null
        ? { from: start, to: frame, tokens: [], ...speakerSubject(tokens, start, frame, mentionAt) }
        : (passiveLoss(tokens, start) ??
          patientSelf(tokens, start, mentionAt) ??
          beingWith(tokens, start, mentionAt) ??
          aspectual(tokens, start, mentionAt) ??
          gerundSubject(tokens, start) ??
          cleft(tokens, start, mentionAt) ??
          meAnd(tokens, start, mentionAt));
    if (!rewrite) continue;
    rewrites.push(rewrite);
    done = rewrite.to;
    // A frame removed leaves a clause the other shapes may still apply to ("Did I tell you the boat was sold?").
    if (frame !== null) {
      embedded = frame;
      start = frame - 1;
    }
  }
  for (let k = 0; k < tokens.length; k++) {
    if (rewrites.some((r) => k >= r.from && k < r.to)) continue;
    const kin =
      bareKin(tokens, k) ??
      ordinalBirthday(tokens, k) ??
      formerPartner(tokens, k) ??
      thingReferredTo(tokens, k) ??
      nameOfRole(tokens, k);
    if (kin) rewrites.push(kin);
  }
  if (!rewrites.length) return { tokens, mentions };
  rewrites.sort((a, b) => a.from - b.from || a.to - b.to);
  const out: Token[] = [];
  let k = 0;
  for (const r of rewrites) {
    if (r.from < k) continue;
    out.push(...tokens.slice(k, r.from), ...r.tokens);
    k = r.to;
  }
  out.push(...tokens.slice(k));
  // A mention keeps its tokens where they still stand together; one a rewrite broke up is dropped.
  const at = new Map(out.map((t, i) => [t, i]));
  const moved = mentions.flatMap((m) => {
    const first = at.get(tokens[m.first]!);
    const last = at.get(tokens[m.last - 1]!);
    return first !== undefined && last === first + m.last - 1 - m.first ? [{ ...m, first, last: last + 1 }] : [];
  });
  for (const { named } of rewrites) {
    const first = named && at.get(named.tokens[0]!);
    if (first === undefined || moved.some((m) => m.first === first)) continue;
    const text = named!.tokens.map((t) => t.text).join(' ');
    moved.push({ text, name: text, type: named!.type, first, last: first + named!.tokens.length });
  }
  return { tokens: out, mentions: moved };
}

const opensClause = (t: Token) => (t.punct ? ['.', '!', '?', ',', ';', ':'].includes(t.text) : t.key === 'and');

/**
 * "Did I tell you (that) ...", "You know ...", "My doctor says ...", "I told my boss that ...": the index of the
 * embedded clause's first token, or null. The frame must not be denied ("I never said I moved"), and the clause
 * after it must open with a subject of its own.
 */
function reportFrame(tokens: Token[], start: number, mentionAt: Map<number, EntityMention>): number | null {
  let i = start;
  if (QUESTION_AUX.has(tokens[i]?.key ?? '')) i++;
  const subjectEnd = frameSubject(tokens, i, mentionAt);
  if (subjectEnd === null) return null;
  i = subjectEnd;
  while (FRAME_ADVERBS.has(tokens[i]?.key ?? '')) i++;
  const verb = tokens[i];
  if (
    !verb ||
    !CLAUSE_VERBS.has(verb.key) ||
    tokens.slice(start, i).some((t) => NEGATORS.has(t.key) || t.key === "n't")
  )
    return null;
  i++;
  // "find out", "tell you", "told my boss", "said to me".
  if (tokens[i]?.key === 'out') i++;
  if (tokens[i]?.key === 'to' && HEARERS.has(tokens[i + 1]?.key ?? '')) i += 2;
  else if (HEARERS.has(tokens[i]?.key ?? '') && tokens[i + 1]?.key !== 'that' && !opensEmbedded(tokens, i, mentionAt))
    i++;
  else if (POSSESSIVES.has(tokens[i]?.lower ?? '') && tokens[i + 2]?.key === 'that') i += 2;
  if (HEARERS.has(tokens[i]?.key ?? '') && tokens[i + 1]?.key === 'that') i++;
  if (tokens[i]?.key === 'that') i++;
  return opensEmbedded(tokens, i, mentionAt) ? i : null;
}

/**
 * "Mel said she loves pottery", "Joanna says her new favourite dessert is ...": the reported "he"/"she" is the person
 * who said it, and "his"/"her" that person's, kept in its place.
 */
function speakerSubject(tokens: Token[], start: number, embedded: number, mentionAt: Map<number, EntityMention>) {
  const speaker = mentionAt.get(start) ?? mentionAt.get(start + 1);
  const pronoun = tokens[embedded]?.lower ?? '';
  if (speaker?.type !== 'person' || !['he', 'she', 'his', 'her'].includes(pronoun)) return {};
  const name = tokens.slice(speaker.first, speaker.last);
  if (pronoun === 'he' || pronoun === 'she') return { to: embedded + 1, tokens: name };
  // "her" as an object ("said her boss fired her") is not the owner's: only before a noun phrase's word.
  const next = tokens[embedded + 1];
  if (!next || next.punct || next.capitalized) return {};
  return {
    to: embedded + 1,
    tokens: [...name, { ...word(tokens[embedded]!, "'s"), text: "'s", lower: "'s", key: "'s" }],
  };
}

/** A frame's subject ending at the returned index: a pronoun, "my doctor", "my wife's friend", a named person. */
function frameSubject(tokens: Token[], i: number, mentionAt: Map<number, EntityMention>): number | null {
  const t = tokens[i];
  if (!t) return null;
  if (FRAME_SUBJECTS.has(t.key)) return i + 1;
  if (POSSESSIVES.has(t.lower) && tokens[i + 1] && !tokens[i + 1]!.punct) return i + 2;
  const m = mentionAt.get(i);
  return m?.type === 'person' ? m.last : null;
}

/** Whether a clause with a subject of its own opens at `i` ("I ...", "my son ...", "Carl and I ..."). */
function opensEmbedded(tokens: Token[], i: number, mentionAt: Map<number, EntityMention>): boolean {
  const t = tokens[i];
  if (!t || t.punct) return false;
  if (CLAUSE_SUBJECTS.has(t.lower)) return true;
  // "the boat was sold": a thing as the subject of a passive.
  if (t.lower === 'the' && tokens.slice(i + 2, i + 4).some((w) => w.key === 'be' || w.key === 'get')) return true;
  const m = mentionAt.get(i);
  return !!m && (m.type === 'person' || (t.capitalized && tokens[m.last]?.key === 'be'));
}

/** "It's been a year since we moved", "Ever since I left", "Now that I'm 65": where the dated clause starts. */
function sinceFrame(tokens: Token[], start: number): number | null {
  const at = (k: number) => tokens[start + k]?.key;
  let since = -1;
  if (at(0) === 'ever' && at(1) === 'sinc') since = 1;
  else if (at(0) === 'now' && at(1) === 'that') since = 1;
  else if (at(0) === 'it' && ['be', 'have', "'s"].includes(at(1) ?? '')) {
    // "It's been (over) two years since", "It has been a while since".
    for (let k = 2; k < 8 && start + k < tokens.length; k++) {
      const t = tokens[start + k]!;
      if (t.punct) break;
      if (t.key === 'sinc') {
        since = k;
        break;
      }
    }
  }
  if (since < 0) return null;
  const next = tokens[start + since + 1];
  return next && CLAUSE_SUBJECTS.has(next.lower) ? start + since + 1 : null;
}

/**
 * "(My / The / Our) boat was sold", "the piano got given away": a thing's passive loss, read as its owner's
 * active one ("I sold my boat"); "was stolen" as lost. Only a verb whose class ends a possession, and only when
 * no agent but the owner is named ("was sold by my brother" is someone else's doing and stays unread).
 */
function passiveLoss(tokens: Token[], start: number): Rewrite | null {
  const owner = tokens[start];
  if (!owner || !['my', 'our', 'the'].includes(owner.lower)) return null;
  let be = start + 1;
  while (be < tokens.length && be <= start + 3 && !['be', 'get'].includes(tokens[be]!.key)) {
    if (tokens[be]!.punct) return null;
    be++;
  }
  if (be === start + 1 || (tokens[be]?.key !== 'be' && tokens[be]?.key !== 'get')) return null;
  // One's own thing, not someone's ("my parents' house") nor a named one.
  const thing = tokens.slice(start + 1, be);
  if (thing.some((t) => t.punct || t.text === "'s" || t.capitalized || KIN.has(t.key) || nounIs(t.lower, 'relative')))
    return null;
  const rest = tokens.slice(be + 1);
  const stolen = rest[0]?.lower === 'stolen';
  const verb = stolen ? null : verbClassAt(rest);
  if (!stolen && verb?.kind !== 'possession_end') return null;
  const span = stolen ? 1 : verb!.span;
  // "was sold by my brother" is someone else's doing; "sold out" no loss of one's own.
  if (rest[span]?.key === 'by' || rest.slice(0, span + 1).some((t) => t.key === 'out')) return null;
  const we = owner.lower === 'our';
  // "I sold my boat" for "The boat was sold": the owner, the verb phrase, the thing.
  return {
    from: start,
    to: be + 1 + span,
    tokens: [
      word(owner, we ? 'we' : 'i'),
      ...(stolen ? [word(rest[0]!, 'lost')] : rest.slice(0, span)),
      word(owner, we ? 'our' : 'my'),
      ...tokens.slice(start + 1, be),
    ],
  };
}

/** A word put in by a rewrite, at the place of the token it stands for. */
const word = (at: Token, lower: string): Token => ({
  ...at,
  lower,
  text: lower,
  key: keyOf(lower),
  capitalized: false,
  punct: false,
});

/** Verbs whose object is the partner left ("Ali dumped me", "she left me"), read as the couple parting. */
const LEAVE_PARTNER = new Set(['dump', 'ditch', 'leav', 'left']);
/** What may follow "me" when the clause ends there ("Tesco let me go last week", "Ali dumped me."). */
const AFTER_OBJECT = new Set(['go', 'off', 'on', 'last', 'in', 'at', 'after', 'this', 'yesterday', 'for', 'recent']);

/**
 * "Tesco let me go", "the bank laid me off", "Acme hired me", "Ali dumped me", "Chris broke up with me": the end
 * user as the object, read as the rules read it with the end user as the subject ("I was let go by Tesco", "Ali
 * and I split up"). The agent must be named or one's own ("my boss"), so a story about others stays unread.
 */
function patientSelf(tokens: Token[], start: number, mentionAt: Map<number, EntityMention>): Rewrite | null {
  const first = tokens[start];
  if (!first) return null;
  const m = mentionAt.get(start);
  const agentEnd =
    m && (m.type === 'person' || m.type === 'organization')
      ? m.last
      : ['my', 'the'].includes(first.lower) && tokens[start + 1] && !tokens[start + 1]!.punct
        ? start + 2
        : first.capitalized && !m && !CLAUSE_SUBJECTS.has(first.lower) && !FRAME_SUBJECTS.has(first.key)
          ? start + 1
          : null;
  if (agentEnd === null) return null;
  let v = agentEnd;
  while (FRAME_ADVERBS.has(tokens[v]?.key ?? '')) v++;
  const verb = tokens[v];
  if (!verb || verb.punct) return null;
  // "broke up with me": the particles between the verb and "with me".
  let me = v + 1;
  while (me <= v + 2 && tokens[me] && ['up', 'off', 'with'].includes(tokens[me]!.key)) me++;
  if (tokens[me]?.lower !== 'me') return null;
  const particle = tokens[me + 1] && ['go', 'off', 'on'].includes(tokens[me + 1]!.key) ? [tokens[me + 1]!] : [];
  const end = me + 1 + particle.length;
  const next = tokens[end];
  if (next && !next.punct && !AFTER_OBJECT.has(next.key)) return null;
  const agent = tokens.slice(start, agentEnd);
  const phrase = [verb, ...tokens.slice(v + 1, me).filter((t) => t.key !== 'with'), ...particle];
  const kind = verbClassAt(phrase)?.kind;
  if (kind === 'relationship_end' || LEAVE_PARTNER.has(verb.key))
    return {
      from: start,
      to: end,
      tokens: [...agent, word(verb, 'and'), word(verb, 'i'), word(verb, 'split'), word(verb, 'up')],
    };
  if (kind !== 'job_end' && kind !== 'job_start' && !['let', 'fire', 'sack'].includes(verb.key)) return null;
  // A person who fired or hired one ("my boss", "Tom") is not the employer: the agent is named only when it is not one.
  const employer = m?.type !== 'person' && !(first.lower === 'my' && tokens[start + 1]!.key !== 'compani');
  const by = employer ? [word(verb, 'by'), ...agent] : [];
  return { from: start, to: end, tokens: [word(verb, 'i'), word(verb, 'was'), ...phrase, ...by] };
}

/** "I'm not with Kai anymore": a partner no more, read as "not dating". */
function beingWith(tokens: Token[], start: number, mentionAt: Map<number, EntityMention>): Rewrite | null {
  if (!['i', 'we'].includes(tokens[start]?.lower ?? '') || tokens[start + 1]?.key !== 'be') return null;
  let w = start + 2;
  // Only a present denial ("I'm not with Rosa anymore", "we're no longer with"): "I was with Mel at the park" is company.
  if (!['am', "'m", 'are', "'re"].includes(tokens[start + 1]!.lower)) return null;
  while (w < start + 5 && tokens[w] && ['not', "n't", 'no', 'longer'].includes(tokens[w]!.key)) w++;
  const person = mentionAt.get(w + 1);
  if (w === start + 2 || tokens[w]?.key !== 'with' || person?.type !== 'person') return null;
  const next = tokens[person.last];
  if (next && !next.punct && next.key !== 'anymor') return null;
  return { from: w, to: w + 1, tokens: [word(tokens[w]!, 'dating')] };
}

/** Kin named as a name ("Mum turned 61", "Dad is 70"): one's own ("my mum"). */
const KIN_NAMES = new Set([
  'mum',
  'mom',
  'mummi',
  'mommi',
  'dad',
  'daddi',
  'grandma',
  'grandpa',
  'granni',
  'nan',
  'nana',
  'grandad',
  'granddad',
]);
function bareKin(tokens: Token[], k: number): Rewrite | null {
  const t = tokens[k]!;
  if (!t.capitalized || !KIN_NAMES.has(t.key) || (k > 0 && !tokens[k - 1]!.punct && tokens[k - 1]!.key !== 'and'))
    return null;
  return { from: k, to: k + 1, tokens: [word(t, 'my'), word(t, t.lower)] };
}

const ORDINAL_WORDS = new Map(
  'first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth hundredth'
    .split(' ')
    .map((w, i) => [w, i < 20 ? i + 1 : i === 27 ? 100 : (i - 17) * 10]),
);

/** "My husband's name is Tom", "our dog's name is Max": the one named, as "my husband is Tom" states it. */
function nameOfRole(tokens: Token[], k: number): Rewrite | null {
  if (!['my', 'our'].includes(tokens[k]!.lower) || tokens[k + 2]?.text !== "'s" || tokens[k + 3]?.key !== 'name')
    return null;
  return tokens[k + 4]?.key === 'be' ? { from: k + 2, to: k + 4, tokens: [] } : null;
}

/** "I celebrated my 40th birthday", "Mel had her sixth birthday": the owner turned that age. */
function ordinalBirthday(tokens: Token[], k: number): Rewrite | null {
  const owner = tokens[k]!;
  if (!['my', 'our'].includes(owner.lower) || tokens[k + 2]?.key !== 'birthday') return null;
  const ordinal = tokens[k + 1]!.lower;
  const age = /^\d+(st|nd|rd|th)$/.test(ordinal) ? Number.parseInt(ordinal, 10) : ORDINAL_WORDS.get(ordinal);
  if (!age) return null;
  // The clause's verb ("celebrated", "had") and the owner become "I turned N".
  let verb = k - 1;
  while (verb >= 0 && !tokens[verb]!.punct && tokens[verb]!.lower !== 'i') verb--;
  if (tokens[verb]?.lower !== 'i') return null;
  return { from: verb, to: k + 3, tokens: [tokens[verb]!, word(owner, 'turned'), word(owner, String(age))] };
}

/** "my ex-wife Maria": the couple parted, said before the sentence ("Maria and I split up"). */
function formerPartner(tokens: Token[], k: number): Rewrite | null {
  const t = tokens[k]!;
  const joined = /^ex-?(.+)$/.exec(t.lower)?.[1];
  const role = joined ?? (t.lower === 'ex' ? tokens[k + 1]?.lower : undefined);
  if (!role || !['my', 'our'].includes(tokens[k - 1]?.lower ?? '')) return null;
  const key = keyOf(role);
  if (!SPOUSES.has(key) && !PARTNERS.has(key) && !PARTNERS.has(role)) return null;
  // Only the ex named: "my ex" alone may be anyone's past, not the partner of now.
  const name = tokens[joined ? k + 1 : k + 2];
  if (!name?.capitalized || name.punct) return null;
  let sentence = k - 1;
  while (sentence > 0 && !['.', '!', '?'].includes(tokens[sentence - 1]!.text)) sentence--;
  return {
    from: sentence,
    to: sentence,
    tokens: [{ ...name }, ...['and', 'i', 'split', 'up', ','].map((w) => word(t, w))],
  };
}

/** Words that open a clause without being part of it ("Basically I quit", "After I left Google", "Once we moved"). */
const SUBORDINATORS = new Set(['after', 'befor', 'onc', 'until', 'sinc', 'anyway', 'actual', 'basic', 'plus', 'btw']);
/** The clause after a sentence adverb or a subordinator of time, when a subject of its own follows it. */
function leadingWord(tokens: Token[], start: number, mentionAt: Map<number, EntityMention>): number | null {
  const t = tokens[start];
  if (!t || t.punct || !(SUBORDINATORS.has(t.key) || /^[a-z]{4,}ly$/.test(t.lower))) return null;
  return opensEmbedded(tokens, start + 1, mentionAt) ? start + 1 : null;
}

/** The clause's subject ending at the returned index: "I", "we", "my sister", a named person. */
function clauseSubject(tokens: Token[], start: number, mentionAt: Map<number, EntityMention>): number | null {
  const t = tokens[start];
  if (!t) return null;
  if (t.lower === 'i' || t.lower === 'we') return start + 1;
  if ((t.lower === 'my' || t.lower === 'our') && tokens[start + 1] && !tokens[start + 1]!.punct) return start + 2;
  const m = mentionAt.get(start);
  return m?.type === 'person' ? m.last : null;
}

const PREPOSITIONS = new Set(['at', 'in', 'to', 'for', 'as', 'from', 'with', 'on']);
/** A verb's -ing form read as the verb ("moving" as "move"): the rules compare keys. */
const asVerb = (t: Token): Token => word(t, t.key);

/**
 * "I started working at Tesco", "we ended up moving to Leeds", "I managed to sell my car", "I went ahead and
 * sold it": an aspect or an achievement around the verb; the verb is what happened.
 */
function aspectual(tokens: Token[], start: number, mentionAt: Map<number, EntityMention>): Rewrite | null {
  const subject = clauseSubject(tokens, start, mentionAt);
  if (subject === null) return null;
  let a = subject;
  while (['have', 'be', 'final', 'recent', 'just', 'eventu', 'alreadi'].includes(tokens[a]?.key ?? '')) a++;
  const at = (k: number) => tokens[a + k]?.key ?? '';
  const ing = (k: number) => /[a-z]ing$/.test(tokens[a + k]?.lower ?? '');
  let verb = -1;
  // An -ing verb only with a place or a role after it ("working at", "moving to"): "started dating Theo" the rules read.
  const placed = (k: number) => ing(k) && PREPOSITIONS.has(at(k + 1));
  if (['start', 'began', 'begun', 'begin'].includes(at(0)) && placed(1)) verb = 1;
  else if (at(0) === 'end' && at(1) === 'up' && placed(2)) verb = 2;
  else if (at(0) === 'manag' && at(1) === 'to') verb = 2;
  else if (['went', 'go'].includes(at(0)) && at(1) === 'ahead' && at(2) === 'and') verb = 3;
  if (verb < 0 || !tokens[a + verb] || tokens[a + verb]!.punct) return null;
  const v = tokens[a + verb]!;
  // The adverbs between go with the aspect ("I recently started working at" as "I work at").
  return { from: subject, to: a + verb + 1, tokens: [ing(verb) ? asVerb(v) : v] };
}

/** "Moving to Leeds was the best decision", "Selling the car has been hard": the speaker's own change, done. */
function gerundSubject(tokens: Token[], start: number): Rewrite | null {
  const g = tokens[start];
  if (!g || !/^[a-z]{2,}ing$/.test(g.lower)) return null;
  let copula = start + 1;
  while (copula < start + 7 && tokens[copula] && !tokens[copula]!.punct && tokens[copula]!.key !== 'be') copula++;
  const be = tokens[copula];
  // Done ("was", "has been"), not a general truth ("is hard") or a wish ("would be").
  const done = be?.lower === 'was' || (be?.lower === 'been' && tokens[copula - 1]?.key === 'have');
  if (!done || copula === start + 1) return null;
  const end = be!.lower === 'been' ? copula - 1 : copula;
  const verb = asVerb(g);
  if (!verbClassAt([verb, ...tokens.slice(start + 1, end)]) && !CHANGE_VERBS.has(verb.key)) return null;
  return { from: start, to: end, tokens: [word(g, 'i'), verb, ...tokens.slice(start + 1, end), word(g, ',')] };
}
/** Verbs of change the rules read by their own words. */
const CHANGE_VERBS = new Set(['move', 'quit', 'sell', 'leav', 'stop', 'retir', 'marri', 'divorc', 'split', 'break']);

/** "Leeds is where I live now", "Tesco is where I work", "Denver is home now": the place said first. */
function cleft(tokens: Token[], start: number, mentionAt: Map<number, EntityMention>): Rewrite | null {
  const first = tokens[start]!;
  // A name at a sentence's start is often no mention: a place by the lexicon, else where one works.
  const m =
    mentionAt.get(start) ??
    (first.capitalized
      ? { first: start, last: start + 1, type: isKind(first.lower, 'place') ? 'place' : 'organization' }
      : null);
  if (!m || (m.type !== 'place' && m.type !== 'organization')) return null;
  const name = tokens.slice(start, m.last);
  let be = m.last;
  if (tokens[be]?.key === 'have' && tokens[be + 1]?.key === 'be') be++;
  // Now ("is", "has been"), not once ("was home for years").
  if (!['is', "'s", 'been'].includes(tokens[be]?.lower ?? '')) return null;
  const named = mentionAt.has(start) ? {} : { named: { tokens: name, type: m.type } };
  const after = tokens[be + 1];
  if (after?.key === 'home' && m.type === 'place')
    return {
      from: start,
      to: be + 2,
      tokens: [word(after, 'i'), word(after, 'live'), word(after, 'in'), ...name],
      ...named,
    };
  if (after?.key !== 'where' || !['i', 'we'].includes(tokens[be + 2]?.lower ?? '')) return null;
  let verb = be + 3;
  while (['have', 'be', "'ve", 'been'].includes(tokens[verb]?.key ?? '')) verb++;
  if (!tokens[verb] || tokens[verb]!.punct) return null;
  const link = m.type === 'place' ? 'in' : 'at';
  return {
    from: start,
    to: verb + 1,
    tokens: [...tokens.slice(be + 2, verb + 1), word(after, link), ...name],
    ...named,
  };
}

/** "Me and my wife moved to Leeds", "me and Tom split up": the speaker among the subjects, said as "my wife and I". */
function meAnd(tokens: Token[], start: number, mentionAt: Map<number, EntityMention>): Rewrite | null {
  if (tokens[start]?.lower !== 'me' || tokens[start + 1]?.key !== 'and') return null;
  const other = clauseSubject(tokens, start + 2, mentionAt);
  if (other === null || tokens[start + 2]?.lower === 'i') return null;
  return {
    from: start,
    to: other,
    tokens: [...tokens.slice(start + 2, other), tokens[start + 1]!, word(tokens[start]!, 'i')],
  };
}

const OBJECT_PRONOUNS = new Set(['it', 'them', 'him', 'her']);
/**
 * "I loved my old piano but I sold it", "My car? I sold it": a pronoun a thing was given up by stands for the
 * thing the text named last ("my piano").
 */
function thingReferredTo(tokens: Token[], k: number): Rewrite | null {
  const it = tokens[k]!;
  if (!OBJECT_PRONOUNS.has(it.lower) || k < 2) return null;
  const verb = tokens[k - 1]!;
  const particle = tokens[k + 1] && !tokens[k + 1]!.punct ? [tokens[k + 1]!] : [];
  const kind = verbClassAt([verb, ...particle])?.kind ?? verbClassAt([verb])?.kind;
  if (kind !== 'possession_end') return null;
  // The last thing of one's own named before ("my ...", "our ..."), within the text: its head noun.
  for (let d = k - 2; d >= 0 && d >= k - 25; d--) {
    if (!['my', 'our'].includes(tokens[d]!.lower)) continue;
    let head = d + 1;
    while (tokens[head + 1] && !tokens[head + 1]!.punct && head < d + 3 && !PHRASE_BREAK.has(tokens[head + 1]!.key))
      head++;
    const noun = tokens[head];
    if (!noun || noun.punct || head >= k - 1) continue;
    const owner = tokens[d]!.lower === 'our' ? 'our' : 'my';
    return { from: k, to: k + 1, tokens: [word(it, owner), noun] };
  }
  return null;
}
/** Words that end a noun phrase ("my car but", "a piano that"). */
const PHRASE_BREAK = new Set([
  'but',
  'and',
  'that',
  'which',
  'i',
  'we',
  'for',
  'to',
  'in',
  'on',
  'at',
  'with',
  'be',
  'have',
  'so',
  'becaus',
]);
