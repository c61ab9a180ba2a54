import { describe, expect, it } from 'vitest';
import type { ApiKeyRecord } from '../../core/context.js';
import { ResolvedKeys } from './resolved-keys.js';

/**
 * The rules of the in-memory keys that two processes cannot provoke on demand: a lookup that began
 * before a change is not kept, nothing is used or kept while not listening, the oldest goes first.
 * (resolved-keys.test.ts proves the whole on both databases, across processes.)
 */
const record = (id: number, expiresAt: string | null = null): ApiKeyRecord => ({
  id,
  organizationId: 'org_a',
  projectId: null,
  scopes: [],
  tenantId: null,
  endUserId: null,
  lastUsedAt: null,
  expiresAt,
  liveProjectId: 'proj_a',
  clock: 0,
});
const NOW = '2026-01-01T00:00:00.000Z';

function listeningKeys(): ResolvedKeys {
  const keys = new ResolvedKeys();
  keys.listening();
  return keys;
}

describe('resolved keys', () => {
  it('keeps a lookup only when nothing changed since it began', () => {
    const keys = listeningKeys();
    const began = keys.generation;
    keys.notified();
    keys.keep('a', began, record(1));
    expect(keys.find('a', NOW)).toBeUndefined();
    keys.keep('a', keys.generation, record(1));
    expect(keys.find('a', NOW)?.id).toBe(1);
  });

  it('forgets everything on a notification, on a change made here, on losing and on regaining the connection', () => {
    for (const change of ['notified', 'forgetAll', 'deaf', 'listening'] as const) {
      const keys = listeningKeys();
      const began = keys.generation;
      keys.keep('a', began, record(1));
      keys[change]();
      if (change === 'deaf') keys.listening();
      expect(keys.find('a', NOW), change).toBeUndefined();
      keys.keep('b', began, record(2));
      expect(keys.find('b', NOW), change).toBeUndefined();
    }
  });

  it('neither uses nor keeps anything before listening or while deaf', () => {
    const keys = new ResolvedKeys();
    keys.keep('a', keys.generation, record(1));
    expect(keys.find('a', NOW)).toBeUndefined();
    keys.listening();
    expect(keys.find('a', NOW)).toBeUndefined();
    keys.keep('a', keys.generation, record(1));
    keys.deaf();
    expect(keys.find('a', NOW)).toBeUndefined();
    keys.keep('b', keys.generation, record(2));
    expect(keys.find('b', NOW)).toBeUndefined();
  });

  it('refuses a held key from the moment it expires', () => {
    const keys = listeningKeys();
    keys.keep('a', keys.generation, record(1, NOW));
    expect(keys.find('a', '2025-12-31T23:59:59.999Z')?.id).toBe(1);
    expect(keys.find('a', NOW)).toBeUndefined();
    // Gone for good, not only hidden at that instant.
    expect(keys.find('a', '2025-12-31T23:59:59.999Z')).toBeUndefined();
  });

  it('holds at most MAX_KEPT keys, dropping the oldest', () => {
    const keys = listeningKeys();
    for (let i = 0; i <= ResolvedKeys.MAX_KEPT; i++) keys.keep(`k${i}`, keys.generation, record(i));
    expect(keys.find('k0', NOW)).toBeUndefined();
    expect(keys.find('k1', NOW)?.id).toBe(1);
    expect(keys.find(`k${ResolvedKeys.MAX_KEPT}`, NOW)?.id).toBe(ResolvedKeys.MAX_KEPT);
  });
});
