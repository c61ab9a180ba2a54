import { type FormEvent, useEffect, useRef, useState } from 'react';
import { type Scope, type Session, callOptions, can } from '../session.js';
import { Status, useAction, useLoad, when } from '../ui.js';
import { CONSENT_CHANNEL, type ConsentAnswer } from '../oauth-return.js';

/** Polled this often while a sync runs, so its progress moves on screen. */
const POLL_MS = 1000;

type Provider = {
  name: string;
  title: string;
  description: string;
  auth_kind: string;
  config_schema: unknown;
  credentials_schema: unknown;
  capabilities: string[];
};
type JsonSchema = {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  default?: unknown;
  items?: JsonSchema;
};

/** A starting value for a provider's configuration: its required fields, each empty or at its default. */
export function templateOf(schema: unknown): Record<string, unknown> {
  const s = (schema ?? {}) as JsonSchema;
  const template: Record<string, unknown> = {};
  for (const name of s.required ?? []) {
    const field = s.properties?.[name] ?? {};
    template[name] =
      field.default !== undefined
        ? field.default
        : field.type === 'array'
          ? []
          : field.type === 'boolean'
            ? false
            : field.type === 'integer' || field.type === 'number'
              ? 0
              : field.type === 'object'
                ? {}
                : '';
  }
  return template;
}

function parseJson(text: string, field: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new Error(`${field} must be a JSON object`);
}

