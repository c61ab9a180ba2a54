import { type FormEvent, useState } from 'react';
import { type Scope, type Session, callOptions, can } from '../session.js';
import { Status, useAction, useLoad, when } from '../ui.js';

const SCOPES = ['memories:read', 'memories:write'];

export function KeysPage({ session, scope }: { session: Session; scope: Scope }) {
  const { control } = session;
  const keys = useLoad(() => control.keys.list({ limit: 100 }, callOptions(scope)), [scope.organizationId]);
  const projects = useAction();
  const action = useAction();
  const [secret, setSecret] = useState<string>();
  const manage = can(scope, 'keys.manage');
  const create = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    void action.run(async () => {
      const created = await control.keys.create(
        { name: String(form.get('name')), project_id: String(form.get('project')), scopes: SCOPES },
        callOptions(scope),
      );
      setSecret((created as { key: string }).key);
      keys.reload();
    });
  };
  const createProject = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const name = String(new FormData(event.currentTarget).get('projectName'));
    void projects.run(() =>
      control.projects
        .create({ name }, callOptions(scope))
        .then(() => window.dispatchEvent(new Event('engram:projects'))),
    );
  };
  return (
    <>
      {can(scope, 'projects.manage') && (
        <form onSubmit={createProject} aria-label="Create a project">
          <label>
            New project <input name="projectName" required />
          </label>
          <button type="submit" disabled={projects.busy}>
            Create project
          </button>
          {projects.error && (
            <span role="alert" className="error">
              {projects.error}
            </span>
          )}
        </form>
      )}
      {manage && scope.projectId && (
        <form onSubmit={create} aria-label="Create an API key">
          <input type="hidden" name="project" value={scope.projectId} />
          <label>
            Key name <input name="name" required />
          </label>
          <button type="submit" disabled={action.busy}>
            Create key
          </button>
        </form>
      )}
      {secret && (
        <div className="panel" role="status">
          <p>The new key, shown this once: copy it now.</p>
          <p className="secret" data-testid="secret">
            {secret}
          </p>
          <button type="button" onClick={() => setSecret(undefined)}>
            I have copied it
          </button>
        </div>
      )}
      {action.error && (
        <p role="alert" className="error">
          {action.error}
        </p>
      )}
      <Status loading={keys.loading} error={keys.error} empty={keys.data?.items.length === 0}>
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Prefix</th>
              <th>Project</th>
              <th>Scopes</th>
              <th>Status</th>
              <th>Last used</th>
              <th>
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.data?.items.map((k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td>
                  <code>{k.prefix}</code>
                </td>
                <td>{k.project_id ?? 'any'}</td>
                <td>{k.scopes.join(' ')}</td>
                <td>{k.status}</td>
                <td>{when(k.last_used_at)}</td>
                <td>
                  {manage && k.status === 'active' && (
                    <button
                      type="button"
                      className="danger"
                      onClick={() =>
                        window.confirm(`Revoke key ${k.name}?`) &&
                        action.run(() => control.keys.revoke(k.id, callOptions(scope)).then(keys.reload))
                      }
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Status>
    </>
  );
}
