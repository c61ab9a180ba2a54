import type { FastifyRequest } from 'fastify';
import { invalid } from '../core/errors.js';
import { lookupTable } from '../core/lookup.js';

/** Headers by the names errors give them (`field`). */
const CANONICAL: Record<string, string> = lookupTable({
  'x-api-key': 'X-API-Key',
  authorization: 'Authorization',
  'x-project-id': 'X-Project-ID',
  'x-tenant-id': 'X-Tenant-ID',
  'x-end-user-id': 'X-End-User-ID',
  'x-organization-id': 'X-Organization-ID',
  'idempotency-key': 'Idempotency-Key',
});

export const canonicalHeader = (name: string) => CANONICAL[name] ?? name;

/**
 * A credential or scope header, which must be sent at most once. Node joins a repeated header into
 * one value ("alice, bob") or keeps only the first (Authorization), so the raw header list is
 * counted: a repeat is 400 naming the header, never a merged or silently chosen value.
 */
export function singleHeader(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  if (value === undefined) return undefined;
  const raw = request.raw.rawHeaders;
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) seen++;
  if (Array.isArray(value) || seen > 1)
    throw invalid(canonicalHeader(name), `${canonicalHeader(name)} must be sent once`);
  return value.trim();
}
