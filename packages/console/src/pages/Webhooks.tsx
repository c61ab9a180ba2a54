import { type FormEvent, useState } from 'react';
import { type Scope, type Session, callOptions, can } from '../session.js';
import { Status, useAction, useLoad, when } from '../ui.js';

export function WebhooksPage({ session, scope }: { session: Session; scope: Scope }) {
  const { control } = session;
  const endpoints = useLoad(
    () => control.call('webhooks.list', { query: { limit: 100 } }, callOptions(scope)),
    [scope.organizationId, scope.projectId],
  );
  const [open, setOpen] = useState<number>();
  const [secret, setSecret] = useState<string>();
  const action = useAction();
  const manage = can(scope, 'webhooks.manage');
  const create = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const events = String(form.get('events'))
      .split(/[\s,]+/)
      .filter(Boolean);
    void action.run(async () => {
      const created = await control.call(
        'webhooks.create',
        { body: { name: String(form.get('name')), url: String(form.get('url')), events } },
        callOptions(scope),
      );
      setSecret(created.secret);
      endpoints.reload();
    });
  };
  return (
    <>
      {manage && (
        <form onSubmit={create} aria-label="Add a webhook endpoint">
          <label>
            Name <input name="name" required />
          </label>
          <label>
            URL <input name="url" type="url" required />
          </label>
          <label>
            Events <input name="events" defaultValue="memory.created" required />
          </label>
          <button type="submit" disabled={action.busy}>
            Add endpoint
          </button>
        </form>
      )}
      {secret && <SecretOnce secret={secret} onDone={() => setSecret(undefined)} />}
      {action.error && (
        <p role="alert" className="error">
          {action.error}
        </p>
      )}
      <Status loading={endpoints.loading} error={endpoints.error} empty={endpoints.data?.items.length === 0}>
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>URL</th>
              <th>Events</th>
              <th>State</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {endpoints.data?.items.map((e) => (
              <tr key={e.id}>
                <td>{e.name}</td>
                <td>{e.url}</td>
                <td>{e.events.join(', ')}</td>
                <td>{e.state}</td>
                <td>
                  <button type="button" onClick={() => setOpen(e.id)}>
                    Open {e.name}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Status>
      {open !== undefined && (
        <Endpoint key={open} session={session} scope={scope} id={open} onChanged={endpoints.reload} />
      )}
    </>
  );
}

function SecretOnce({ secret, onDone }: { secret: string; onDone: () => void }) {
  return (
    <div className="panel" role="status">
      <p>The signing secret, shown this once: copy it now.</p>
      <p className="secret" data-testid="secret">
        {secret}
      </p>
      <button type="button" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}

function Endpoint({
  session,
  scope,
  id,
  onChanged,
}: {
  session: Session;
  scope: Scope;
  id: number;
  onChanged: () => void;
}) {
  const { control } = session;
  const options = callOptions(scope);
  const path = { endpoint_id: id };
  const data = useLoad(async () => {
    const [endpoint, health, deliveries] = await Promise.all([
      control.call('webhooks.get', { path }, options),
      control.call('webhooks.health', { path }, options),
      control.call('webhooks.deliveries', { path, query: { limit: 50 } }, options),
    ]);
    return { endpoint, health, deliveries };
  }, [id]);
  const [attempts, setAttempts] = useState<number>();
  const [secret, setSecret] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const action = useAction();
  const manage = can(scope, 'webhooks.manage');
  const act = (work: () => Promise<unknown>, done: string) =>
    action.run(work).then((ok) => {
      if (ok) setNotice(done);
      data.reload();
      onChanged();
    });
  return (
    <section className="panel" aria-label={`Endpoint ${id}`}>
      <Status loading={data.loading && !data.data} error={data.error}>
        {data.data && (
          <>
            <h2>
              {data.data.endpoint.name} <span className="muted">({data.data.endpoint.state})</span>
            </h2>
            <p>
              Health: success rate (24 h){' '}
              {data.data.health.success_rate_24h === null
                ? '—'
                : `${Math.round((data.data.health.success_rate_24h ?? 0) * 100)}%`}
              , {data.data.health.attempts_24h} attempts, {data.data.health.consecutive_failures} consecutive failures,{' '}
              {data.data.health.pending_deliveries} pending.
            </p>
            {manage && (
              <p>
                {data.data.endpoint.state === 'paused' ? (
                  <button
                    type="button"
                    onClick={() => act(() => control.call('webhooks.resume', { path }, options), 'Resumed.')}
                  >
                    Resume
                  </button>
                ) : (
                  <button
                    type="button"
                    onClick={() => act(() => control.call('webhooks.pause', { path }, options), 'Paused.')}
                  >
                    Pause
                  </button>
                )}{' '}
                <button
                  type="button"
                  onClick={() =>
                    act(
                      async () => setSecret((await control.call('webhooks.rotateSecret', { path }, options)).secret),
                      'Secret rotated.',
                    )
                  }
                >
                  Rotate secret
                </button>{' '}
                <button
                  type="button"
                  onClick={() =>
                    act(
                      async () =>
                        setNotice(
                          `Replayed ${(await control.call('webhooks.replay', { path, body: { since: new Date(Date.now() - 86_400_000).toISOString() } }, options)).replayed} deliveries.`,
                        ),
                      'Replay queued.',
                    )
                  }
                >
                  Replay the last 24 hours
                </button>
              </p>
            )}
            {secret && <SecretOnce secret={secret} onDone={() => setSecret(undefined)} />}
            {notice && <p role="status">{notice}</p>}
            {action.error && (
              <p role="alert" className="error">
                {action.error}
              </p>
            )}
            <h3>Deliveries</h3>
            {data.data.deliveries.items.length === 0 ? (
              <p className="muted">No delivery yet.</p>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th>Id</th>
                    <th>Event</th>
                    <th>Status</th>
                    <th>Attempts</th>
                    <th>Next attempt</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {data.data.deliveries.items.map((d) => (
                    <tr key={d.id} data-testid={`delivery-${d.id}`}>
                      <td>{d.id}</td>
                      <td>{d.event_type}</td>
                      <td>{d.status}</td>
                      <td>
                        <button type="button" onClick={() => setAttempts(d.id)}>
                          {d.attempts} attempts
                        </button>
                      </td>
                      <td>{when(d.next_attempt_at)}</td>
                      <td>
                        {manage && d.status !== 'succeeded' && (
                          <button
                            type="button"
                            onClick={() =>
                              act(
                                () =>
                                  control.call(
                                    'webhooks.retryDelivery',
                                    { path: { endpoint_id: id, delivery_id: d.id } },
                                    options,
                                  ),
                                `Delivery ${d.id} retried.`,
                              )
                            }
                          >
                            Retry
                          </button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {attempts !== undefined && (
              <Attempts session={session} scope={scope} endpointId={id} deliveryId={attempts} />
            )}
          </>
        )}
      </Status>
    </section>
  );
}

function Attempts({
  session,
  scope,
  endpointId,
  deliveryId,
}: {
  session: Session;
  scope: Scope;
  endpointId: number;
  deliveryId: number;
}) {
  const delivery = useLoad(
    () =>
      session.control.call(
        'webhooks.delivery',
        { path: { endpoint_id: endpointId, delivery_id: deliveryId } },
        callOptions(scope),
      ),
    [deliveryId],
  );
  return (
    <Status loading={delivery.loading} error={delivery.error}>
      <h3>Attempts of delivery {deliveryId}</h3>
      <ol>
        {(delivery.data?.attempt_log ?? []).map((a) => (
          <li key={a.attempted_at}>
            {when(a.attempted_at)} · {JSON.stringify(a)}
          </li>
        ))}
      </ol>
    </Status>
  );
}
