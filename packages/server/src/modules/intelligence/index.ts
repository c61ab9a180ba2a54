/** The intelligence module's public face: what the composition root (services.ts) builds and registers. */
export { RECLASSIFY_JOB } from './ontology.js';
export { createIntelligence, eraseResolutions, Intelligence, reclassifyJob } from './service.js';
export { eraseModelFacts } from './model-reading.js';
export { currentFactsFirst } from './current.js';
