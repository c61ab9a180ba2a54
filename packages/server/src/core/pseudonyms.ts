import { createHmac } from 'node:crypto';
import { deriveKey } from './crypto.js';

/**
 * How places that must outlive an end user's removal name them (a purged end user's tombstones, the audit
 * row of the purge, delivery and stored-answer links): HMAC-SHA-256 of the end-user id under a key derived
 * per project from the server secret (core/secret.ts), never stored. Derived rather than a per-project
 * secret kept in the database: a dump or backup alone then cannot confirm a guessed id (an e-mail address,
 * a phone number), where a key stored beside the hashes would let anyone holding the dump try every guess.
 * The server, which holds the secret, can still find what it wrote for an id it is given (a later purge of
 * the same id, `engram audit verify`). Rotating the secret orphans the earlier pseudonyms, which then name
 * no one at all.
 */
export type Pseudonymize = (projectId: string, endUserId: string) => string;

/** What every pseudonym starts with, so a reader of a tombstone or an audit row sees it is one. */
export const PSEUDONYM_PREFIX = 'eu~';

export function endUserPseudonyms(secret: Uint8Array): Pseudonymize {
  // One HKDF per project, kept: a purge derives it once, but fan-out does per delivery.
  const keys = new Map<string, Buffer>();
  return (projectId, endUserId) => {
    let key = keys.get(projectId);
    if (!key) {
      if (keys.size >= 10_000) keys.clear();
      key = deriveKey(secret, 'end-user-pseudonym', projectId);
      keys.set(projectId, key);
    }
    return PSEUDONYM_PREFIX + createHmac('sha256', key).update(endUserId, 'utf8').digest('base64url');
  };
}
