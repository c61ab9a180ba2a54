import { randomToken, sha256Hex, verifyPassword } from '../../core/crypto.js';
import type { Actor, WriteContext } from '../../core/context.js';
import { AppError, forbidden, invalid, notFound, unauthenticated } from '../../core/errors.js';
import type { Selectable } from 'kysely';
import type { Mailer } from '../../core/mailer.js';
import { paginate, type PageParams } from '../../core/paging.js';
import { write, writeUnaudited } from '../../core/unit-of-work.js';
import { isRole, type Role } from '../../core/access.js';
import { nowIso, type Database, type Executor } from '../../store/database.js';
import type { InvitationsTable } from '../../store/schema.js';
import { endSessions, lastSignIns } from '../auth/index.js';
import {
  addMembership,
  createUser,
  findMember,
  findUser,
  lockMemberships,
  membershipOf,
  members,
  organizationExists,
  ownerCount,
  removeMembership,
  setMemberRole,
  setPassword,
} from '../org/index.js';
import { checkPassword } from './password-rules.js';

/**
 * People in organizations: invitations, members and their roles, passwords. This module owns the
 * invitations and password_resets tables; accounts and memberships are org's, sessions auth's.
 */

export interface PeopleDeps {
  database: Database;
  mailer: Mailer | null;
  /** Where links point: ENGRAM_PUBLIC_URL. */
  publicUrl: string;
  /** How long invitation and password-reset links work. */
  links: { invitationTtlMs: number; resetTtlMs: number };
}

const INVITATION_PREFIX = 'egi_';
const RESET_PREFIX = 'egp_';

/** The acting person in an organization: their user id and role there. */
export interface Manager {
  userId: number;
  role: Role;
}

const conflict = (message: string, field?: string) => new AppError('conflict', message, field);
/** A role change or removal is decided on the member's role as read; another change of it committed meanwhile refuses it. */
const roleChangedMeanwhile = () => conflict("The member's role changed meanwhile; read it again and retry");

/** Granting, changing or removing the owner role is for owners. */
function requireOwnerFor(acting: Role, role: string, what: string): void {
  if (role === 'owner' && acting !== 'owner') throw forbidden(`Only an owner can ${what} an owner`);
}

/**
 * The acting person's role now, which every people write decides on (it may have changed since they authenticated).
 * Their membership row is locked first, with every other membership row the write will lock (the member's it changes,
 * the owners' when it counts them), in ownerCount's order (org's lockMemberships), so a change of it under way is
 * waited for and none commits before this write; then it is read again and refused as authorization would refuse it
 * now (WriteContext.verifyActor).
 */
async function actingRole(
  database: Database,
  trx: Executor,
  ctx: WriteContext,
  manager: Manager,
  locks: { member?: number; owners?: boolean } = {},
): Promise<Role> {
  const userIds = locks.member === undefined ? [manager.userId] : [manager.userId, locks.member];
  await lockMemberships(trx, ctx.organizationId, userIds, locks.owners ?? false, database.dialect);
  return ctx.verifyActor ? ctx.verifyActor(trx) : manager.role;
}

/** The token is in the fragment, which browsers never send to a server, so it stays out of access logs. */
const link = (deps: PeopleDeps, path: string, token: string) =>
  `${deps.publicUrl.replace(/\/+$/, '')}${path}#token=${token}`;

async function mail(deps: PeopleDeps, to: string, subject: string, text: string): Promise<boolean> {
  return deps.mailer ? deps.mailer.send({ to, subject, text }) : false;
}

// ---- invitations -----------------------------------------------------------------------------

export interface InvitationView {
  id: number;
  email: string;
  role: string;
  invited_by: number | null;
  created_at: string;
  expires_at: string;
  token: string;
  url: string;
  mailed: boolean;
}

