// Personal facts read by a chat model (issue 53), optional: the same attribute-value statements the fact rules emit
// (facts.ts), asked of any OpenAI-compatible endpoint with a strict JSON schema, so that phrasings no rule knows still
// reach the graph. Added to the rules' facts, never instead of them; an answer off the schema adds nothing.
import type { LlmProvider } from '../llm/index.js';
import { SELF } from './extract.js';
import { FACT_RELATIONS } from './fact-model.js';

/** One fact as the model states it (before the ontology decides what it keeps: Extractor.withFacts). */
export interface ModelFact {
  subject: { name: string; type: 'person' };
  relation: string;
  object: { name: string; type: string };
  negated: boolean;
  aspect?: string;
  past?: boolean;
}

const ATTRIBUTES = [
  'lives_in',
  'works_at',
  'works_as',
  'relationship_status',
  'married_to',
  'partner',
  'age',
  'birthday',
  'has',
  'does',
  'likes',
  'is',
  'prefers',
  'habit',
  'favorite',
] as const;
type Attribute = (typeof ATTRIBUTES)[number];

/** The type of a value, as the entity rules would name it (a place is where one lives, a person whom one married). */
const VALUE_TYPES: Partial<Record<Attribute, string>> = {
  lives_in: 'place',
  works_at: 'organization',
  married_to: 'person',
  partner: 'person',
  age: 'quantity',
};

const nullableString = { type: ['string', 'null'] };
/** The name the answer's JSON schema is sent under (a stand-in endpoint in tests tells this request by it). */
export const MODEL_FACTS_SCHEMA_NAME = 'personal_facts';
export const MODEL_FACTS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['facts'],
  properties: {
    facts: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['subject', 'attribute', 'value', 'negated', 'past', 'qualifier'],
        properties: {
          subject: { type: 'string', description: '"I" for the speaker, else the person\'s name as written' },
          attribute: { type: 'string', enum: [...ATTRIBUTES] },
          value: { type: 'string' },
          negated: { type: 'boolean' },
          past: { type: 'boolean' },
          qualifier: nullableString,
        },
      },
    },
  },
} as const;

const SYSTEM = `You read one statement a person made and list the personal facts it states about the speaker ("I", "we")
or a named person, as attribute-value pairs. Attributes: lives_in (a place), works_at (an employer or workplace),
works_as (a job, or "unemployed", "retired", "student"), relationship_status (single, dating, engaged, married,
divorced, separated, widowed), married_to and partner (a person), age (a number), birthday (month and day, e.g.
"may 2"), has (a thing or pet owned; a pet by its kind and by its name), does (an activity done as a habit), likes,
is (a trait such as vegetarian), prefers (value: the thing preferred; qualifier: the thing passed over), habit (value:
how often or when, e.g. "2/week", "monday", "morning"; qualifier: the activity), favorite (value: the favourite;
qualifier: its kind, e.g. "color", "band"). negated is true when the statement says the fact does not hold now: sold,
lost, quit, left, moved away from, broke up with, died, no longer, not any more, never. past is true with negated
for what held once ("I used to ..."). Values are short, in lower case but for names. A plan, a wish, a question or
someone else's fact about another unnamed person states nothing. No fact stated: an empty list.`;

/**
 * The facts of one statement by the model; an answer off the schema gives none. An unreachable model rejects
 * (the provider's error, after its retries): the caller decides whether to ask again later.
 */
export async function factsByModel(llm: LlmProvider, text: string, speaker?: string | null): Promise<ModelFact[]> {
  const result = await llm.complete({
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: speaker ? `${speaker} said: ${text}` : text },
    ],
    maxTokens: 600,
    jsonSchema: { name: MODEL_FACTS_SCHEMA_NAME, schema: MODEL_FACTS_SCHEMA },
  });
  return parseModelFacts(result.content, speaker ?? null);
}

/** The answer's facts mapped onto the fact model; anything malformed is left out. */
export function parseModelFacts(content: string, speaker: string | null): ModelFact[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return [];
  }
  const facts = (parsed as { facts?: unknown })?.facts;
  if (!Array.isArray(facts)) return [];
  const out: ModelFact[] = [];
  for (const f of facts as Array<Record<string, unknown>>) {
    const attribute = f?.attribute as Attribute;
    const value = typeof f?.value === 'string' ? f.value.trim() : '';
    const who = typeof f?.subject === 'string' ? f.subject.trim() : '';
    if (!ATTRIBUTES.includes(attribute) || !value || !who || value.length > 80) continue;
    const qualifier = typeof f.qualifier === 'string' && f.qualifier.trim() ? f.qualifier.trim().toLowerCase() : null;
    const self = /^(i|me|we|us|myself)$/i.test(who) || (speaker !== null && who === speaker);
    // The end user is named as the rules name it: the speaker of a turn, else SELF.
    const subject = { name: self ? (speaker ?? SELF) : who, type: 'person' as const };
    const negated = f.negated === true;
    const past = negated && f.past === true;
    const type = VALUE_TYPES[attribute] ?? 'concept';
    const name = type === 'concept' ? value.toLowerCase() : value;
    let relation: string = attribute;
    let aspect: string | undefined;
    if (attribute === 'favorite') {
      if (!qualifier) continue;
      relation = `${FACT_RELATIONS.favoritePrefix}${qualifier.replace(/\s+/g, '_')}`;
    } else if (attribute === 'prefers') {
      if (!qualifier) continue;
      aspect = [name, qualifier].sort().join(' | ');
    } else if (attribute === 'habit') {
      if (!qualifier) continue;
      aspect = `${qualifier} | ${/^\d+\/\w+$/.test(name) ? 'frequency' : 'time'}`;
    }
    out.push({
      subject,
      relation,
      object: { name, type },
      negated,
      ...(aspect ? { aspect } : {}),
      ...(past ? { past } : {}),
    });
  }
  return out;
}
