/** The synthesis module's public face: its erase hook (registered by services.ts), the relations the graph shows, relations in exports and imports, and the one answer to a failed model. */
export {
  importRelations,
  relationsFromMemories,
  relationsOfOwner,
  type ImportedRelation,
  type PortableRelation,
} from './relations.js';
export { eraseSynthesisData, llmUnavailable } from './summaries.js';
export { Relation, RELATION_TYPES, SUMMARIZES, type RelationView } from './schemas.js';
