/** The synthesis module's public face: its erase hook (registered by services.ts) and the relations the graph shows. */
export { relationsOfOwner } from './relations.js';
export { eraseSynthesisData } from './summaries.js';
export { Relation, type RelationView } from './schemas.js';
