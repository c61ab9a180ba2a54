import { type FormEvent, useMemo, useState } from 'react';
import type { ServiceClient } from '@engram/client';
import type { Scope } from '../session.js';
import { EndUserPicker } from '../service-key.js';
import { Status, useAction, useLoad, when } from '../ui.js';

const PAGE_SIZE = 20;

/** Memories of one end user: list with paging and a filter, search with each hit's explanation, one memory opened. */
export function MemoriesPage({
  service,
  endUser,
  onEndUser,
  scope,
}: {
  service: ServiceClient;
  endUser: string | undefined;
  onEndUser: (endUser: string) => void;
  scope: Scope;
}) {
  return (
    <>
      <EndUserPicker endUser={endUser} onPick={onEndUser} label="Show memories" />
      {endUser && <EndUserMemories key={endUser} service={service} endUser={endUser} scope={scope} />}
    </>
  );
}

type Memory = {
  id: number;
  text: string;
  tags: string[];
  source: string;
  created_at: string;
  session_id: string | null;
  importance: number;
};
type Hit = Memory & { score: number; explanation?: Record<string, number> };

function EndUserMemories({ service, endUser, scope }: { service: ServiceClient; endUser: string; scope: Scope }) {
  const options = { endUserId: endUser };
  const all = useLoad(() => service.call('memories.export', {}, options), [endUser]);
  const [filter, setFilter] = useState('');
  const [page, setPage] = useState(0);
  const [hits, setHits] = useState<{ query: string; items: Hit[] }>();
  const [open, setOpen] = useState<number>();
  const search = useAction();
  const memories = (all.data?.memories ?? []) as Memory[];
  const shown = useMemo(() => {
    const needle = filter.toLowerCase();
    return memories.filter(
      (m) =>
        !needle ||
        m.text.toLowerCase().includes(needle) ||
        m.tags.some((t) => t.toLowerCase() === needle) ||
        m.source.toLowerCase() === needle,
    );
  }, [memories, filter]);
  const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
  const runSearch = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const query = String(new FormData(event.currentTarget).get('query'));
    void search.run(async () => {
      const answer = await service.call('memories.query', { body: { query, k: 10, explain: true } }, options);
      setHits({ query, items: answer.memories as Hit[] });
    });
  };
  return (
    <>
      <form onSubmit={runSearch} aria-label="Search memories">
        <label>
          Search <input name="query" required />
        </label>
        <button type="submit" disabled={search.busy}>
          Search
        </button>
      </form>
      {search.error && (
        <p role="alert" className="error">
          {search.error}
        </p>
      )}
      {hits && (
        <section className="panel" aria-label="Search results">
          <h2>Results for “{hits.query}”</h2>
          {hits.items.length === 0 ? (
            <p className="muted">No memory matches.</p>
          ) : (
            <ol>
              {hits.items.map((hit) => (
                <li key={hit.id} data-testid="hit">
                  <button type="button" className="link" onClick={() => setOpen(hit.id)}>
                    {hit.text}
                  </button>{' '}
                  <span>score {hit.score.toFixed(3)}</span>
                  <Explanation explanation={hit.explanation ?? {}} />
                </li>
              ))}
            </ol>
          )}
        </section>
      )}
      {open !== undefined && (
        <MemoryDetail
          service={service}
          endUser={endUser}
          id={open}
          scope={scope}
          onClose={() => setOpen(undefined)}
          onForgotten={() => {
            setOpen(undefined);
            setHits(undefined);
            all.reload();
          }}
        />
      )}
      <h2>All memories of {endUser}</h2>
      <label>
        Filter (text, tag or source){' '}
        <input
          value={filter}
          onChange={(e) => {
            setFilter(e.target.value);
            setPage(0);
          }}
        />
      </label>
      <Status loading={all.loading} error={all.error} empty={shown.length === 0}>
        <table>
          <thead>
            <tr>
              <th>Id</th>
              <th>Text</th>
              <th>Tags</th>
              <th>Source</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {shown.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE).map((m) => (
              <tr key={m.id}>
                <td>{m.id}</td>
                <td>
                  <button type="button" className="link" onClick={() => setOpen(m.id)}>
                    {m.text}
                  </button>
                </td>
                <td>{m.tags.join(', ')}</td>
                <td>{m.source}</td>
                <td>{when(m.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <p>
          <button type="button" disabled={page === 0} onClick={() => setPage(page - 1)}>
            Previous
          </button>{' '}
          Page {page + 1} of {pages} ({shown.length} memories){' '}
          <button type="button" disabled={page + 1 >= pages} onClick={() => setPage(page + 1)}>
            Next
          </button>
        </p>
      </Status>
    </>
  );
}

/** The score is 1 - e^(-s); each feature's share of s, largest first. */
function Explanation({ explanation }: { explanation: Record<string, number> }) {
  const entries = Object.entries(explanation)
    .filter(([, v]) => v !== 0)
    .sort((a, b) => b[1] - a[1]);
  if (entries.length === 0) return null;
  const top = entries[0]![1];
  return (
    <table aria-label="Score explanation" className="explanation">
      <tbody>
        {entries.map(([feature, value]) => (
          <tr key={feature}>
            <th scope="row">{feature}</th>
            <td>{value.toFixed(3)}</td>
            <td>
              <span className="bar" style={{ width: `${Math.max(2, (value / top) * 120)}px` }} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function MemoryDetail({
  service,
  endUser,
  id,
  scope,
  onClose,
  onForgotten,
}: {
  service: ServiceClient;
  endUser: string;
  id: number;
  scope: Scope;
  onClose: () => void;
  onForgotten: () => void;
}) {
  const options = { endUserId: endUser };
  const detail = useLoad(async () => {
    const [memory, history, relations, feedback] = await Promise.all([
      service.call('memories.get', { path: { memory_id: id } }, options),
      service.call('memories.history', { path: { memory_id: id } }, options),
      service.call('relations.list', { path: { memory_id: id } }, options),
      service.call('feedback.list', { path: { memory_id: id } }, options),
    ]);
    return { memory, history, relations, feedback };
  }, [id]);
  const [confirming, setConfirming] = useState(false);
  const forget = useAction();
  // A viewer sees no destructive action; the key's scopes are checked by the server anyway.
  const mayForget = scope.role !== 'viewer';
  return (
    <section className="panel" aria-label={`Memory ${id}`}>
      <h2>
        Memory {id}{' '}
        <button type="button" onClick={onClose}>
          Close
        </button>
      </h2>
      <Status loading={detail.loading} error={detail.error}>
        {detail.data && (
          <>
            <p data-testid="memory-text">{detail.data.memory.text}</p>
            <p className="muted">
              Tags: {detail.data.memory.tags.join(', ') || '—'} · source {detail.data.memory.source} · created{' '}
              {when(detail.data.memory.created_at)}
            </p>
            <h3>History</h3>
            <ul>
              {detail.data.history.items.map((h) => (
                <li key={h.id}>
                  {h.action} · {when(h.created_at)} · {h.actor.type}
                </li>
              ))}
            </ul>
            <h3>Relations</h3>
            {detail.data.relations.items.length === 0 ? (
              <p className="muted">None.</p>
            ) : (
              <ul>
                {detail.data.relations.items.map((r) => (
                  <li key={r.id}>
                    {r.source_id} {r.type} {r.target_id}
                  </li>
                ))}
              </ul>
            )}
            <h3>Feedback</h3>
            {detail.data.feedback.items.length === 0 ? (
              <p className="muted">None.</p>
            ) : (
              <ul>
                {detail.data.feedback.items.map((f) => (
                  <li key={f.id}>
                    {f.rating}
                    {f.comment ? `: ${f.comment}` : ''} · {when(f.created_at)}
                  </li>
                ))}
              </ul>
            )}
            {mayForget && !confirming && (
              <button type="button" className="danger" onClick={() => setConfirming(true)}>
                Forget…
              </button>
            )}
            {mayForget && confirming && (
              <div role="alertdialog" aria-label="Confirm forget">
                <p>Forget this memory? Its text and history are erased; this cannot be undone.</p>
                <button
                  type="button"
                  className="danger"
                  disabled={forget.busy}
                  onClick={() =>
                    forget
                      .run(() => service.call('memories.forget', { body: { ids: [id] } }, options))
                      .then((ok) => ok && onForgotten())
                  }
                >
                  Forget memory {id}
                </button>{' '}
                <button type="button" onClick={() => setConfirming(false)}>
                  Cancel
                </button>
              </div>
            )}
            {forget.error && (
              <p role="alert" className="error">
                {forget.error}
              </p>
            )}
          </>
        )}
      </Status>
    </section>
  );
}
