import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { constantTimeEqualHex, hashPassword, randomToken, sha256Hex } from '../../core/crypto.js';
import { takeMigrationLock } from '../../store/migrate.js';
import { prepared } from '../../store/prepared.js';
import { decodeJson, encodeJson, nowIso, type Database, type Executor } from '../../store/database.js';
import { DATA_PLANE_SCOPES } from '../../core/access.js';
import type { ApiKeyRecord } from '../../core/context.js';
import { clockNow } from '../../core/credentials-clock.js';

/** Organizations, projects, accounts and API keys: the tenancy this module owns. */

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
function prefixedId(prefix: string): string {
  const bytes = randomBytes(16);
  let out = '';
  for (const b of bytes) out += ALPHABET[b & 31];
  return `${prefix}_${out}`;
}

export interface Project {
  id: string;
  organization_id: string;
  name: string;
  slug: string;
  description: string;
  created_at: string;
  updated_at: string;
}

export const newOrganizationId = () => prefixedId('org');

export async function createOrganization(
  db: Executor,
  name: string,
  id = newOrganizationId(),
): Promise<{ id: string; name: string }> {
  const org = { id, name, created_at: nowIso() };
  await db.insertInto('organizations').values(org).execute();
  return { id: org.id, name };
}

export async function createProject(
  db: Executor,
  input: { organizationId: string; name: string; slug: string; description?: string },
): Promise<Project> {
  const now = nowIso();
  const project = {
    id: prefixedId('proj'),
    organization_id: input.organizationId,
    name: input.name,
    slug: input.slug,
    description: input.description ?? '',
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('projects').values(project).execute();
  return project;
}

/** A live project of the organization, or undefined: callers answer 404 either way. */
export async function findProject(
  db: Executor,
  organizationId: string,
  projectId: string,
): Promise<Project | undefined> {
  return db
    .selectFrom('projects')
    .select(['id', 'organization_id', 'name', 'slug', 'description', 'created_at', 'updated_at'])
    .where('id', '=', projectId)
    .where('organization_id', '=', organizationId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function createUser(db: Executor, email: string, password: string): Promise<number> {
  const row = await db
    .insertInto('users')
    .values({ email: email.toLowerCase(), password_hash: await hashPassword(password), created_at: nowIso() })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function addMembership(db: Executor, organizationId: string, userId: number, role: string): Promise<void> {
  await db
    .insertInto('memberships')
    .values({ organization_id: organizationId, user_id: userId, role, created_at: nowIso() })
    .execute();
}

const KEY_PREFIX_LENGTH = 12;

/** A new secret: `egm_` and 32 random bytes. Only its SHA-256 is stored. */
export function generateApiKeySecret(): string {
  return `egm_${randomToken(32)}`;
}

export async function createApiKey(
  db: Executor,
  input: {
    organizationId: string;
    name: string;
    projectId?: string | null;
    scopes?: string[];
    tenantId?: string | null;
    endUserId?: string | null;
    createdBy?: number | null;
    expiresAt?: string | null;
    secret?: string;
  },
): Promise<{ id: number; key: string }> {
  const key = input.secret ?? generateApiKeySecret();
  const row = await db
    .insertInto('api_keys')
    .values({
      organization_id: input.organizationId,
      project_id: input.projectId ?? null,
      name: input.name,
      prefix: key.slice(0, KEY_PREFIX_LENGTH),
      key_hash: sha256Hex(key),
      scopes: encodeJson(input.scopes ?? [...DATA_PLANE_SCOPES]),
      tenant_id: input.tenantId ?? null,
      end_user_id: input.endUserId ?? null,
      created_by: input.createdBy ?? null,
      created_at: nowIso(),
      expires_at: input.expiresAt ?? null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { id: row.id, key };
}

export async function revokeApiKey(
  db: Executor,
  organizationId: string,
  keyId: number,
  now = nowIso(),
): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('id', '=', keyId)
    .where('organization_id', '=', organizationId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * The live key matching a presented secret. Looked up by its non-secret prefix, then the
 * SHA-256 digests are compared in constant time.
 */
/** Keys with a display prefix, and the live project the request names (or the key is locked to): one round trip. */
const keyCandidates = prepared(2, (db, prefix: string, requestedProjectId: string | null) =>
  db
    .selectFrom('api_keys')
    .leftJoin('projects', (join) =>
      join
        .on(sql<boolean>`projects.id = coalesce(${requestedProjectId}, api_keys.project_id)`)
        .onRef('projects.organization_id', '=', 'api_keys.organization_id')
        .on('projects.deleted_at', 'is', null),
    )
    .select([
      'projects.id as live_project_id',
      'api_keys.id',
      'api_keys.organization_id',
      'api_keys.project_id',
      'api_keys.key_hash',
      'api_keys.scopes',
      'api_keys.tenant_id',
      'api_keys.end_user_id',
      'api_keys.expires_at',
      'api_keys.revoked_at',
      'api_keys.last_used_at',
      clockNow.as('clock'),
    ])
    .where('api_keys.prefix', '=', prefix),
);

export async function resolveApiKey(
  db: Executor,
  presented: string,
  requestedProjectId?: string,
  now = nowIso(),
): Promise<ApiKeyRecord | undefined> {
  if (presented.length < 20 || presented.length > 200) return undefined;
  const digest = sha256Hex(presented);
  const candidates = await keyCandidates(db, presented.slice(0, KEY_PREFIX_LENGTH), requestedProjectId ?? null);
  const match = candidates.find((c) => constantTimeEqualHex(c.key_hash, digest));
  if (!match || match.revoked_at !== null || (match.expires_at !== null && match.expires_at <= now)) return undefined;
  return {
    id: match.id,
    organizationId: match.organization_id,
    projectId: match.project_id,
    scopes: decodeJson<string[]>(match.scopes),
    tenantId: match.tenant_id,
    endUserId: match.end_user_id,
    lastUsedAt: match.last_used_at,
    expiresAt: match.expires_at,
    liveProjectId: match.live_project_id,
    clock: Number(match.clock),
  };
}

/** Recording last use costs a write, so credentials record it at most once a minute. */
export function lastUseDue(lastUsedAt: string | null, now: Date): boolean {
  return !lastUsedAt || now.getTime() - Date.parse(lastUsedAt) >= 60_000;
}

export async function touchApiKey(db: Executor, key: ApiKeyRecord, now = new Date()): Promise<void> {
  if (!lastUseDue(key.lastUsedAt, now)) return;
  // A record kept in memory (resolved-keys.ts) serves the requests that follow: marked first, one of them writes, not all.
  key.lastUsedAt = now.toISOString();
  await db.updateTable('api_keys').set({ last_used_at: now.toISOString() }).where('id', '=', key.id).execute();
}

export interface BootstrapResult {
  organizationId: string;
  projectId: string;
  email: string;
  /** Only set when generated here; a supplied password is never echoed. */
  generatedPassword?: string;
  /** Only set when generated here; a supplied key is never echoed. */
  generatedApiKey?: string;
}

/**
 * First start on an empty database: a default organization, project, owner account and a
 * project-locked API key. Returns undefined when the database already has an organization
 * (also when another process starting at the same time bootstrapped it: the lock orders them).
 */
export async function bootstrap(
  database: Database,
  input: { email?: string; password?: string; apiKey?: string },
): Promise<BootstrapResult | undefined> {
  return database.db.transaction().execute(async (trx) => {
    await takeMigrationLock(database, trx);
    const existing = await trx.selectFrom('organizations').select('id').limit(1).executeTakeFirst();
    if (existing) return undefined;
    const email = input.email ?? 'owner@engram.local';
    const password = input.password ?? randomToken(18);
    const org = await createOrganization(trx, 'Default organization');
    const project = await createProject(trx, { organizationId: org.id, name: 'Default project', slug: 'default' });
    const userId = await createUser(trx, email, password);
    await addMembership(trx, org.id, userId, 'owner');
    const key = await createApiKey(trx, {
      organizationId: org.id,
      projectId: project.id,
      name: 'Bootstrap key',
      createdBy: userId,
      secret: input.apiKey,
    });
    return {
      organizationId: org.id,
      projectId: project.id,
      email,
      ...(input.password ? {} : { generatedPassword: password }),
      ...(input.apiKey ? {} : { generatedApiKey: key.key }),
    };
  });
}

export interface Membership {
  organizationId: string;
  name: string;
  role: string;
  createdAt: string;
}

/** The user's memberships, oldest first: the first is the organization a bearer call acts in by default. */
export function memberships(db: Executor, userId: number) {
  return db
    .selectFrom('memberships')
    .innerJoin('organizations', 'organizations.id', 'memberships.organization_id')
    .select([
      'memberships.organization_id as organizationId',
      'organizations.name',
      'memberships.role',
      'memberships.created_at as createdAt',
    ])
    .where('memberships.user_id', '=', userId)
    .orderBy('memberships.created_at')
    .orderBy('memberships.organization_id');
}

/** The membership a bearer call acts under: the named organization, else the first. */
export async function membershipOf(
  db: Executor,
  userId: number,
  organizationId?: string,
): Promise<Membership | undefined> {
  let query = memberships(db, userId);
  if (organizationId !== undefined) query = query.where('memberships.organization_id', '=', organizationId);
  return query.limit(1).executeTakeFirst();
}

/** The user with this e-mail address and their password hash, for sign-in. */
export async function userCredentials(
  db: Executor,
  email: string,
): Promise<{ id: number; passwordHash: string } | undefined> {
  const row = await db
    .selectFrom('users')
    .select(['id', 'password_hash'])
    .where('email', '=', email)
    .executeTakeFirst();
  return row && { id: row.id, passwordHash: row.password_hash };
}

/** The user ids of an organization's members. */
export async function memberUserIds(db: Executor, organizationId: string): Promise<number[]> {
  const rows = await db
    .selectFrom('memberships')
    .select('user_id')
    .where('organization_id', '=', organizationId)
    .execute();
  return rows.map((r) => r.user_id);
}

export async function organizationExists(db: Executor, organizationId: string): Promise<boolean> {
  return (
    (await db.selectFrom('organizations').select('id').where('id', '=', organizationId).executeTakeFirst()) !==
    undefined
  );
}

/** The ids of an organization's projects: live ones only, or deleted ones too. */
export async function projectIdsOf(db: Executor, organizationId: string, which: 'live' | 'all'): Promise<string[]> {
  const rows = await db
    .selectFrom('projects')
    .select('id')
    .where('organization_id', '=', organizationId)
    .$if(which === 'live', (qb) => qb.where('deleted_at', 'is', null))
    .execute();
  return rows.map((p) => p.id);
}

// ---- people: accounts and memberships, for the people module and the operator CLI -----------

export interface UserRecord {
  id: number;
  email: string;
  passwordHash: string;
  createdAt: string;
}

export async function findUser(db: Executor, by: { email: string } | { id: number }): Promise<UserRecord | undefined> {
  const query = db.selectFrom('users').select(['id', 'email', 'password_hash', 'created_at']);
  const row = await ('email' in by
    ? query.where('email', '=', by.email.trim().toLowerCase())
    : query.where('id', '=', by.id)
  ).executeTakeFirst();
  return row && { id: row.id, email: row.email, passwordHash: row.password_hash, createdAt: row.created_at };
}

export async function setPassword(db: Executor, userId: number, password: string): Promise<void> {
  await db
    .updateTable('users')
    .set({ password_hash: await hashPassword(password) })
    .where('id', '=', userId)
    .execute();
}

/** Every account, oldest first, with its memberships (for `engram user list`). */
export async function listUsers(
  db: Executor,
): Promise<
  Array<{ id: number; email: string; createdAt: string; memberships: Array<{ organizationId: string; role: string }> }>
> {
  const users = await db.selectFrom('users').select(['id', 'email', 'created_at']).orderBy('id').execute();
  const rows = await db
    .selectFrom('memberships')
    .select(['user_id', 'organization_id', 'role'])
    .orderBy('created_at')
    .execute();
  return users.map((u) => ({
    id: u.id,
    email: u.email,
    createdAt: u.created_at,
    memberships: rows
      .filter((m) => m.user_id === u.id)
      .map((m) => ({ organizationId: m.organization_id, role: m.role })),
  }));
}

export interface Member {
  userId: number;
  email: string;
  role: string;
  joinedAt: string;
}

/** The organization's members, oldest membership first (a query, for paging). */
export function members(db: Executor, organizationId: string) {
  return db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .select(['memberships.user_id as userId', 'users.email', 'memberships.role', 'memberships.created_at as joinedAt'])
    .where('memberships.organization_id', '=', organizationId)
    .orderBy('memberships.created_at')
    .orderBy('memberships.user_id');
}

export async function findMember(db: Executor, organizationId: string, userId: number): Promise<Member | undefined> {
  return members(db, organizationId).where('memberships.user_id', '=', userId).executeTakeFirst();
}

/**
 * How many owners the organization has. In a transaction on PostgreSQL the owners' rows are
 * locked (in user id order, so two counts never deadlock), so two concurrent demotions cannot
 * both see a second owner.
 */
export async function ownerCount(
  db: Executor,
  organizationId: string,
  dialect: 'sqlite' | 'postgres',
): Promise<number> {
  const rows = await db
    .selectFrom('memberships')
    .select('user_id')
    .where('organization_id', '=', organizationId)
    .where('role', '=', 'owner')
    .orderBy('user_id')
    .$if(dialect === 'postgres', (qb) => qb.forUpdate())
    .execute();
  return rows.length;
}

/**
 * PostgreSQL: locks, in one statement and in user id order (ownerCount's order, so no two of these deadlock), the
 * memberships of `userIds` in the organization and, with `owners`, every owner's, until the transaction ends: a people
 * write takes every membership row it will lock here, first. SQLite: nothing (its writes run one at a time).
 */
export async function lockMemberships(
  db: Executor,
  organizationId: string,
  userIds: number[],
  owners: boolean,
  dialect: 'sqlite' | 'postgres',
): Promise<void> {
  if (dialect !== 'postgres') return;
  await db
    .selectFrom('memberships')
    .select('user_id')
    .where('organization_id', '=', organizationId)
    .where((eb) => eb.or([eb('user_id', 'in', userIds), ...(owners ? [eb('role', '=', 'owner')] : [])]))
    .orderBy('user_id')
    .forUpdate()
    .execute();
}

/** Gives the member `role` if their role is still `from`, the one the change was decided on; false if it is not (changed meanwhile). */
export async function setMemberRole(
  db: Executor,
  organizationId: string,
  userId: number,
  role: string,
  from: string,
): Promise<boolean> {
  const changed = await db
    .updateTable('memberships')
    .set({ role })
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .where('role', '=', from)
    .executeTakeFirst();
  return Number(changed.numUpdatedRows) > 0;
}

/** Removes the member if their role is still `role`, the one the removal was decided on; false if it is not (changed meanwhile). */
export async function removeMembership(
  db: Executor,
  organizationId: string,
  userId: number,
  role: string,
): Promise<boolean> {
  const removed = await db
    .deleteFrom('memberships')
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .where('role', '=', role)
    .executeTakeFirst();
  return Number(removed.numDeletedRows) > 0;
}

/** A live project of the organization, for the operator CLI's `key create`. */
export async function projectOrganization(db: Executor, projectId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('projects')
    .select('organization_id')
    .where('id', '=', projectId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return row?.organization_id;
}
