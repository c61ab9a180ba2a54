import type { FormEvent, ReactNode } from 'react';
import type { ServiceClient } from '@engram/client';
import { type Scope, type Session, callOptions, can, serviceFor } from './session.js';
import { useAction } from './ui.js';

const CONSOLE_KEY_SECONDS = 3600;

/**
 * The data plane (memories, knowledge) takes an API key, so the pages that read it first get one: a
 * short-lived key the console creates for the project (members who may manage keys) or one the person
 * pastes (docs/api.md, "The console"). One key a project, shared by those pages, held in memory only.
 */
export function ServiceKeyGate({
  session,
  scope,
  service,
  onService,
  children,
}: {
  session: Session;
  scope: Scope;
  service: ServiceClient | undefined;
  onService: (service: ServiceClient) => void;
  children: ReactNode;
}) {
  const key = useAction();
  if (!scope.projectId)
    return <p className="muted">Create a project first (Keys page shows how to make one with the API).</p>;
  if (service) return <>{children}</>;
  const temporary = () =>
    key.run(async () => {
      const created = await session.control.keys.create(
        {
          name: `console ${session.email}`,
          project_id: scope.projectId!,
          scopes: ['memories:read', 'memories:write'],
          expires_at: new Date(Date.now() + CONSOLE_KEY_SECONDS * 1000).toISOString(),
        },
        callOptions(scope),
      );
      onService(serviceFor((created as { key: string }).key, scope.projectId));
    });
  const paste = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    onService(serviceFor(String(new FormData(event.currentTarget).get('apiKey')), scope.projectId));
  };
  return (
    <div className="panel">
      <p>This page reads with an API key of this project. It stays in this tab's memory only.</p>
      {can(scope, 'keys.manage') && (
        <button type="button" onClick={temporary} disabled={key.busy}>
          Use a temporary console key (1 hour)
        </button>
      )}
      <form onSubmit={paste} aria-label="Use an API key">
        <label>
          API key <input name="apiKey" type="password" autoComplete="off" required />
        </label>
        <button type="submit">Use this key</button>
      </form>
      {key.error && (
        <p role="alert" className="error">
          {key.error}
        </p>
      )}
    </div>
  );
}

/** The end user a data-plane page shows (the data plane is per end user). */
export function EndUserPicker({
  endUser,
  onPick,
  label,
}: {
  endUser: string | undefined;
  onPick: (endUser: string) => void;
  label: string;
}) {
  return (
    <form
      aria-label="Pick an end user"
      onSubmit={(e) => {
        e.preventDefault();
        onPick(String(new FormData(e.currentTarget).get('endUser')).trim());
      }}
    >
      <label>
        End user <input name="endUser" defaultValue={endUser} required />
      </label>
      <button type="submit">{label}</button>
    </form>
  );
}
