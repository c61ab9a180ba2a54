// Facts a sentence presupposes rather than states (issue 53, session 15). People rarely say "I now have a child" or
// "I now use social media": they say "we welcomed our baby girl", "I finally made an Instagram", "passed my driving
// test", and name a pet in passing ("my dog Max", "two cats, Miso and Tofu"). The older statement the rules read
// ("I don't have any kids", "I'm not on social media", "I don't have a driving licence") is denied only when the newer
// one is read as the fact it presupposes. Each reader here takes one closed class of events, in a sentence that is
// not hedged, asked or denied, and states the one fact the event gives; the denials are read the same way, so that
// both statements name the same value.
import type { EntityMention } from './entities.js';
import { hedged, singularOf, statementsOf, subjectOf } from './fact-endings.js';
import { type Emit, type EntityRef, FACT_RELATIONS } from './fact-model.js';
import { KIN, PARTNERS, SPOUSES, WRITTEN_NEGATIONS } from './fact-words.js';
import { STOP_WORDS } from '../stopwords.js';
import type { Token } from './tokens.js';
import { nounIs } from './word-kinds.js';

const NEGATORS = new Set<string>([...WRITTEN_NEGATIONS, 'without']);
/** Words before an animal noun that make it one had: "my dog", "a cat", "two cats", "our old dog". */
const PET_DETERMINERS = new Set(['my', 'our', 'a', 'an', 'two', 'three', 'four', 'old', 'new', 'little', 'rescu']);
/** Social networks, by the names one makes an account on. */
const NETWORKS = new Set([
  'instagram',
  'facebook',
  'tiktok',
  'twitter',
  'snapchat',
  'linkedin',
  'pinterest',
  'reddit',
  'bluesky',
  'mastodon',
  'threads',
  'insta',
  'ig',
]);
/** Verbs that give one an account ("made", "joined", "signed up for", "got", "caved and made"). */
const JOIN = new Set(['made', 'make', 'join', 'creat', 'open', 'start', 'sign', 'set', 'got', 'get', 'download']);
/** Events that give one a child: "welcomed our baby", "had a baby", "gave birth", "our son was born". */
const BIRTH_VERBS = new Set(['welcom', 'born', 'birth', 'deliv', 'adopt']);
const BABY = new Set(['babi', 'son', 'daughter', 'girl', 'boy', 'twin', 'newborn', 'child', 'kid']);
export const SOCIAL_MEDIA = 'social media';
export const LICENCE = 'driving licence';

const concept = (name: string): EntityRef => ({ name, type: 'concept' });
const denied = (sentence: Token[], from: number, to: number) =>
  sentence.slice(Math.max(0, from), to).some((t) => NEGATORS.has(t.lower) || NEGATORS.has(t.key));

/** The facts the text's sentences presuppose: pets named, social media used, a driving licence had, a child had. */
export function presupposedFacts(tokens: Token[], mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  for (const { sentence, at } of statementsOf(tokens)) {
    if (hedged(sentence)) continue;
    petsNamed(sentence, at, mentions, self, emit);
    // The other readers are the writer's own: the subject is "I"/"we" (not "my sister"), or a dropped one ("Caved
    // and made an Instagram").
    const others = sentence.some((t) => ['he', 'she', 'they', 'you', 'his', 'her', 'their'].includes(t.lower));
    const writer = writerFirst(sentence, at, mentions);
    if (others || (writer === undefined ? !startsWithVerb(sentence) : !writer)) continue;
    socialMedia(sentence, self, emit);
    licence(sentence, self, emit);
    childBorn(sentence, self, emit);
  }
}

/** Whether the sentence's first subject is the writer ("we", "I"), another ("my sister", "Tom"), or none (undefined). */
function writerFirst(sentence: Token[], at: number, mentions: EntityMention[]): boolean | undefined {
  for (let k = 0; k < sentence.length; k++) {
    const t = sentence[k]!;
    if (t.lower === 'i' || t.lower === 'we') return true;
    if ((t.lower === 'my' || t.lower === 'our') && KIN.has(sentence[k + 1]?.key ?? '')) return false;
    if (mentions.some((m) => m.type === 'person' && m.first === at + k)) return false;
  }
  return undefined;
}

/** A sentence whose "I" was dropped: it opens with a verb in the past ("Passed my driving test", "Caved and made"). */
const startsWithVerb = (sentence: Token[]) => {
  const first = sentence.find((t) => !['just', 'final', 'so', 'ok', 'well'].includes(t.key));
  return !!first && /ed$|^made$|^got$|^took$/.test(first.lower);
};

/**
 * "my dog Max", "I've got a dog, Max", "we have two cats, Miso and Tofu": each name is had, as its kind (the aspect),
 * so that "Max passed away" ends it; "a girlfriend, Lena", "a boyfriend named Leo": the partner.
 */
