// The vocabulary memories are classified against. Pure data and checks: the service stores it per project.

export interface CategoryDef {
  name: string;
  description: string;
  /** Words or short phrases whose presence (after stemming) puts a memory in the category. */
  cues: string[];
}

export interface EntityTypeDef {
  name: string;
  description: string;
  /** Names that are always of this type (a gazetteer), matched case-insensitively as whole words. */
  examples: string[];
}

export interface RelationTypeDef {
  name: string;
  description: string;
  /** Allowed entity types of the subject and the object; empty allows any. */
  source_types: string[];
  target_types: string[];
  /** One current value per subject: a new value invalidates the old one (lives_in, works_at). */
  single_valued: boolean;
  /** Verb phrases that state the relation between a subject before them and an object after ("moved to"). */
  cues: string[];
}

export interface Ontology {
  categories: CategoryDef[];
  entity_types: EntityTypeDef[];
  relation_types: RelationTypeDef[];
}

/** Entity types the extractor always knows; an ontology may add its own (recognised from their examples). */
export const BUILTIN_ENTITY_TYPES = [
  'person',
  'place',
  'organization',
  'date',
  'product',
  'quantity',
  'concept',
] as const;

const rel = (
  name: string,
  description: string,
  single: boolean,
  cues: string[],
  source: string[] = ['person'],
  target: string[] = [],
): RelationTypeDef => ({ name, description, source_types: source, target_types: target, single_valued: single, cues });

/** `favorite_<thing>` relations are created from "my favorite <thing> is …" whatever the thing. */
export const FAVORITE_PREFIX = 'favorite_';

