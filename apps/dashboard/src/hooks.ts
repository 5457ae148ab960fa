import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { type FeedSignal, type FeedStatus, feed } from "./live.ts";
import { FALLBACK_POLL_MS, OFFLINE_POLL_MS, REFETCH_GAP_MS } from "./settings.ts";
import type { LiveEvent } from "./types.ts";

export interface Polled<T> {
  data: T | undefined;
  error: Error | undefined;
  refresh: () => void;
}

export interface PollOptions {
  /**
   * The live events that make what was loaded stale: each one asks for a reload, and the reloads
   * asked for within REFETCH_GAP_MS of the last are one. A `resync` (events missed) always reloads.
   */
  live?: (event: LiveEvent) => boolean;
  /** Poll this often whatever the feed's state: for what the feed does not carry at all (the event bus). */
  everyMs?: number;
}

/**
 * Calls `load` now, again when `deps` change, when a matching live event arrives (coalesced), and
 * on a poll: slow while the live feed is up (it is only a fallback), as often as before the feed
 * existed while it is down. Keeps the last answer.
 */
export function usePoll<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[] = [], options: PollOptions = {}): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const liveRef = useRef(options.live);
  liveRef.current = options.live;
  const everyRef = useRef(options.everyMs);
  everyRef.current = options.everyMs;
  // Reloads when the caller's deps change, and on refresh() (tick).
  useEffect(() => {
    const ac = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    // When the next load is due (one timer, the earliest asked for wins).
    let due = Number.POSITIVE_INFINITY;
    let loading = false;
    // Asked for while a load was under way: another follows it.
    let again = false;
    let lastStart = 0;
    const at = (when: number) => {
      if (ac.signal.aborted || when >= due) return;
      due = when;
      clearTimeout(timer);
      timer = setTimeout(run, Math.max(0, when - Date.now()));
    };
    const pollMs = () => everyRef.current ?? (feed.current === "live" ? FALLBACK_POLL_MS : OFFLINE_POLL_MS);
    const run = async () => {
      due = Number.POSITIVE_INFINITY;
      loading = true;
      again = false;
      lastStart = Date.now();
      try {
        const value = await loadRef.current(ac.signal);
        if (ac.signal.aborted) return;
        setData(value);
        setError(undefined);
      } catch (err) {
        if (ac.signal.aborted) return;
        setError(err as Error);
      } finally {
        loading = false;
      }
      at(again ? lastStart + REFETCH_GAP_MS : Date.now() + pollMs());
    };
    const ask = () => {
      if (loading) again = true;
      else at(lastStart + REFETCH_GAP_MS);
    };
    const unsubscribe = feed.subscribe((signal: FeedSignal) => {
      if (liveRef.current && (signal.type === "resync" || liveRef.current(signal))) ask();
    });
    // The feed dropped: poll as often as without it, from now.
    const unwatch = feed.onStatus((status: FeedStatus) => {
      if (!loading && status !== "live") at(Date.now() + OFFLINE_POLL_MS);
    });
    void run();
    return () => {
      ac.abort();
      clearTimeout(timer);
      unsubscribe();
      unwatch();
    };
  }, [...deps, tick]);
  const refresh = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, refresh };
}

/** The live feed's status, for the indicator. */
export function useFeedStatus(): FeedStatus {
  const [status, setStatus] = useState(feed.current);
  useEffect(() => {
    setStatus(feed.current);
    return feed.onStatus(setStatus);
  }, []);
  return status;
}
