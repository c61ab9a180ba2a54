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

/** The keys under which stored JSON (event payloads, job payloads, export scopes) names an end user. */
const END_USER_KEYS = new Set(['end_user_id', 'endUserId', 'user_id']);

/**
 * `value` (parsed JSON) with every end-user id equal to `endUserId` under one of END_USER_KEYS, at any depth,
 * replaced by `pseudonym`; `changed` says whether there was one.
 */
export function renameEndUser(
  value: unknown,
  endUserId: string,
  pseudonym: string,
): { value: unknown; changed: boolean } {
  let changed = false;
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.entries(v).map(([key, inner]) => {
        if (END_USER_KEYS.has(key) && inner === endUserId) {
          changed = true;
          return [key, pseudonym];
        }
        return [key, walk(inner)];
      }),
    );
  };
  const renamed = walk(value);
  return { value: renamed, changed };
}

/** Whether `value` is a pseudonym (the end-user ids customers choose may not start so: core/validation.ts). */
export const isPseudonym = (value: string): boolean => value.startsWith(PSEUDONYM_PREFIX);

/**
 * Stored JSON (text, or parsed as PostgreSQL returns it) with the end user renamed as renameEndUser does,
 * encoded; undefined when it does not name them.
 */
export function renamedJson(stored: unknown, endUserId: string, pseudonym: string): string | undefined {
  if (stored === null) return undefined;
  const renamed = renameEndUser(typeof stored === 'string' ? JSON.parse(stored) : stored, endUserId, pseudonym);
  return renamed.changed ? JSON.stringify(renamed.value) : undefined;
}