export const DEFAULT_ONTOLOGY: Ontology = {
  categories: [
    {
      name: 'personal_details',
      description: 'Name, age, birthday, where someone lives or comes from',
      cues: ['name', 'age', 'birthday', 'born', 'years old', 'live', 'moved', 'hometown', 'address'],
    },
    {
      name: 'family',
      description: 'Relatives and household',
      cues: [
        'mother',
        'father',
        'mom',
        'dad',
        'sister',
        'brother',
        'son',
        'daughter',
        'kids',
        'children',
        'wife',
        'husband',
        'family',
        'parents',
        'grandma',
        'grandmother',
        'grandfather',
        'cousin',
        'aunt',
        'uncle',
      ],
    },
    {
      name: 'relationships',
      description: 'Friends, partners, colleagues',
      cues: [
        'friend',
        'boyfriend',
        'girlfriend',
        'partner',
        'married',
        'dating',
        'colleague',
        'neighbor',
        'divorce',
        'wedding',
      ],
    },
    {
      name: 'work',
      description: 'Jobs, employers, career',
      cues: [
        'work',
        'job',
        'office',
        'boss',
        'career',
        'company',
        'hired',
        'promoted',
        'manager',
        'salary',
        'client',
        'project',
        'meeting',
        'colleague',
        'quit',
      ],
    },
    {
      name: 'education',
      description: 'School, study, learning',
      cues: [
        'school',
        'university',
        'college',
        'degree',
        'study',
        'class',
        'course',
        'exam',
        'teacher',
        'graduate',
        'student',
      ],
    },
    {
      name: 'health',
      description: 'Health, fitness, medical',
      cues: [
        'doctor',
        'hospital',
        'sick',
        'allergic',
        'allergy',
        'pain',
        'medication',
        'therapy',
        'diet',
        'run',
        'gym',
        'workout',
        'sleep',
        'injury',
        'vegetarian',
        'vegan',
      ],
    },
    {
      name: 'food',
      description: 'Food and drink',
      cues: [
        'food',
        'eat',
        'cook',
        'recipe',
        'restaurant',
        'pizza',
        'sushi',
        'coffee',
        'tea',
        'dinner',
        'lunch',
        'breakfast',
        'bake',
        'wine',
        'beer',
        'vegetarian',
        'vegan',
      ],
    },
    {
      name: 'travel',
      description: 'Trips and places visited',
      cues: [
        'travel',
        'trip',
        'flight',
        'vacation',
        'holiday',
        'visit',
        'hotel',
        'beach',
        'camping',
        'abroad',
        'passport',
      ],
    },
    {
      name: 'hobbies',
      description: 'Pastimes, sports, arts',
      cues: [
        'hobby',
        'paint',
        'music',
        'guitar',
        'piano',
        'play',
        'game',
        'read',
        'book',
        'hike',
        'hiking',
        'swim',
        'photography',
        'garden',
        'dance',
        'sing',
        'pottery',
        'knit',
        'yoga',
        'football',
        'soccer',
        'tennis',
      ],
    },
    {
      name: 'preferences',
      description: 'Likes, dislikes and favorites',
      cues: ['like', 'love', 'enjoy', 'prefer', 'favorite', 'hate', 'dislike', 'fan'],
    },
    {
      name: 'pets',
      description: 'Animals someone keeps',
      cues: ['dog', 'cat', 'pet', 'puppy', 'kitten', 'horse', 'hamster', 'parrot', 'fish'],
    },
    {
      name: 'finance',
      description: 'Money, purchases, budgets',
      cues: [
        'money',
        'bought',
        'buy',
        'pay',
        'budget',
        'loan',
        'mortgage',
        'rent',
        'savings',
        'invest',
        'price',
        'cost',
        'bank',
      ],
    },
    {
      name: 'plans',
      description: 'Intentions and upcoming events',
      cues: [
        'plan',
        'going to',
        'will',
        'next week',
        'next month',
        'next year',
        'soon',
        'tomorrow',
        'want to',
        'hope to',
        'goal',
      ],
    },
  ],
  entity_types: [
    { name: 'person', description: 'A person, named or the end user', examples: [] },
    { name: 'place', description: 'A city, country, region or named location', examples: [] },
    { name: 'organization', description: 'A company, school, team or institution', examples: [] },
    { name: 'date', description: 'A calendar date, day, month, year or relative time', examples: [] },
    { name: 'product', description: 'A named product, brand or model', examples: [] },
    { name: 'quantity', description: 'A number with a unit, an amount of money, an age', examples: [] },
    { name: 'concept', description: 'Anything else a statement is about (an activity, food, topic)', examples: [] },
  ],
  relation_types: [
    rel(
      'lives_in',
      'Where the subject lives now',
      true,
      [
        'live in',
        'moved to',
        'relocated to',
        'based in',
        'reside in',
        'settled in',
        'moved back to',
        'moved into',
        'living in',
      ],
      ['person'],
      ['place'],
    ),
    rel(
      'works_at',
      'Where the subject works now',
      true,
      [
        'work at',
        'work for',
        'employed by',
        'job at',
        'joined',
        'started at',
        'hired by',
        'started working at',
        'started working for',
        'got a job at',
        'got a job with',
        'hired at',
        'employed at',
        'new job at',
        'started a job at',
      ],
      ['person'],
      ['organization', 'concept'],
    ),
    rel('works_as', "The subject's job or role", true, ['work as', 'job is', 'employed as'], ['person'], []),
    rel('married_to', "The subject's spouse", true, ['married to', 'married', 'wed'], ['person'], ['person']),
    rel(
      'studies_at',
      'Where the subject studies',
      true,
      ['study at', 'enrolled at', 'student at', 'go to school at', 'attend'],
      ['person'],
      ['organization', 'concept'],
    ),
    rel('from', 'Where the subject comes from', true, ['from', 'born in', 'grew up in'], ['person'], ['place']),
    rel('age', "The subject's age", true, [], ['person'], ['quantity']),
    rel(
      'likes',
      'Something the subject likes',
      false,
      ['like', 'love', 'enjoy', 'adore', 'fan of', 'into', 'passionate about'],
      ['person'],
      [],
    ),
    rel(
      'dislikes',
      'Something the subject dislikes',
      false,
      ['hate', 'dislike', "can't stand", 'detest'],
      ['person'],
      [],
    ),
    rel(
      'has',
      'Something or someone the subject has (a pet, a car, a child)',
      false,
      ['have', 'own', 'adopted', 'got'],
      ['person'],
      [],
    ),
    rel('knows', 'A person the subject knows', false, ['met', 'know', 'friend with'], ['person'], ['person']),
    rel(
      'visited',
      'A place the subject went to',
      false,
      ['visited', 'went to', 'traveled to', 'travelled to', 'trip to', 'flew to'],
      ['person'],
      ['place'],
    ),
    rel('allergic_to', 'What the subject is allergic to', false, ['allergic to'], ['person'], []),
    // Read by the personal-fact rules (facts.ts), not by cues: a project's ontology keeps them by keeping their names.
    rel(
      'is',
      'What the subject lastingly is ("a vegetarian", "religious", "a morning person")',
      false,
      [],
      ['person'],
      [],
    ),
    rel('relationship_status', 'Single, dating, engaged, married, divorced, widowed', true, [], ['person'], []),
    rel('partner', "The subject's girlfriend, boyfriend, partner or fiancé(e)", true, [], ['person'], ['person']),
    rel('children', 'Whether the subject has children', false, [], ['person'], []),
    rel('child_count', 'How many children the subject has', true, [], ['person'], ['quantity']),
    rel('birthday', "The subject's birthday", true, [], ['person'], []),
    rel('birth_year', 'The year the subject was born', true, [], ['person'], ['date']),
    rel('anniversary', "The subject's (wedding) anniversary", true, [], ['person'], []),
    rel(
      'has_count',
      'How many of a kind of thing the subject has (one value per kind)',
      true,
      [],
      ['person'],
      ['quantity'],
    ),
    rel('drives', 'The car the subject drives', true, [], ['person'], []),
    rel('phone', 'The phone the subject uses', true, [], ['person'], []),
    rel('prefers', 'Which of two things the subject prefers (one value per pair)', true, [], ['person'], []),
    rel('religion', "The subject's religion, or none (one at a time)", true, [], ['person'], []),
    rel('speaks', 'A language the subject speaks', false, [], ['person'], []),
    rel('supports', 'The team the subject is a fan of (one per league)', true, [], ['person'], []),
    rel('does', 'An activity the subject does as a habit', false, [], ['person'], []),
    rel(
      'habit',
      'How often or when the subject does an activity (one value per activity and dimension)',
      true,
      [],
      ['person'],
      [],
    ),
    rel(
      'favorite_*',
      'The subject\'s favorite thing of a kind ("my favorite color is blue" gives favorite_color)',
      true,
      [],
      ['person'],
      [],
    ),
  ],
};

