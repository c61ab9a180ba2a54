import { type FormEvent, useState } from 'react';
import { type Scope, type Session, callOptions } from '../session.js';
import { Status, useLoad, when } from '../ui.js';

const PAGE_SIZE = 25;

export function AuditPage({ session, scope }: { session: Session; scope: Scope }) {
  const [filters, setFilters] = useState<{ action?: string; actor_type?: 'user' | 'api_key' | 'system' }>({});
  const [offset, setOffset] = useState(0);
  const log = useLoad(
    () => session.control.audit.list({ ...filters, offset, limit: PAGE_SIZE }, callOptions(scope)),
    [scope.organizationId, filters.action, filters.actor_type, offset],
  );
  const apply = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const action = String(form.get('action')).trim();
    const actorType = String(form.get('actorType'));
    setFilters({
      ...(action ? { action } : {}),
      ...(actorType ? { actor_type: actorType as 'user' | 'api_key' | 'system' } : {}),
    });
    setOffset(0);
  };
  const items = log.data?.items ?? [];
  return (
    <>
      <form onSubmit={apply} aria-label="Filter the audit log">
        <label>
          Action <input name="action" placeholder="api_key.create" />
        </label>
        <label>
          Actor{' '}
          <select name="actorType" defaultValue="">
            <option value="">any</option>
            <option value="user">user</option>
            <option value="api_key">API key</option>
            <option value="system">system</option>
          </select>
        </label>
        <button type="submit">Filter</button>
      </form>
      <p className="muted">
        Sealed rows are part of the organization's hash chain; an unsealed row is still waiting for the next seal.
      </p>
      <Status loading={log.loading} error={log.error} empty={items.length === 0}>
        <table>
          <thead>
            <tr>
              <th>When</th>
              <th>Action</th>
              <th>Actor</th>
              <th>Target</th>
              <th>Result</th>
              <th>Chain</th>
            </tr>
          </thead>
          <tbody>
            {items.map((row) => (
              <tr key={row.id}>
                <td>{when(row.created_at)}</td>
                <td>{row.action}</td>
                <td>
                  {row.actor_type} {row.actor_id ?? ''}
                </td>
                <td>
                  {row.target_type} {row.target_id ?? ''}
                </td>
                <td>{row.result}</td>
                <td>{row.sealed ? 'sealed' : 'pending'}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <p>
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE_SIZE))}>
            Previous
          </button>{' '}
          {offset + 1}–{offset + items.length} of {log.data?.total}{' '}
          <button type="button" disabled={!log.data?.has_next} onClick={() => setOffset(offset + PAGE_SIZE)}>
            Next
          </button>
        </p>
      </Status>
    </>
  );
}
