/** The synthesis module's public face: its erase hook (registered by services.ts), the relations the graph shows, and relations in exports and imports. */
export {
  importRelations,
  relationsFromMemories,
  relationsOfOwner,
  type ImportedRelation,
  type PortableRelation,
} from './relations.js';
export { eraseSynthesisData } from './summaries.js';
export { Relation, RELATION_TYPES, SUMMARIZES, type RelationView } from './schemas.js';
