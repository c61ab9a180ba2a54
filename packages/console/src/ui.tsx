import { type ReactNode, useCallback, useEffect, useState } from 'react';
import { messageOf } from './session.js';

/** A value loaded by `load`, with its loading and error states, and a way to load it again. */
export function useLoad<T>(
  load: () => Promise<T>,
  deps: unknown[],
): { data: T | undefined; error: string | undefined; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error) => live && setState({ error: messageOf(error), loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

export function Status({
  loading,
  error,
  empty,
  children,
}: {
  loading: boolean;
  error: string | undefined;
  empty?: boolean;
  children: ReactNode;
}) {
  if (error)
    return (
      <p role="alert" className="error">
        Error: {error}
      </p>
    );
  if (loading)
    return (
      <p aria-busy="true" className="muted">
        Loading…
      </p>
    );
  if (empty) return <p className="muted">Nothing here yet.</p>;
  return <>{children}</>;
}

/** Runs an action, showing its error; returns whether it succeeded. */
export function useAction(): {
  busy: boolean;
  error: string | undefined;
  run: (action: () => Promise<unknown>) => Promise<boolean>;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const run = useCallback(async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      return true;
    } catch (e) {
      setError(messageOf(e));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run };
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');
