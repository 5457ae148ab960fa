import { useCallback, useEffect, useRef, useState } from "preact/hooks";

export interface Polled<T> {
  data: T | undefined;
  error: Error | undefined;
  refresh: () => void;
}

/** Calls `load` now and every `intervalMs` while mounted (again when `deps` change); keeps the last answer. */
export function usePoll<T>(load: (signal: AbortSignal) => Promise<T>, intervalMs: number, deps: readonly unknown[] = []): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  // Reloads when the caller's deps change, and on refresh() (tick).
  useEffect(() => {
    const ac = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const value = await loadRef.current(ac.signal);
        if (ac.signal.aborted) return;
        setData(value);
        setError(undefined);
      } catch (err) {
        if (ac.signal.aborted) return;
        setError(err as Error);
      }
      timer = setTimeout(run, intervalMs);
    };
    void run();
    return () => {
      ac.abort();
      clearTimeout(timer);
    };
  }, [...deps, tick, intervalMs]);
  const refresh = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, refresh };
}