export async function invite(
  deps: PeopleDeps,
  ctx: WriteContext,
  manager: Manager,
  input: { email: string; role: string },
): Promise<InvitationView> {
  const email = input.email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw invalid('email', 'email must be an e-mail address');
  const token = INVITATION_PREFIX + randomToken(32);
  const created = await write(deps.database, ctx, async (trx, effects) => {
    requireOwnerFor(await actingRole(deps.database, trx, ctx, manager), input.role, 'invite');
    const existing = await findUser(trx, { email });
    if (existing && (await findMember(trx, ctx.organizationId, existing.id)))
      throw conflict('This person is already a member', 'email');
    const expiresAt = new Date(Date.parse(effects.now) + deps.links.invitationTtlMs).toISOString();
    const row = await trx
      .insertInto('invitations')
      .values({
        organization_id: ctx.organizationId,
        email,
        role: input.role,
        token_hash: sha256Hex(token),
        invited_by: manager.userId,
        created_at: effects.now,
        expires_at: expiresAt,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    effects.audit('member.invite', { type: 'invitation', id: row.id });
    effects.emit('member.invited', { invitation_id: row.id, role: input.role });
    return {
      id: row.id,
      email,
      role: input.role,
      invited_by: manager.userId,
      created_at: effects.now,
      expires_at: expiresAt,
    };
  });
  const url = link(deps, '/invitations/accept', token);
  const mailed = await mail(
    deps,
    email,
    'You are invited to Engram',
    `You have been invited to an Engram organization as ${input.role}.\n\nAccept before ${created.expires_at}: ${url}\n` +
      `(POST the token to /invitations/accept with a password; it works once.)\n`,
  );
  return { ...created, token, url, mailed };
}

/**
 * Accepting an invitation: a new account with the given password, or, when the invited address
 * already has one, joining with that account (its password proves it). Single use.
 */
export async function acceptInvitation(
  deps: PeopleDeps,
  input: { token: string; password: string },
  requestId: string,
): Promise<{ organization_id: string; user_id: number; email: string; role: string; created_account: boolean }> {
  const gone = notFound('Invitation (unknown, already used or expired)');
  if (!input.token.startsWith(INVITATION_PREFIX)) throw gone;
  const invitation = await deps.database.db
    .selectFrom('invitations')
    .selectAll()
    .where('token_hash', '=', sha256Hex(input.token))
    .executeTakeFirst();
  if (
    !invitation ||
    invitation.accepted_at !== null ||
    invitation.revoked_at !== null ||
    invitation.expires_at <= nowIso()
  )
    throw gone;
  const existing = await findUser(deps.database.db, { email: invitation.email });
  if (existing) {
    if (!(await verifyPassword(input.password, existing.passwordHash)))
      throw unauthenticated('The password of the existing account is incorrect');
  } else {
    checkPassword(input.password, invitation.email, 'password');
  }
  // The actor is the person accepting; a new account's id is known only inside the transaction.
  const ctx: WriteContext & { actor: Actor } = {
    actor: { type: 'user', id: existing?.id ?? null },
    organizationId: invitation.organization_id,
    projectId: null,
    requestId,
  };
  return write(deps.database, ctx, async (trx, effects) => {
    const claimed = await trx
      .updateTable('invitations')
      .set({ accepted_at: effects.now })
      .where('id', '=', invitation.id)
      .where('accepted_at', 'is', null)
      // A revocation committed since the read above wins.
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) === 0) throw gone;
    const userId = existing?.id ?? (await createUser(trx, invitation.email, input.password));
    if (await findMember(trx, invitation.organization_id, userId)) throw conflict('This account is already a member');
    await addMembership(trx, invitation.organization_id, userId, invitation.role);
    await trx.updateTable('invitations').set({ accepted_by: userId }).where('id', '=', invitation.id).execute();
    ctx.actor = { type: 'user', id: userId };
    effects.audit('member.join', { type: 'user', id: userId });
    effects.emit('member.joined', { user_id: userId, role: invitation.role });
    return {
      organization_id: invitation.organization_id,
      user_id: userId,
      email: invitation.email,
      role: invitation.role,
      created_account: !existing,
    };
  });
}

export const INVITATION_STATUSES = ['pending', 'accepted', 'expired', 'revoked'] as const;
export type InvitationStatus = (typeof INVITATION_STATUSES)[number];

/** An invitation as listed: never its token (only its digest is stored). */
export interface InvitationRecord {
  id: number;
  email: string;
  role: string;
  status: InvitationStatus;
  invited_by: number | null;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
  accepted_by: number | null;
  revoked_at: string | null;
  revoked_by: number | null;
}

/** An invitation's row without what never leaves the module: its organization (the caller's) and its token's digest. */
type InvitationRow = Omit<Selectable<InvitationsTable>, 'organization_id' | 'token_hash'>;

const invitationsOf = (db: Executor, organizationId: string) =>
  db
    .selectFrom('invitations')
    .select([
      'id',
      'email',
      'role',
      'invited_by',
      'created_at',
      'expires_at',
      'accepted_at',
      'accepted_by',
      'revoked_at',
      'revoked_by',
    ])
    .where('organization_id', '=', organizationId);