/** A check failure: the JSON pointer of the offending field and why. */
export interface OntologyProblem {
  field: string;
  message: string;
}

/** Unknown references and duplicate names, reported with the field they occur in; null when sound. */
export function checkOntology(ontology: Ontology): OntologyProblem | null {
  const seen = (list: Array<{ name: string }>, path: string): OntologyProblem | null => {
    const names = new Set<string>();
    for (const [i, item] of list.entries()) {
      const key = item.name.toLowerCase();
      if (names.has(key)) return { field: `${path}/${i}/name`, message: `${path} has "${item.name}" twice` };
      names.add(key);
    }
    return null;
  };
  const problem =
    seen(ontology.categories, 'categories') ??
    seen(ontology.entity_types, 'entity_types') ??
    seen(ontology.relation_types, 'relation_types');
  if (problem) return problem;
  const types = new Set([...BUILTIN_ENTITY_TYPES, ...ontology.entity_types.map((t) => t.name.toLowerCase())]);
  for (const [i, relation] of ontology.relation_types.entries()) {
    for (const side of ['source_types', 'target_types'] as const) {
      const j = relation[side].findIndex((t) => !types.has(t.toLowerCase()));
      if (j >= 0) {
        return {
          field: `relation_types/${i}/${side}/${j}`,
          message: `Unknown entity type "${relation[side][j]}" (declare it in entity_types)`,
        };
      }
    }
  }
  return null;
}