/** Connections of the project: add one, give consent (OAuth providers), sync it with live progress, see what it synced. */
export function ConnectorsPage({ session, scope }: { session: Session; scope: Scope }) {
  const { control } = session;
  const options = callOptions(scope);
  const providers = useLoad(() => control.call('connectors.providers', {}, options), [scope.projectId]);
  const connections = useLoad(
    () => control.call('connectors.list', { query: { limit: 100 } }, options),
    [scope.projectId],
  );
  const [open, setOpen] = useState<number>();
  const manage = can(scope, 'connectors.manage');
  if (!scope.projectId) return <p className="muted">No project in this organization yet.</p>;
  const catalog = (providers.data?.items ?? []) as Provider[];
  return (
    <>
      {manage && catalog.length > 0 && (
        <NewConnection
          session={session}
          scope={scope}
          providers={catalog}
          onCreated={(id) => {
            connections.reload();
            setOpen(id);
          }}
        />
      )}
      <Status
        loading={connections.loading && !connections.data}
        error={connections.error ?? providers.error}
        empty={connections.data?.items.length === 0}
      >
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Provider</th>
              <th>State</th>
              <th>Last sync</th>
              <th>End user</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {connections.data?.items.map((c) => (
              <tr key={c.id} data-testid={`connection-${c.id}`}>
                <td>{c.name}</td>
                <td>{catalog.find((p) => p.name === c.provider)?.title ?? c.provider}</td>
                <td>
                  {c.state}
                  {c.state_reason ? <span className="muted"> ({c.state_reason})</span> : null}
                </td>
                <td>
                  {c.last_sync
                    ? `${c.last_sync.status} · ${when(c.last_sync.finished_at ?? c.last_sync.created_at)}`
                    : '—'}
                </td>
                <td>{c.end_user_id}</td>
                <td>
                  <button type="button" onClick={() => setOpen(c.id)}>
                    Open {c.name}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Status>
      {open !== undefined && (
        <ConnectionPanel
          key={open}
          session={session}
          scope={scope}
          id={open}
          providers={catalog}
          onChanged={connections.reload}
          onRemoved={() => {
            setOpen(undefined);
            connections.reload();
          }}
        />
      )}
    </>
  );
}

function NewConnection({
  session,
  scope,
  providers,
  onCreated,
}: {
  session: Session;
  scope: Scope;
  providers: Provider[];
  onCreated: (id: number) => void;
}) {
  const [providerName, setProviderName] = useState(providers[0]!.name);
  const provider = providers.find((p) => p.name === providerName) ?? providers[0]!;
  const [config, setConfig] = useState(() => JSON.stringify(templateOf(provider.config_schema), null, 2));
  const action = useAction();
  const pick = (name: string) => {
    setProviderName(name);
    setConfig(JSON.stringify(templateOf(providers.find((p) => p.name === name)?.config_schema), null, 2));
  };
  const create = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const endUser = String(form.get('endUser') ?? '').trim();
    const credentials = String(form.get('credentials') ?? '').trim();
    void action.run(async () => {
      const body = {
        provider: provider.name,
        name: String(form.get('name')),
        config: parseJson(config, 'Configuration'),
        ...(endUser ? { end_user_id: endUser } : {}),
        ...(credentials ? { credentials: parseJson(credentials, 'Credentials') } : {}),
      };
      onCreated((await session.control.call('connectors.create', { body }, callOptions(scope))).id);
    });
  };
  const takesCredentials =
    provider.credentials_schema !== null && provider.auth_kind !== 'oauth2' && provider.auth_kind !== 'none';
  return (
    <form onSubmit={create} aria-label="Add a connection" className="panel stacked">
      <label>
        Provider{' '}
        <select value={provider.name} onChange={(e) => pick(e.target.value)}>
          {providers.map((p) => (
            <option key={p.name} value={p.name}>
              {p.title}
            </option>
          ))}
        </select>
      </label>
      <p className="muted">
        {provider.description}
        {provider.auth_kind === 'oauth2' ? ' You give consent at the provider after adding it.' : ''}
      </p>
      <label>
        Name <input name="name" required maxLength={200} />
      </label>
      <label>
        End user (empty: connector-{provider.name}) <input name="endUser" maxLength={256} />
      </label>
      <label>
        Configuration (JSON){' '}
        <textarea name="config" rows={5} cols={60} value={config} onChange={(e) => setConfig(e.target.value)} />
      </label>
      {takesCredentials && (
        <label>
          Credentials (JSON, stored encrypted, never shown again) <textarea name="credentials" rows={3} cols={60} />
        </label>
      )}
      <button type="submit" disabled={action.busy}>
        Add connection
      </button>
      {action.error && (
        <p role="alert" className="error">
          {action.error}
        </p>
      )}
    </form>
  );
}

function ConnectionPanel({
  session,
  scope,
  id,
  providers,
  onChanged,
  onRemoved,
}: {
  session: Session;
  scope: Scope;
  id: number;
  providers: Provider[];
  onChanged: () => void;
  onRemoved: () => void;
}) {
  const { control } = session;
  const options = callOptions(scope);
  const path = { connection_id: id };
  const data = useLoad(async () => {
    const [connection, syncs, objects] = await Promise.all([
      control.call('connectors.get', { path }, options),
      control.call('connectors.syncs', { path, query: { limit: 10 } }, options),
      control.call('connectors.objects', { path, query: { limit: 50 } }, options),
    ]);
    return { connection, syncs, objects };
  }, [id]);
  const action = useAction();
  const [notice, setNotice] = useState<string>();
  const [consentUrl, setConsentUrl] = useState<string>();
  const [confirming, setConfirming] = useState(false);
  const pendingState = useRef<string | undefined>(undefined);
  const manage = can(scope, 'connectors.manage');
  const connection = data.data?.connection;
  const provider = providers.find((p) => p.name === connection?.provider);
  const running = data.data?.syncs.items.some((s) => s.status === 'queued' || s.status === 'running');

  const wasRunning = useRef(false);
  useEffect(() => {
    // The list above shows each connection's last sync: it is read again when one ends.
    if (wasRunning.current && !running) onChanged();
    wasRunning.current = Boolean(running);
    if (!running) return;
    const timer = setTimeout(data.reload, POLL_MS);
    return () => clearTimeout(timer);
  }, [running, data.data, data.reload, onChanged]);

  // The provider sends the consent window back to this server's callback page, which hands the code
  // and state to this tab (it holds the session) over a same-origin channel; this tab completes consent.
  useEffect(() => {
    const channel = new BroadcastChannel(CONSENT_CHANNEL);
    channel.onmessage = (event: MessageEvent<ConsentAnswer>) => {
      const answer = event.data;
      if (!answer || answer.state !== pendingState.current) return;
      pendingState.current = undefined;
      setConsentUrl(undefined);
      const body = answer.code
        ? { state: answer.state, code: answer.code }
        : { state: answer.state, error: answer.error ?? 'access_denied' };
      void action
        .run(async () => {
          const after = await control.call('connectors.completeAuthorization', { path, body }, options);
          setNotice(
            after.state === 'active'
              ? 'Consent given: the connection is active.'
              : `Consent not completed: ${after.state_reason ?? after.state}.`,
          );
        })
        .then(() => {
          data.reload();
          onChanged();
        });
    };
    return () => channel.close();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id]);

  const act = (work: () => Promise<unknown>, done: string) =>
    action.run(work).then((ok) => {
      if (ok) setNotice(done);
      data.reload();
      onChanged();
    });
  const consent = () =>
    void action.run(async () => {
      const grant = await control.call('connectors.authorize', { path }, options);
      pendingState.current = grant.state;
      setConsentUrl(grant.authorization_url);
      // A popup keeps this tab, and the session it holds in memory, alive; if it is blocked the link below opens it.
      window.open(grant.authorization_url, 'engram-consent', 'popup,width=640,height=760');
    });
  const remove = () =>
    act(async () => {
      await control.call('connectors.remove', { path }, options);
      onRemoved();
    }, 'Connection removed.');

  return (
    <section className="panel" aria-label={`Connection ${id}`}>
      <Status loading={data.loading && !data.data} error={data.error}>
        {connection && data.data && (
          <>
            <h2>
              {connection.name}{' '}
              <span className="muted">
                ({provider?.title ?? connection.provider}, {connection.state})
              </span>
            </h2>
            {connection.state_reason && <p className="muted">{connection.state_reason}</p>}
            <p>
              Memories go to end user <strong>{connection.end_user_id}</strong>.{' '}
              {connection.schedule_minutes
                ? `Synced every ${connection.schedule_minutes} minutes; next ${when(connection.next_sync_at)}.`
                : 'Synced on demand.'}
            </p>
            {manage && (
              <p>
                {(connection.state === 'needs_consent' || connection.state === 'needs_repair') && (
                  <button type="button" onClick={consent} disabled={action.busy}>
                    Give consent at {provider?.title ?? connection.provider}
                  </button>
                )}{' '}
                {connection.state !== 'needs_consent' && connection.state !== 'needs_repair' && !running && (
                  <button
                    type="button"
                    onClick={() => act(() => control.call('connectors.sync', { path }, options), 'Sync started.')}
                    disabled={action.busy}
                  >
                    Sync now
                  </button>
                )}{' '}
                {running && data.data.syncs.items[0] && (
                  <button
                    type="button"
                    onClick={() =>
                      act(
                        () =>
                          control.call(
                            'connectors.cancelSync',
                            { path: { sync_id: data.data!.syncs.items[0]!.id } },
                            options,
                          ),
                        'Cancel requested.',
                      )
                    }
                  >
                    Cancel sync
                  </button>
                )}{' '}
                {!confirming && (
                  <button type="button" className="danger" onClick={() => setConfirming(true)}>
                    Remove…
                  </button>
                )}
              </p>
            )}
            {confirming && (
              <div role="alertdialog" aria-label="Confirm removal">
                <p>Remove {connection.name} and forget every memory it synced?</p>
                <button type="button" className="danger" onClick={remove}>
                  Remove and forget
                </button>{' '}
                <button type="button" onClick={() => setConfirming(false)}>
                  Keep it
                </button>
              </div>
            )}
            {consentUrl && (
              <p role="status">
                Waiting for consent in the provider's window.{' '}
                <a href={consentUrl} target="engram-consent" rel="opener">
                  Open it again
                </a>
              </p>
            )}
            {notice && <p role="status">{notice}</p>}
            {action.error && (
              <p role="alert" className="error">
                {action.error}
              </p>
            )}
            <h3>Syncs</h3>
            {data.data.syncs.items.length === 0 ? (
              <p className="muted">No sync yet.</p>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th>Id</th>
                    <th>Trigger</th>
                    <th>Status</th>
                    <th>Progress</th>
                    <th>Started</th>
                    <th>Finished</th>
                  </tr>
                </thead>
                <tbody>
                  {data.data.syncs.items.map((s) => (
                    <tr key={s.id} data-testid={`sync-${s.id}`}>
                      <td>{s.id}</td>
                      <td>{s.trigger}</td>
                      <td>
                        {s.status}
                        {s.error ? <span className="error"> ({s.error})</span> : null}
                      </td>
                      <td aria-label={`Sync ${s.id} progress`}>
                        {s.progress.seen} seen: {s.progress.created} new, {s.progress.updated} changed,{' '}
                        {s.progress.deleted} removed, {s.progress.unchanged} unchanged, {s.progress.failed} failed
                      </td>
                      <td>{when(s.started_at)}</td>
                      <td>{when(s.finished_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <h3>Synced objects ({data.data.objects.total})</h3>
            {data.data.objects.items.length === 0 ? (
              <p className="muted">Nothing synced yet.</p>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th>Object</th>
                    <th>Status</th>
                    <th>Memories</th>
                    <th>Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {data.data.objects.items.map((o) => (
                    <tr key={o.source_id} data-testid="synced-object">
                      <td>
                        {o.url ? (
                          <a href={o.url} target="_blank" rel="noreferrer noopener">
                            {o.title ?? o.source_id}
                          </a>
                        ) : (
                          (o.title ?? o.source_id)
                        )}
                      </td>
                      <td>
                        {o.status}
                        {o.error ? <span className="error"> ({o.error})</span> : null}
                      </td>
                      <td>{o.memory_ids.length}</td>
                      <td>{when(o.updated_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </Status>
    </section>
  );
}
