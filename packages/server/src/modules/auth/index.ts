/** The auth module's public face. */
export { TokenIssuer, type AccessClaims } from './tokens.js';
export { endSessions, lastSignIns, liveSession, touchSession } from './sessions.js';
