import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { controlContextOf, organizationOf, principalOf } from '../../http/auth.js';
import { PageOf, PageQuery } from '../../core/paging.js';
import { ROLES } from '../../core/access.js';
import * as people from './service.js';
import { PASSWORD_MAX_LENGTH } from './password-rules.js';

const Role = Type.Union(
  Object.keys(ROLES).map((r) => Type.Literal(r)),
  { description: 'owner, admin, member or viewer' },
);
const Password = (description: string) => Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH, description });
const Timestamp = Type.String({ format: 'date-time' });
const UserParams = Type.Object({ user_id: Type.Integer({ minimum: 1 }) });

const Member = Type.Object({
  user_id: Type.Integer(),
  email: Type.String(),
  role: Type.String(),
  joined_at: Timestamp,
  last_sign_in_at: Type.Union([Timestamp, Type.Null()], {
    description: 'Start of their newest session; null when they never signed in',
  }),
});
const InvitationStatus = Type.Union(people.INVITATION_STATUSES.map((s) => Type.Literal(s)));
const Invitation = Type.Object({
  id: Type.Integer(),
  email: Type.String(),
  role: Type.String(),
  status: InvitationStatus,
  invited_by: Type.Union([Type.Integer(), Type.Null()]),
  created_at: Timestamp,
  expires_at: Timestamp,
  accepted_at: Type.Union([Timestamp, Type.Null()]),
  accepted_by: Type.Union([Type.Integer(), Type.Null()], { description: 'The account that accepted it' }),
  revoked_at: Type.Union([Timestamp, Type.Null()]),
  revoked_by: Type.Union([Type.Integer(), Type.Null()]),
});
const Link = {
  token: Type.String({ description: 'Single use; shown in this answer only' }),
  url: Type.String({
    description: 'The link to hand over; the token is in its #fragment, which browsers never send to a server',
  }),
  expires_at: Timestamp,
  mailed: Type.Boolean({ description: 'Whether it was also mailed (ENGRAM_SMTP_URL set and the server took it)' }),
};

const manager = (request: FastifyRequest): people.Manager => {
  const principal = organizationOf(request);
  return { userId: principal.userId!, role: principal.role! };
};

const membersRead = {
  auth: { accepts: ['bearer', 'api_key'], scope: 'members:read', capability: 'members.read', project: 'optional' },
} as const;
const membersWrite = { auth: { accepts: ['bearer'], scope: 'members:write', capability: 'members.manage' } } as const;

