/** The /v1 conversation plane's public face. */
export { turnsStoredIn } from './service.js';
