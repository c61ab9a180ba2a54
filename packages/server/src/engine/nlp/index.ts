// Public API of the language machinery (a pure library: no HTTP, no database).
export { Extractor, SELF, type EntityRef, type Extraction, type RelationFact } from './extract.js';
export { PRONOUN_SUBJECT, pronounFits } from './fact-model.js';
export { ELSEWHERE } from './fact-changes.js';
export { placeWithin, VEHICLES } from './world.js';
export { singularOf } from './fact-endings.js';
export { personAliases } from './entities.js';
export { factsByModel, MODEL_FACTS_SCHEMA_NAME, parseModelFacts, type ModelFact } from './model-facts.js';
export { favoriteKind } from './lexicon.js';
export { type NounKind, nounIs } from './word-kinds.js';
export {
  BUILTIN_ENTITY_TYPES,
  DEFAULT_ONTOLOGY,
  FAVORITE_PREFIX,
  checkOntology,
  type CategoryDef,
  type EntityTypeDef,
  type Ontology,
  type OntologyProblem,
  type RelationTypeDef,
} from './ontology.js';