const toInvitationRecord = (row: InvitationRow, now: string): InvitationRecord => ({
  ...row,
  status:
    row.revoked_at !== null
      ? 'revoked'
      : row.accepted_at !== null
        ? 'accepted'
        : row.expires_at <= now
          ? 'expired'
          : 'pending',
});

/** The organization's invitations, newest first, optionally of one status. */
export async function listInvitations(
  db: Executor,
  organizationId: string,
  query: PageParams & { status?: InvitationStatus },
) {
  const now = nowIso();
  const open = (qb: ReturnType<typeof invitationsOf>) =>
    qb.where('accepted_at', 'is', null).where('revoked_at', 'is', null);
  let qb = invitationsOf(db, organizationId);
  if (query.status === 'pending') qb = open(qb).where('expires_at', '>', now);
  else if (query.status === 'expired') qb = open(qb).where('expires_at', '<=', now);
  else if (query.status === 'accepted') qb = qb.where('accepted_at', 'is not', null);
  else if (query.status === 'revoked') qb = qb.where('revoked_at', 'is not', null);
  return paginate(qb.orderBy('id', 'desc'), query, (row) => toInvitationRecord(row, now));
}

/**
 * Revokes a pending invitation: its link stops working. Only an owner may revoke an invitation to
 * be owner; one accepted, expired or revoked already is 409, naming its status.
 */
export async function revokeInvitation(
  database: Database,
  ctx: WriteContext,
  manager: Manager,
  invitationId: number,
): Promise<InvitationRecord> {
  return write(database, ctx, async (trx, effects) => {
    const acting = await actingRole(database, trx, ctx, manager);
    const row = await invitationsOf(trx, ctx.organizationId).where('id', '=', invitationId).executeTakeFirst();
    if (!row) throw notFound('Invitation');
    requireOwnerFor(acting, row.role, 'revoke an invitation of');
    const revoked = await trx
      .updateTable('invitations')
      .set({ revoked_at: effects.now, revoked_by: manager.userId })
      .where('id', '=', invitationId)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', effects.now)
      .executeTakeFirst();
    if (Number(revoked.numUpdatedRows) === 0) {
      // Accepted (perhaps just now), expired or revoked: read again, as the update found it.
      const now = await invitationsOf(trx, ctx.organizationId).where('id', '=', invitationId).executeTakeFirstOrThrow();
      throw conflict(
        `The invitation is ${toInvitationRecord(now, effects.now).status}; only a pending one can be revoked`,
      );
    }
    effects.audit('member.invite_revoke', { type: 'invitation', id: invitationId });
    effects.emit('member.invitation_revoked', { invitation_id: invitationId, role: row.role });
    return toInvitationRecord({ ...row, revoked_at: effects.now, revoked_by: manager.userId }, effects.now);
  });
}

// ---- members ---------------------------------------------------------------------------------

export interface MemberView {
  user_id: number;
  email: string;
  role: string;
  joined_at: string;
  last_sign_in_at: string | null;
}

export async function listMembers(db: Executor, organizationId: string, page: PageParams) {
  const result = await paginate(members(db, organizationId), page, (m) => m);
  const signIns = await lastSignIns(
    db,
    result.items.map((m) => m.userId),
  );
  return {
    ...result,
    items: result.items.map(
      (m): MemberView => ({
        user_id: m.userId,
        email: m.email,
        role: m.role,
        joined_at: m.joinedAt,
        last_sign_in_at: signIns.get(m.userId) ?? null,
      }),
    ),
  };
}

async function memberView(db: Executor, organizationId: string, userId: number): Promise<MemberView> {
  const member = await findMember(db, organizationId, userId);
  if (!member) throw notFound('Member');
  const signIns = await lastSignIns(db, [userId]);
  return {
    user_id: member.userId,
    email: member.email,
    role: member.role,
    joined_at: member.joinedAt,
    last_sign_in_at: signIns.get(userId) ?? null,
  };
}

export const getMember = memberView;

/** The organization keeps at least one owner: the last one cannot be demoted or removed. */
async function keepAnOwner(
  database: Database,
  trx: Executor,
  organizationId: string,
  currentRole: string,
): Promise<void> {
  if (currentRole !== 'owner') return;
  if ((await ownerCount(trx, organizationId, database.dialect)) <= 1) {
    throw conflict('The last owner of an organization cannot be removed or demoted; make another member owner first');
  }
}

