import { type FormEvent, useEffect } from 'react';
import { type Scope, type Session, callOptions, can } from '../session.js';
import { Status, useAction, useLoad, when } from '../ui.js';

/** Polled this often while an export runs, so progress moves on screen. */
const POLL_MS = 1000;

/** Exports of the project (start, progress, download) and imports into it (upload a file, progress, cancel). */
export function ExportsPage({ session, scope }: { session: Session; scope: Scope }) {
  if (!scope.projectId) return <p className="muted">No project in this organization yet.</p>;
  return (
    <>
      <Exports session={session} scope={scope} />
      <h2>Imports</h2>
      <Imports session={session} scope={scope} />
    </>
  );
}

function Exports({ session, scope }: { session: Session; scope: Scope }) {
  const { control } = session;
  const exports = useLoad(
    () => control.call('exports.list', { query: { limit: 50 } }, callOptions(scope)),
    [scope.projectId],
  );
  const action = useAction();
  const running = exports.data?.items.some((e) => e.status === 'queued' || e.status === 'running');
  useEffect(() => {
    if (!running) return;
    const timer = setTimeout(exports.reload, POLL_MS);
    return () => clearTimeout(timer);
  }, [running, exports.data, exports.reload]);
  const create = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const endUser = String(new FormData(event.currentTarget).get('endUser')).trim();
    void action.run(() =>
      control
        .call(
          'exports.create',
          { body: { scope: endUser ? { end_user_id: endUser } : {}, format: 'jsonl', gzip: false } },
          callOptions(scope),
        )
        .then(exports.reload),
    );
  };
  const download = (id: number, filename: string) =>
    action.run(async () => {
      const response = await control.transport.send('exports.download', { path: { id } }, callOptions(scope));
      const url = URL.createObjectURL(await response.blob());
      const link = document.createElement('a');
      link.href = url;
      link.download = filename;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    });
  return (
    <>
      {can(scope, 'exports.manage') && (
        <form onSubmit={create} aria-label="Start an export">
          <label>
            End user (empty: the whole project) <input name="endUser" />
          </label>
          <button type="submit" disabled={action.busy}>
            Start export
          </button>
        </form>
      )}
      {action.error && (
        <p role="alert" className="error">
          {action.error}
        </p>
      )}
      <Status loading={exports.loading && !exports.data} error={exports.error} empty={exports.data?.items.length === 0}>
        <table>
          <thead>
            <tr>
              <th>Id</th>
              <th>Scope</th>
              <th>Status</th>
              <th>Progress</th>
              <th>Created</th>
              <th>File</th>
            </tr>
          </thead>
          <tbody>
            {exports.data?.items.map((e) => (
              <tr key={e.id} data-testid={`export-${e.id}`}>
                <td>{e.id}</td>
                <td>{e.scope.end_user_id ?? 'project'}</td>
                <td>{e.status}</td>
                <td>
                  {e.progress ? (
                    <>
                      <progress
                        max={e.progress.rows_total ?? 1}
                        value={e.progress.rows_done}
                        aria-label={`Export ${e.id} progress`}
                      />{' '}
                      {e.progress.rows_done}/{e.progress.rows_total ?? '?'}
                    </>
                  ) : (
                    '—'
                  )}
                </td>
                <td>{when(e.created_at)}</td>
                <td>
                  {e.status === 'completed' && e.filename && !e.artifact_deleted_at ? (
                    <button type="button" onClick={() => download(e.id, e.filename!)}>
                      Download {e.filename}
                    </button>
                  ) : (
                    (e.error ?? '—')
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

function Imports({ session, scope }: { session: Session; scope: Scope }) {
  const { control } = session;
  const imports = useLoad(() => control.imports.list({ limit: 50 }, callOptions(scope)), [scope.projectId]);
  const action = useAction();
  const running = imports.data?.items.some((i) => i.status === 'queued' || i.status === 'running');
  useEffect(() => {
    if (!running) return;
    const timer = setTimeout(imports.reload, POLL_MS);
    return () => clearTimeout(timer);
  }, [running, imports.data, imports.reload]);
  const upload = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const file = form.get('file');
    const format = String(form.get('format')) as 'auto' | 'engram' | 'mem0';
    void action.run(async () => {
      if (!(file instanceof File) || file.size === 0) throw new Error('Choose a file to import');
      await control.imports.create(file, { format }, callOptions(scope));
      imports.reload();
    });
  };
  return (
    <>
      {can(scope, 'exports.manage') && (
        <form onSubmit={upload} aria-label="Import a file">
          <label>
            File (an Engram export, or a Mem0 export; gzip too){' '}
            <input name="file" type="file" accept=".jsonl,.json,.gz,application/json,application/gzip" required />
          </label>
          <label>
            Format{' '}
            <select name="format" defaultValue="auto">
              <option value="auto">detect</option>
              <option value="engram">Engram</option>
              <option value="mem0">Mem0</option>
            </select>
          </label>
          <button type="submit" disabled={action.busy}>
            Start import
          </button>
        </form>
      )}
      {action.error && (
        <p role="alert" className="error">
          {action.error}
        </p>
      )}
      <Status loading={imports.loading && !imports.data} error={imports.error} empty={imports.data?.items.length === 0}>
        <table aria-label="Imports">
          <thead>
            <tr>
              <th>Id</th>
              <th>Format</th>
              <th>Status</th>
              <th>Progress</th>
              <th>Created</th>
              <th>Skipped</th>
              <th>Started</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {imports.data?.items.map((i) => (
              <tr key={i.id} data-testid={`import-${i.id}`}>
                <td>{i.id}</td>
                <td>{i.format}</td>
                <td>
                  {i.status}
                  {i.error ? (
                    <span className="error">
                      {' '}
                      ({i.error.message}
                      {i.error.line ? `, line ${i.error.line}` : ''})
                    </span>
                  ) : null}
                </td>
                <td>
                  <progress
                    max={i.progress.bytes_total || 1}
                    value={i.progress.bytes_done}
                    aria-label={`Import ${i.id} progress`}
                  />{' '}
                  {i.progress.rows_done} records
                </td>
                <td>{i.created}</td>
                <td>{i.skipped}</td>
                <td>{when(i.created_at)}</td>
                <td>
                  {can(scope, 'exports.manage') && (i.status === 'queued' || i.status === 'running') && (
                    <button
                      type="button"
                      onClick={() =>
                        action.run(() => control.imports.cancel(i.id, callOptions(scope)).then(imports.reload))
                      }
                    >
                      Cancel
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
