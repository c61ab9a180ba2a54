import { type FormEvent, useEffect, useState } from 'react';
import { type Scope, type Session, messageOf, signIn } from './session.js';
import { Status, useLoad } from './ui.js';
import type { ServiceClient } from '@engram/client';
import { ServiceKeyGate } from './service-key.js';
import { MemoriesPage } from './pages/Memories.js';
import { KnowledgePage } from './pages/Knowledge.js';
import { MembersPage } from './pages/Members.js';
import { KeysPage } from './pages/Keys.js';
import { WebhooksPage } from './pages/Webhooks.js';
import { ExportsPage } from './pages/Exports.js';
import { ConnectorsPage } from './pages/Connectors.js';
import { AuditPage } from './pages/Audit.js';
import { UsagePage } from './pages/Usage.js';

const PAGES = [
  'Memories',
  'Knowledge',
  'Webhooks',
  'Connectors',
  'Exports',
  'Keys',
  'Members',
  'Audit log',
  'Usage',
] as const;
type Page = (typeof PAGES)[number];

export function App() {
  const [session, setSession] = useState<Session>();
  if (!session) return <SignIn onSignedIn={setSession} />;
  return <Signed session={session} onSignOut={() => setSession(undefined)} />;
}

function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await signIn(String(form.get('email')), String(form.get('password'))));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="signin">
      <h1>Engram console</h1>
      <form onSubmit={submit} aria-label="Sign in">
        <label>
          E-mail <input name="email" type="email" autoComplete="username" required />
        </label>
        <label>
          Password <input name="password" type="password" autoComplete="current-password" required />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        {error && (
          <p role="alert" className="error">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

function Signed({ session, onSignOut }: { session: Session; onSignOut: () => void }) {
  const { control } = session;
  const orgs = useLoad(() => control.organizations.list({ limit: 100 }), []);
  const [organizationId, setOrganizationId] = useState<string>();
  const [projectId, setProjectId] = useState<string>();
  const [page, setPage] = useState<Page>('Memories');
  // The data-plane pages share one key a project and the end user last picked.
  const [services, setServices] = useState<Record<string, ServiceClient>>({});
  const [endUser, setEndUser] = useState<string>();
  const organizations = orgs.data?.items ?? [];
  const organization =
    organizations.find((o) => String(o.id) === organizationId) ??
    organizations.find((o) => o.current) ??
    organizations[0];
  const [projectsTick, setProjectsTick] = useState(0);
  useEffect(() => {
    const reload = () => setProjectsTick((t) => t + 1);
    window.addEventListener('engram:projects', reload);
    return () => window.removeEventListener('engram:projects', reload);
  }, []);
  const projects = useLoad(
    async () =>
      organization ? control.projects.list({ limit: 100 }, { organizationId: String(organization.id) }) : undefined,
    [organization?.id, projectsTick],
  );
  const projectList = projects.data?.items ?? [];
  const project = projectList.find((p) => String(p.id) === projectId) ?? projectList[0];
  useEffect(() => setProjectId(undefined), [organization?.id]);
  const scope: Scope | undefined = organization && {
    organizationId: String(organization.id),
    projectId: project ? String(project.id) : undefined,
    role: organization.role,
  };
  const signOut = async () => {
    await control.auth.logout().catch(() => undefined);
    onSignOut();
  };
  return (
    <>
      <header>
        <strong>Engram</strong>
        <label>
          Organization{' '}
          <select
            value={organization ? String(organization.id) : ''}
            onChange={(e) => setOrganizationId(e.target.value)}
          >
            {organizations.map((o) => (
              <option key={o.id} value={String(o.id)}>
                {o.name} ({o.role})
              </option>
            ))}
          </select>
        </label>
        <label>
          Project{' '}
          <select value={project ? String(project.id) : ''} onChange={(e) => setProjectId(e.target.value)}>
            {projectList.map((p) => (
              <option key={p.id} value={String(p.id)}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <span className="muted">
          {session.email}
          {scope ? ` · ${scope.role}` : ''}
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <nav aria-label="Pages">
        {PAGES.map((name) => (
          <button
            key={name}
            type="button"
            aria-current={page === name ? 'page' : undefined}
            onClick={() => setPage(name)}
          >
            {name}
          </button>
        ))}
      </nav>
      <main>
        <Status loading={orgs.loading || projects.loading} error={orgs.error ?? projects.error}>
          {scope && (
            <section aria-labelledby="page-title" key={`${scope.organizationId}/${scope.projectId}`}>
              <h1 id="page-title">{page}</h1>
              {(page === 'Memories' || page === 'Knowledge') && (
                <ServiceKeyGate
                  session={session}
                  scope={scope}
                  service={scope.projectId ? services[scope.projectId] : undefined}
                  onService={(service) => setServices((all) => ({ ...all, [scope.projectId!]: service }))}
                >
                  {page === 'Memories' && (
                    <MemoriesPage
                      service={services[scope.projectId!]!}
                      endUser={endUser}
                      onEndUser={setEndUser}
                      scope={scope}
                    />
                  )}
                  {page === 'Knowledge' && (
                    <KnowledgePage
                      service={services[scope.projectId!]!}
                      endUser={endUser}
                      onEndUser={setEndUser}
                      scope={scope}
                    />
                  )}
                </ServiceKeyGate>
              )}
              {page === 'Members' && <MembersPage session={session} scope={scope} />}
              {page === 'Keys' && <KeysPage session={session} scope={scope} />}
              {page === 'Webhooks' && <WebhooksPage session={session} scope={scope} />}
              {page === 'Connectors' && <ConnectorsPage session={session} scope={scope} />}
              {page === 'Exports' && <ExportsPage session={session} scope={scope} />}
              {page === 'Audit log' && <AuditPage session={session} scope={scope} />}
              {page === 'Usage' && <UsagePage session={session} scope={scope} />}
            </section>
          )}
        </Status>
      </main>
    </>
  );
}
