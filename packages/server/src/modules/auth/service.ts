import type { Transaction } from 'kysely';
import { sql } from 'kysely';
import type { Config } from '../../config.js';
import { hashPassword, randomToken, sha256Hex, verifyPassword } from '../../core/crypto.js';
import { write, writeUnaudited, type Effects } from '../../core/unit-of-work.js';
import type { Principal } from '../../core/context.js';
import { AppError, invalid, notFound, unauthenticated } from '../../core/errors.js';
import { paginate, type PageParams } from '../../core/paging.js';
import { decodeJson, encodeJson, nowIso, type Database, type Executor } from '../../store/database.js';
import type { DB } from '../../store/schema.js';
import { membershipOf, memberUserIds, userCredentials } from '../org/index.js';
import { ALL_SCOPES, isScope, roleGrants } from '../../core/access.js';
import type { TokenIssuer } from './tokens.js';

/** Sign-in, rotating refresh tokens and sessions. This module owns sessions, refresh_tokens and login_throttle. */

export interface AuthDeps {
  database: Database;
  tokens: TokenIssuer;
  settings: Config['auth'];
}

export interface Client {
  ip: string;
  userAgent: string | null;
  requestId: string;
}

export interface TokenPair {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  refresh_expires_at: string;
  session_id: number;
}

const REFRESH_PREFIX = 'egr_';
const BAD_CREDENTIALS = 'The e-mail address or password is incorrect';

/** Verified against when the e-mail is unknown, so both failures cost one scrypt. */
let dummyHash: Promise<string> | undefined;

/**
 * Runs a change to a user's sessions. Its audit row goes to the organization named (or the user's
 * first); a user who belongs to no organization has no audit chain to append to.
 */
async function writeForUser<T>(
  database: Database,
  userId: number,
  requestId: string,
  organizationId: string | null,
  change: (trx: Transaction<DB>, effects: Effects) => Promise<T>,
): Promise<T> {
  const orgId = organizationId ?? (await firstOrganizationOf(database.db, userId));
  const actor = { type: 'user' as const, id: userId };
  if (orgId) return write(database, { actor, organizationId: orgId, projectId: null, requestId }, change);
  return writeUnaudited(database, change);
}

const firstOrganizationOf = async (db: Executor, userId: number) =>
  (await membershipOf(db, userId))?.organizationId ?? null;

// ---- login throttle ---------------------------------------------------------------------------

function throttleKeys(email: string, ip: string, settings: Config['auth']) {
  return [
    { key: `account:${sha256Hex(email)}`, max: settings.loginMaxFailures },
    { key: `ip:${ip}`, max: settings.loginIpMaxFailures },
  ];
}

async function checkThrottle(
  db: Executor,
  keys: Array<{ key: string; max: number }>,
  settings: Config['auth'],
  now: Date,
) {
  const rows = await db
    .selectFrom('login_throttle')
    .selectAll()
    .where(
      'key',
      'in',
      keys.map((k) => k.key),
    )
    .execute();
  for (const row of rows) {
    const max = keys.find((k) => k.key === row.key)!.max;
    const windowEnds = Date.parse(row.window_started_at) + settings.loginWindowSeconds * 1000;
    if (row.failures >= max && windowEnds > now.getTime()) {
      const retryAfter = String(Math.max(1, Math.ceil((windowEnds - now.getTime()) / 1000)));
      throw new AppError('rate_limited', 'Too many failed sign-ins; retry after the Retry-After delay', undefined, {
        'Retry-After': retryAfter,
      });
    }
  }
}

async function recordFailure(db: Executor, keys: Array<{ key: string }>, settings: Config['auth'], now: Date) {
  const at = now.toISOString();
  const windowStart = new Date(now.getTime() - settings.loginWindowSeconds * 1000).toISOString();
  for (const { key } of keys) {
    await db
      .insertInto('login_throttle')
      .values({ key, failures: 1, window_started_at: at })
      .onConflict((oc) =>
        oc.column('key').doUpdateSet({
          failures: sql`CASE WHEN login_throttle.window_started_at <= ${windowStart} THEN 1 ELSE login_throttle.failures + 1 END`,
          window_started_at: sql`CASE WHEN login_throttle.window_started_at <= ${windowStart} THEN ${at} ELSE login_throttle.window_started_at END`,
        }),
      )
      .execute();
  }
}