export async function changeRole(
  database: Database,
  ctx: WriteContext,
  manager: Manager,
  userId: number,
  role: string,
): Promise<MemberView> {
  if (!isRole(role)) throw invalid('role', 'role must be owner, admin, member or viewer');
  await write(database, ctx, async (trx, effects) => {
    // Read before the locks: the owners are locked (and counted) when the role the change is decided on is owner.
    const member = await findMember(trx, ctx.organizationId, userId);
    const acting = await actingRole(database, trx, ctx, manager, { member: userId, owners: member?.role === 'owner' });
    if (!member) throw notFound('Member');
    requireOwnerFor(acting, member.role, 'change');
    requireOwnerFor(acting, role, 'make someone');
    if (member.role === role) return;
    if (role !== 'owner') await keepAnOwner(database, trx, ctx.organizationId, member.role);
    if (!(await setMemberRole(trx, ctx.organizationId, userId, role, member.role))) throw roleChangedMeanwhile();
    effects.audit('member.role_change', { type: 'user', id: userId });
    effects.emit('member.role_changed', { user_id: userId, role, previous_role: member.role });
  });
  return memberView(database.db, ctx.organizationId, userId);
}

/** Removes a member; every session of theirs ends at once (sessions belong to the person). */
export async function removeMember(
  database: Database,
  ctx: WriteContext,
  manager: Manager,
  userId: number,
): Promise<{ user_id: number; removed_at: string; sessions_ended: number }> {
  return write(database, ctx, async (trx, effects) => {
    const member = await findMember(trx, ctx.organizationId, userId);
    const acting = await actingRole(database, trx, ctx, manager, { member: userId, owners: member?.role === 'owner' });
    if (!member) throw notFound('Member');
    requireOwnerFor(acting, member.role, 'remove');
    await keepAnOwner(database, trx, ctx.organizationId, member.role);
    if (!(await removeMembership(trx, ctx.organizationId, userId, member.role))) throw roleChangedMeanwhile();
    const ended = await endSessions(trx, userId, 'member_removed', null, effects.now);
    effects.audit('member.remove', { type: 'user', id: userId });
    effects.emit('member.removed', { user_id: userId, previous_role: member.role });
    return { user_id: userId, removed_at: effects.now, sessions_ended: ended };
  });
}

// ---- passwords -------------------------------------------------------------------------------

/** Runs a change to a person's password, audited in their first organization when they have one. */
async function writeForPerson<T>(
  database: Database,
  userId: number,
  actor: Actor,
  requestId: string | null,
  change: Parameters<typeof write<T>>[2],
): Promise<T> {
  const organizationId = (await membershipOf(database.db, userId))?.organizationId;
  if (organizationId) return write(database, { actor, organizationId, projectId: null, requestId }, change);
  return writeUnaudited(database, change);
}

/** Changing one's own password needs the current one; every other session of theirs ends. */
export async function changeOwnPassword(
  database: Database,
  who: { userId: number; sessionId: number },
  input: { current_password: string; new_password: string },
  requestId: string,
): Promise<{ sessions_ended: number }> {
  const user = await findUser(database.db, { id: who.userId });
  if (!user) throw unauthenticated('The session of this token has ended; sign in again');
  if (!(await verifyPassword(input.current_password, user.passwordHash)))
    throw invalid('current_password', 'The current password is incorrect');
  checkPassword(input.new_password, user.email, 'new_password');
  return writeForPerson(database, who.userId, { type: 'user', id: who.userId }, requestId, async (trx, effects) => {
    await setPassword(trx, who.userId, input.new_password);
    const ended = await endSessions(trx, who.userId, 'password_changed', who.sessionId, effects.now);
    effects.audit('password.change', { type: 'user', id: who.userId });
    return { sessions_ended: ended };
  });
}

