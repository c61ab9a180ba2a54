import type { ApiKeyRecord } from './context.js';
import { notFound } from './errors.js';
import { validateEndUserId } from './validation.js';

/**
 * A key's narrowing: whatever an API key is bound to (project, tenant, end user) bounds every
 * operation it can call. Out of reach is 404, indistinguishable from absence.
 */
export type KeyBinding = Pick<ApiKeyRecord, 'projectId' | 'tenantId' | 'endUserId'>;

/**
 * The end user a request may act on, whichever way it names one (X-End-User-ID, a body or query
 * `user_id`, a path): a key bound to an end user acts only as that end user, and naming another is
 * 404. Null: none named and the key is not bound.
 */
export function endUserWithin(key: KeyBinding, named: string | undefined, field: string): string | null {
  if (named !== undefined) validateEndUserId(named, field);
  if (key.endUserId && named !== undefined && named !== key.endUserId) throw notFound('End user');
  return key.endUserId ?? named ?? null;
}

/**
 * Whether something that belongs to (project, tenant, end user) is within a key's reach: every
 * binding the key carries must match. For rows read by id (refresh jobs).
 */
export function withinBinding(
  key: KeyBinding,
  owner: { projectId: string | null; tenantId: string | null; endUserId: string | null },
): boolean {
  if (key.projectId && owner.projectId !== key.projectId) return false;
  if (key.tenantId && owner.tenantId !== key.tenantId) return false;
  if (key.endUserId && owner.endUserId !== key.endUserId) return false;
  return true;
}