function petsNamed(sentence: Token[], at: number, mentions: EntityMention[], self: EntityRef, emit: Emit): void {
  for (let i = 1; i < sentence.length - 1; i++) {
    const t = sentence[i]!;
    const partner = SPOUSES.has(t.key) ? FACT_RELATIONS.married : PARTNERS.has(t.key) ? FACT_RELATIONS.partner : null;
    if (!PET_DETERMINERS.has(sentence[i - 1]!.key) || !(partner || nounIs(singularOf(t.lower), 'animal'))) continue;
    if (denied(sentence, 0, i)) return;
    let j = sentence[i + 1]!.text === ',' || ['name', 'call'].includes(sentence[i + 1]!.key) ? i + 2 : i + 1;
    const names: string[] = [];
    const first = sentence[j];
    while (isName(sentence[j])) {
      names.push(sentence[j]!.lower);
      if (sentence[j + 1]?.key !== 'and' || !isName(sentence[j + 2])) break;
      j += 2;
    }
    if (!names.length) continue;
    const owner = subjectOf(sentence, at, i, mentions, self);
    if (!owner) return;
    // "I have a girlfriend, Lena", "a boyfriend named Leo": the partner, as "my girlfriend is Lena" states it.
    if (partner) {
      if (owner === self && sentence[i - 1]!.key !== 'two')
        emit(self, partner, { name: first!.text, type: 'person' }, false);
    } else for (const name of names) emit(owner, FACT_RELATIONS.has, concept(name), false, singularOf(t.lower));
    return;
  }
}

const isName = (t: Token | undefined) =>
  !!t && t.capitalized && !t.punct && t.lower !== 'i' && !STOP_WORDS.has(t.lower) && /^[A-Z][a-z]+$/.test(t.text);

/** "I'm not on social media" / "I finally made an Instagram account", "joined TikTok": social media used or not. */
function socialMedia(sentence: Token[], self: EntityRef, emit: Emit): void {
  const network = sentence.findIndex(
    (t, k) =>
      NETWORKS.has(t.lower) ||
      (t.lower === 'social' && ['media', 'network', 'networks'].includes(sentence[k + 1]?.lower ?? '')),
  );
  if (network < 0) return;
  const named = sentence[network]!.lower !== 'social';
  // A denial: "not on social media", "don't use Instagram", "never been on Facebook".
  if (denied(sentence, network - 4, network)) {
    const on = sentence
      .slice(Math.max(0, network - 4), network)
      .some((t) => ['on', 'use', 'have', 'do'].includes(t.key));
    if (on) emit(self, FACT_RELATIONS.does, concept(`use ${SOCIAL_MEDIA}`), true);
    return;
  }
  if (!named || denied(sentence, 0, sentence.length)) return;
  // An account made: a verb of joining before the network's name, within a few words.
  const joined = sentence.slice(Math.max(0, network - 4), network).some((t) => JOIN.has(t.key));
  const onNow = sentence[network - 1]?.key === 'on' && sentence.some((t) => t.key === 'now');
  if (joined || onNow) emit(self, FACT_RELATIONS.does, concept(`use ${SOCIAL_MEDIA}`), false);
}

/** "I don't have a driver's license", "I can't drive" / "passed my driving test", "got my licence": a licence had. */
function licence(sentence: Token[], self: EntityRef, emit: Emit): void {
  const words = sentence.map((t) => t.key);
  const licenceAt = sentence.findIndex((t) => /^licen[cs]e$/.test(t.lower));
  const testAt = words.findIndex(
    (w, k) => (w === 'drive' || w === 'driver' || w === 'road') && ['test', 'exam'].includes(words[k + 1] ?? ''),
  );
  const driving = words.some((w) => w === 'drive' || w === 'driver');
  if (licenceAt >= 0 && driving) {
    if (denied(sentence, licenceAt - 5, licenceAt)) emit(self, FACT_RELATIONS.has, concept(LICENCE), true);
    else if (words.slice(Math.max(0, licenceAt - 4), licenceAt).some((w) => w === 'got' || w === 'get'))
      emit(self, FACT_RELATIONS.has, concept(LICENCE), false);
    return;
  }
  if (testAt >= 0 && !denied(sentence, 0, sentence.length) && words.slice(0, testAt).some((w) => w === 'pass'))
    emit(self, FACT_RELATIONS.has, concept(LICENCE), false);
  // "I don't drive", "I can't drive": no licence (a short denial of driving itself, not "I don't drive to work").
  const drive = words.indexOf('drive');
  if (drive > 0 && denied(sentence, drive - 2, drive) && (!sentence[drive + 1] || sentence[drive + 1]!.punct))
    emit(self, FACT_RELATIONS.has, concept(LICENCE), true);
}

/** "We welcomed our baby girl", "I gave birth to a boy", "our son was born on Tuesday": children had. */
function childBorn(sentence: Token[], self: EntityRef, emit: Emit): void {
  if (denied(sentence, 0, sentence.length)) return;
  const birth = sentence.findIndex((t) => BIRTH_VERBS.has(t.key));
  if (birth < 0) return;
  const own = sentence.some(
    (t, k) =>
      ['our', 'my', 'a'].includes(t.lower) &&
      (BABY.has(sentence[k + 1]?.key ?? '') || BABY.has(sentence[k + 2]?.key ?? '')),
  );
  if (own) emit(self, FACT_RELATIONS.children, concept('children'), false);
}