/** A single-use link that sets a member's password (an admin's answer when someone is locked out). */
export async function issuePasswordReset(
  deps: PeopleDeps,
  ctx: WriteContext,
  manager: Manager,
  userId: number,
): Promise<{ user_id: number; token: string; url: string; expires_at: string; mailed: boolean }> {
  const token = RESET_PREFIX + randomToken(32);
  const issued = await write(deps.database, ctx, async (trx, effects) => {
    // The member's row is locked with the acting one's and read after: a change of their role under way (made an
    // owner, say) is waited for, and the link is decided on the role they have once it is done.
    const acting = await actingRole(deps.database, trx, ctx, manager, { member: userId });
    const member = await findMember(trx, ctx.organizationId, userId);
    if (!member) throw notFound('Member');
    requireOwnerFor(acting, member.role, 'reset the password of');
    const expiresAt = new Date(Date.parse(effects.now) + deps.links.resetTtlMs).toISOString();
    await trx
      .insertInto('password_resets')
      .values({ token_hash: sha256Hex(token), user_id: userId, created_at: effects.now, expires_at: expiresAt })
      .execute();
    effects.audit('password.reset_issue', { type: 'user', id: userId });
    return { email: member.email, expiresAt };
  });
  const url = link(deps, '/auth/password/reset', token);
  const mailed = await mail(
    deps,
    issued.email,
    'Reset your Engram password',
    `A password reset was requested for your Engram account.\n\nSet a new password before ${issued.expiresAt}: ${url}\n` +
      `(POST the token to /auth/password/reset with new_password; it works once.)\n`,
  );
  return { user_id: userId, token, url, expires_at: issued.expiresAt, mailed };
}

/** Spends a reset token: the new password is set and every session of the person ends. */
export async function resetPassword(
  database: Database,
  input: { token: string; new_password: string },
  requestId: string,
): Promise<{ user_id: number; sessions_ended: number }> {
  const gone = notFound('Password-reset link (unknown, already used or expired)');
  if (!input.token.startsWith(RESET_PREFIX)) throw gone;
  const reset = await database.db
    .selectFrom('password_resets')
    .selectAll()
    .where('token_hash', '=', sha256Hex(input.token))
    .executeTakeFirst();
  if (!reset || reset.used_at !== null || reset.expires_at <= nowIso()) throw gone;
  const user = await findUser(database.db, { id: reset.user_id });
  if (!user) throw gone;
  checkPassword(input.new_password, user.email, 'new_password');
  return writeForPerson(database, user.id, { type: 'user', id: user.id }, requestId, async (trx, effects) => {
    const spent = await trx
      .updateTable('password_resets')
      .set({ used_at: effects.now })
      .where('token_hash', '=', reset.token_hash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    if (Number(spent.numUpdatedRows) === 0) throw gone;
    await setPassword(trx, user.id, input.new_password);
    const ended = await endSessions(trx, user.id, 'password_reset', null, effects.now);
    effects.audit('password.reset', { type: 'user', id: user.id });
    return { user_id: user.id, sessions_ended: ended };
  });
}

// ---- operator commands (engram user …) ---------------------------------------------------------

/** `engram user create`: a new account, optionally a member of an organization; the password is generated. */
export async function createUserAsOperator(
  database: Database,
  input: { email: string; organizationId?: string; role?: string },
): Promise<{ userId: number; password: string }> {
  const email = input.email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw invalid('email', `${input.email} is not an e-mail address`);
  if (input.role !== undefined && !isRole(input.role))
    throw invalid('role', 'role must be owner, admin, member or viewer');
  if (await findUser(database.db, { email })) throw conflict(`An account with ${email} exists already`);
  if (input.organizationId && !(await organizationExists(database.db, input.organizationId)))
    throw notFound(`Organization ${input.organizationId}`);
  const password = randomToken(18);
  const organizationId = input.organizationId;
  if (!organizationId) return { userId: await createUser(database.db, email, password), password };
  const role = input.role ?? 'member';
  return write(
    database,
    { actor: { type: 'system', id: null }, organizationId, projectId: null, requestId: null },
    async (trx, effects) => {
      const userId = await createUser(trx, email, password);
      await addMembership(trx, organizationId, userId, role);
      effects.audit('member.join', { type: 'user', id: userId });
      effects.emit('member.joined', { user_id: userId, role });
      return { userId, password };
    },
  );
}

/** `engram user reset-password`: a generated password, every session ended (lost bootstrap credentials). */
export async function resetPasswordAsOperator(
  database: Database,
  email: string,
): Promise<{ userId: number; password: string; sessionsEnded: number }> {
  const user = await findUser(database.db, { email });
  if (!user) throw notFound(`Account ${email}`);
  const password = randomToken(18);
  const ended = await writeForPerson(database, user.id, { type: 'system', id: null }, null, async (trx, effects) => {
    await setPassword(trx, user.id, password);
    const count = await endSessions(trx, user.id, 'password_reset', null, effects.now);
    effects.audit('password.reset', { type: 'user', id: user.id });
    return count;
  });
  return { userId: user.id, password, sessionsEnded: ended };
}