export const peopleRoutes: FastifyPluginAsyncTypebox<people.PeopleDeps & { publicRateLimit: number }> = async (
  app,
  { publicRateLimit, ...deps },
) => {
  const { database } = deps;
  const tags = ['members'];

  app.post(
    '/org/invitations',
    {
      config: membersWrite,
      schema: {
        tags,
        summary: 'Invite a person',
        description:
          'A single-use invitation link, valid 7 days (ENGRAM_INVITATION_TTL_HOURS), answered here and mailed to the address when ENGRAM_SMTP_URL is set. Only an owner may invite an owner. 409 when the address already belongs to a member.',
        body: Type.Object(
          { email: Type.String({ minLength: 3, maxLength: 320 }), role: Role },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Object({
            id: Type.Integer(),
            email: Type.String(),
            role: Type.String(),
            invited_by: Type.Union([Type.Integer(), Type.Null()]),
            created_at: Timestamp,
            ...Link,
          }),
        },
      },
    },
    async (request, reply) => {
      const invitation = await people.invite(deps, controlContextOf(request), manager(request), request.body);
      if (deps.mailer && !invitation.mailed)
        request.log.warn({ invitation_id: invitation.id }, 'invitation could not be mailed');
      return reply.status(201).send(invitation);
    },
  );

  app.get(
    '/org/invitations',
    {
      config: membersRead,
      schema: {
        tags,
        summary: 'List invitations',
        description:
          'Newest first, with their status (pending, accepted, expired, revoked); `status` narrows to one. Tokens are never shown again.',
        querystring: Type.Object(
          { ...PageQuery.properties, status: Type.Optional(InvitationStatus) },
          { additionalProperties: false },
        ),
        response: { 200: PageOf(Invitation) },
      },
    },
    async (request) => people.listInvitations(database.db, organizationOf(request).organizationId, request.query),
  );

  app.delete(
    '/org/invitations/:invitation_id',
    {
      config: membersWrite,
      schema: {
        tags,
        summary: 'Revoke an invitation',
        description:
          'Its link stops working at once. Only a pending invitation can be revoked (409 once accepted, expired or revoked, naming which); only an owner may revoke an invitation to be owner.',
        params: Type.Object({ invitation_id: Type.Integer({ minimum: 1 }) }),
        response: { 200: Invitation },
      },
    },
    async (request) =>
      people.revokeInvitation(database, controlContextOf(request), manager(request), request.params.invitation_id),
  );

  app.post(
    '/invitations/accept',
    {
      config: { rateLimit: { max: publicRateLimit } },
      schema: {
        tags,
        summary: 'Accept an invitation',
        description:
          "Public: the token proves the invitation. When the invited address has no account, `password` becomes its password (rules in docs/api.md); when it has one, `password` must be that account's password. 404 when the token is unknown, used or expired.",
        body: Type.Object(
          {
            token: Type.String({ minLength: 1, maxLength: 256 }),
            password: Password("New password, or the existing account's"),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            organization_id: Type.String(),
            user_id: Type.Integer(),
            email: Type.String(),
            role: Type.String(),
            created_account: Type.Boolean(),
          }),
        },
      },
    },
    async (request) => people.acceptInvitation(deps, request.body, request.id),
  );

  app.get(
    '/org/members',
    {
      config: membersRead,
      schema: {
        tags,
        summary: 'List members',
        description: 'Oldest membership first, with role and last sign-in.',
        querystring: PageQuery,
        response: { 200: PageOf(Member) },
      },
    },
    async (request) => people.listMembers(database.db, organizationOf(request).organizationId, request.query),
  );

  app.get(
    '/org/members/:user_id',
    {
      config: membersRead,
      schema: { tags, summary: 'Read a member', params: UserParams, response: { 200: Member } },
    },
    async (request) => people.getMember(database.db, organizationOf(request).organizationId, request.params.user_id),
  );

  app.patch(
    '/org/members/:user_id',
    {
      config: membersWrite,
      schema: {
        tags,
        summary: "Change a member's role",
        description:
          'Only an owner may make someone owner or change an owner. The last owner cannot be demoted (409); neither can a member whose role changed since this request read it (409, read it again).',
        params: UserParams,
        body: Type.Object({ role: Role }, { additionalProperties: false }),
        response: { 200: Member },
      },
    },
    async (request) =>
      people.changeRole(
        database,
        controlContextOf(request),
        manager(request),
        request.params.user_id,
        request.body.role,
      ),
  );

  app.delete(
    '/org/members/:user_id',
    {
      config: membersWrite,
      schema: {
        tags,
        summary: 'Remove a member',
        description:
          'Their sessions end at once. Only an owner may remove an owner; the last owner cannot be removed (409), nor a member whose role changed since this request read it (409, read it again).',
        params: UserParams,
        response: {
          200: Type.Object({ user_id: Type.Integer(), removed_at: Timestamp, sessions_ended: Type.Integer() }),
        },
      },
    },
    async (request) =>
      people.removeMember(database, controlContextOf(request), manager(request), request.params.user_id),
  );

  app.post(
    '/org/members/:user_id/password-reset',
    {
      config: membersWrite,
      schema: {
        tags,
        summary: 'Issue a password-reset link',
        description:
          "A single-use link, valid 1 hour (ENGRAM_PASSWORD_RESET_TTL_MINUTES), answered here and mailed to the member when ENGRAM_SMTP_URL is set. Only an owner may reset an owner's password.",
        params: UserParams,
        response: { 201: Type.Object({ user_id: Type.Integer(), ...Link }) },
      },
    },
    async (request, reply) => {
      const issued = await people.issuePasswordReset(
        deps,
        controlContextOf(request),
        manager(request),
        request.params.user_id,
      );
      if (deps.mailer && !issued.mailed)
        request.log.warn({ user_id: issued.user_id }, 'password-reset link could not be mailed');
      return reply.status(201).send(issued);
    },
  );

  app.post(
    '/auth/password',
    {
      config: { auth: { accepts: ['bearer'], scope: 'account:write' } },
      schema: {
        tags: ['auth'],
        summary: 'Change your password',
        description:
          'Needs the current password; the new one follows the password rules (docs/api.md). Every other session of yours ends; this one stays.',
        body: Type.Object(
          { current_password: Password('Your current password'), new_password: Password('The new password') },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ sessions_ended: Type.Integer({ description: 'Your other sessions, now ended' }) }),
        },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return people.changeOwnPassword(
        database,
        { userId: principal.userId!, sessionId: principal.sessionId! },
        request.body,
        request.id,
      );
    },
  );

  app.post(
    '/auth/password/reset',
    {
      config: { rateLimit: { max: publicRateLimit } },
      schema: {
        tags: ['auth'],
        summary: 'Set a password with a reset link',
        description:
          'Public: spends the token of a password-reset link. Every session of the account ends. 404 when the token is unknown, used or expired.',
        body: Type.Object(
          { token: Type.String({ minLength: 1, maxLength: 256 }), new_password: Password('The new password') },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ user_id: Type.Integer(), sessions_ended: Type.Integer() }) },
      },
    },
    async (request) => people.resetPassword(database, request.body, request.id),
  );
};