// ---- sessions ----------------------------------------------------------------------------------

async function issueRefreshToken(trx: Executor, sessionId: number, now: string): Promise<string> {
  const token = REFRESH_PREFIX + randomToken(32);
  await trx
    .insertInto('refresh_tokens')
    .values({ token_hash: sha256Hex(token), session_id: sessionId, created_at: now })
    .execute();
  return token;
}

async function tokenPair(
  deps: AuthDeps,
  userId: number,
  sessionId: number,
  refreshToken: string,
  expiresAt: string,
): Promise<TokenPair> {
  return {
    access_token: await deps.tokens.issue(userId, sessionId),
    token_type: 'Bearer',
    expires_in: deps.tokens.ttlSeconds,
    refresh_token: refreshToken,
    refresh_expires_at: expiresAt,
    session_id: sessionId,
  };
}

export async function login(
  deps: AuthDeps,
  input: { email: string; password: string; scopes?: string[] },
  client: Client,
): Promise<TokenPair> {
  const { database, settings } = deps;
  const email = input.email.trim().toLowerCase();
  const scopes = input.scopes ?? ALL_SCOPES;
  scopes.forEach((scope, i) => {
    if (!isScope(scope)) throw invalid(`scopes/${i}`, `${scope} is not a known scope; see GET /auth/catalogue`);
  });
  const now = new Date();
  const keys = throttleKeys(email, client.ip, settings);
  await checkThrottle(database.db, keys, settings, now);

  const user = await userCredentials(database.db, email);
  const valid = await verifyPassword(
    input.password,
    user?.passwordHash ?? (await (dummyHash ??= hashPassword(randomToken(24)))),
  );
  if (!user || !valid) {
    await recordFailure(database.db, keys, settings, now);
    throw unauthenticated(BAD_CREDENTIALS);
  }
  await database.db.deleteFrom('login_throttle').where('key', '=', keys[0]!.key).execute();

  const expiresAt = new Date(now.getTime() + settings.sessionTtlSeconds * 1000).toISOString();
  // The session is opened for the user's first organization: its admins may see and end it, and it is audited there.
  const organizationId = await firstOrganizationOf(database.db, user.id);
  const { sessionId, refreshToken } = await writeForUser(
    database,
    user.id,
    client.requestId,
    organizationId,
    async (trx, effects) => {
      const session = await trx
        .insertInto('sessions')
        .values({
          user_id: user.id,
          organization_id: organizationId,
          scopes: encodeJson([...new Set(scopes)]),
          ip: client.ip,
          user_agent: client.userAgent?.slice(0, 512) ?? null,
          created_at: effects.now,
          expires_at: expiresAt,
          last_used_at: effects.now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      effects.audit('auth.login', { type: 'session', id: session.id });
      return { sessionId: session.id, refreshToken: await issueRefreshToken(trx, session.id, effects.now) };
    },
  );
  return tokenPair(deps, user.id, sessionId, refreshToken, expiresAt);
}

async function revoke(trx: Executor, sessionId: number, reason: string, now: string): Promise<void> {
  await trx
    .updateTable('sessions')
    .set({ revoked_at: now, revoked_reason: reason })
    .where('id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .execute();
}

/**
 * Trades a refresh token for a new pair. The presented token is spent; presenting a spent one
 * again means it leaked (or a client raced itself), and the whole session is revoked.
 */
export async function refresh(deps: AuthDeps, refreshToken: string, client: Client): Promise<TokenPair> {
  const { database } = deps;
  const row = refreshToken.startsWith(REFRESH_PREFIX)
    ? await database.db
        .selectFrom('refresh_tokens')
        .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
        .select([
          'refresh_tokens.spent_at',
          'sessions.id',
          'sessions.user_id',
          'sessions.organization_id',
          'sessions.expires_at',
          'sessions.revoked_at',
        ])
        .where('refresh_tokens.token_hash', '=', sha256Hex(refreshToken))
        .executeTakeFirst()
    : undefined;
  const ended = unauthenticated('The refresh token is invalid, spent or its session has ended');
  if (!row || row.revoked_at !== null || row.expires_at <= nowIso()) throw ended;

  const rotated = await writeForUser(
    database,
    row.user_id,
    client.requestId,
    row.organization_id,
    async (trx, effects) => {
      const spent = await trx
        .updateTable('refresh_tokens')
        .set({ spent_at: effects.now })
        .where('token_hash', '=', sha256Hex(refreshToken))
        .where('spent_at', 'is', null)
        .executeTakeFirst();
      if (Number(spent.numUpdatedRows) === 0) {
        await revoke(trx, row.id, 'refresh_token_reuse', effects.now);
        effects.audit('session.revoke', { type: 'session', id: row.id }, 'refresh_token_reuse');
        return undefined;
      }
      effects.audit('auth.refresh', { type: 'session', id: row.id });
      return issueRefreshToken(trx, row.id, effects.now);
    },
  );
  if (!rotated) throw ended;
  return tokenPair(deps, row.user_id, row.id, rotated, row.expires_at);
}

export interface SessionView {
  id: number;
  user_id: number;
  created_at: string;
  last_used_at: string | null;
  expires_at: string;
  ip: string | null;
  user_agent: string | null;
  scopes: string[];
  current: boolean;
}

/**
 * Sessions the principal may see and revoke. A session belongs to its person: their own, and with
 * sessions.manage, those members opened for the acting organization (never a session a member of
 * several organizations opened for another one).
 */
async function visibleSessions(db: Executor, principal: Principal) {
  let query = db
    .selectFrom('sessions')
    .selectAll('sessions')
    .where('sessions.revoked_at', 'is', null)
    .where('sessions.expires_at', '>', nowIso());
  const organizationId = principal.organizationId;
  if (organizationId && principal.role && roleGrants(principal.role, 'sessions.manage')) {
    const members = await memberUserIds(db, organizationId);
    query = query.where((eb) =>
      eb.or([
        eb('sessions.user_id', '=', principal.userId!),
        eb.and([
          eb('sessions.organization_id', '=', organizationId),
          eb('sessions.user_id', 'in', members.length ? members : [-1]),
        ]),
      ]),
    );
  } else {
    query = query.where('sessions.user_id', '=', principal.userId!);
  }
  return query;
}

export async function listSessions(db: Executor, principal: Principal, page: PageParams) {
  return paginate(
    (await visibleSessions(db, principal)).orderBy('sessions.id', 'desc'),
    page,
    (r): SessionView => ({
      id: r.id,
      user_id: r.user_id,
      created_at: r.created_at,
      last_used_at: r.last_used_at,
      expires_at: r.expires_at,
      ip: r.ip,
      user_agent: r.user_agent,
      scopes: decodeJson<string[]>(r.scopes),
      current: r.id === principal.sessionId,
    }),
  );
}

export async function revokeSession(
  deps: AuthDeps,
  principal: Principal,
  sessionId: number,
  requestId: string,
  reason = 'revoked',
): Promise<{ id: number; revoked_at: string }> {
  const found = await (await visibleSessions(deps.database.db, principal))
    .where('sessions.id', '=', sessionId)
    .executeTakeFirst();
  if (!found) throw notFound('Session');
  // Audited where the session was opened, whoever ends it (the person, or an admin of that organization).
  return writeForUser(
    deps.database,
    principal.userId!,
    requestId,
    found.organization_id ?? principal.organizationId,
    async (trx, effects) => {
      await revoke(trx, sessionId, reason, effects.now);
      effects.audit(reason === 'logout' ? 'auth.logout' : 'session.revoke', { type: 'session', id: sessionId });
      return { id: sessionId, revoked_at: effects.now };
    },
  );
}
