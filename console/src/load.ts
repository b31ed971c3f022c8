/**
 * How pages talk to the API: `useLoad` for a read (loading and error states, `reload`;
 * a newer load replaces an older one still in flight, whose answer is dropped) and
 * `useAction` for a write the partner starts (busy and error states).
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/**
 * New `deps` (another page, filter or month) start from nothing, so what is shown always
 * answers what is asked; `reload` keeps the current answer on screen until the new one
 * arrives (a refresh, or the delivery log read again while a delivery is watched).
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const generation = useRef(0);
  const run = useCallback((keep: boolean) => {
    const mine = ++generation.current;
    setState((s) => (keep ? { ...s, loading: true } : { data: undefined, error: undefined, loading: true }));
    load().then(
      (data) => {
        if (mine === generation.current) setState({ data, error: undefined, loading: false });
      },
      (error: unknown) => {
        if (mine === generation.current) setState({ data: undefined, error, loading: false });
      },
    );
  }, deps);
  useEffect(() => {
    run(false);
    return () => {
      generation.current++;
    };
  }, [run]);
  const reload = useCallback(() => run(true), [run]);
  return { ...state, reload };
}

/** A write the partner starts with a button or a form, with its busy and error states. */
export interface Action {
  busy: boolean;
  error: unknown;
  /** Runs `work` unless one is running; its failure becomes `error`. */
  run: (work: () => Promise<void>) => void;
  /** Shows `error` without running anything (a form's own check). */
  fail: (error: unknown) => void;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const running = useRef(false);
  const run = useCallback((work: () => Promise<void>) => {
    if (running.current) return;
    running.current = true;
    setBusy(true);
    setError(undefined);
    work()
      .catch((e: unknown) => setError(e))
      .finally(() => {
        running.current = false;
        setBusy(false);
      });
  }, []);
  return { busy, error, run, fail: setError };
}
