import { type FormEvent, useState } from 'react';
import { type Scope, type Session, callOptions, can } from '../session.js';
import { Status, useAction, useLoad, when } from '../ui.js';

const ROLES = ['viewer', 'member', 'admin', 'owner'] as const;

/** The organization's members and invitations; owners and admins invite (the link shown once) and revoke. */
export function MembersPage({ session, scope }: { session: Session; scope: Scope }) {
  const { control } = session;
  const members = useLoad(() => control.members.list({ limit: 100 }, callOptions(scope)), [scope.organizationId]);
  const manage = can(scope, 'members.manage');
  const invitations = useLoad(
    async () =>
      manage ? control.members.invitations({ status: 'pending', limit: 100 }, callOptions(scope)) : undefined,
    [scope.organizationId, manage],
  );
  const action = useAction();
  const [link, setLink] = useState<string>();
  const invite = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const role = String(form.get('role')) as (typeof ROLES)[number];
    void action.run(async () => {
      const created = await control.members.invite({ email: String(form.get('email')), role }, callOptions(scope));
      setLink(created.url);
      invitations.reload();
    });
  };
  return (
    <>
      <Status loading={members.loading} error={members.error} empty={members.data?.items.length === 0}>
        <table aria-label="Members">
          <thead>
            <tr>
              <th>E-mail</th>
              <th>Role</th>
              <th>Joined</th>
              <th>Last sign-in</th>
            </tr>
          </thead>
          <tbody>
            {members.data?.items.map((m) => (
              <tr key={m.user_id}>
                <td>{m.email}</td>
                <td>{m.role}</td>
                <td>{when(m.joined_at)}</td>
                <td>{when(m.last_sign_in_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Status>
      {manage && (
        <>
          <h2>Invitations</h2>
          <form onSubmit={invite} aria-label="Invite a member">
            <label>
              E-mail to invite <input name="email" type="email" required />
            </label>
            <label>
              Role{' '}
              <select name="role" defaultValue="member">
                {ROLES.map((r) => (
                  <option key={r}>{r}</option>
                ))}
              </select>
            </label>
            <button type="submit" disabled={action.busy}>
              Invite
            </button>
          </form>
          {action.error && (
            <p role="alert" className="error">
              {action.error}
            </p>
          )}
          {link && (
            <section className="panel" aria-label="Invitation link">
              <p>Hand this link to the person invited; it is shown once and works once.</p>
              <code data-testid="invitation-link">{link}</code>{' '}
              <button type="button" onClick={() => setLink(undefined)}>
                I have copied it
              </button>
            </section>
          )}
          <Status loading={invitations.loading} error={invitations.error} empty={invitations.data?.items.length === 0}>
            <table aria-label="Pending invitations">
              <thead>
                <tr>
                  <th>E-mail</th>
                  <th>Role</th>
                  <th>Expires</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {invitations.data?.items.map((i) => (
                  <tr key={i.id}>
                    <td>{i.email}</td>
                    <td>{i.role}</td>
                    <td>{when(i.expires_at)}</td>
                    <td>
                      <button
                        type="button"
                        className="danger"
                        disabled={action.busy}
                        onClick={() =>
                          action
                            .run(() => control.members.revokeInvitation(i.id, callOptions(scope)))
                            .then((ok) => ok && invitations.reload())
                        }
                      >
                        Revoke {i.email}
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Status>
        </>
      )}
    </>
  );
}
