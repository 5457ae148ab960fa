// The fleet's lifecycle from `GET /v1/events`: one connection for the whole app, read with fetch
// like a task's events (see api.ts), reconnected with backoff when it drops, restarted when the
// token changes. Pages subscribe to it to refetch when something they show changed.
import { ApiError, readEventStream, type SseMessage } from "./api.ts";
import type { LiveEvent } from "./types.ts";

/** `connecting` (first try), `live`, `reconnecting` (it dropped, or never came up), `off` (stopped, or the token was refused). */
export type FeedStatus = "connecting" | "live" | "reconnecting" | "off";

/**
 * What subscribers get: the feed's events, and `resync` when some may have been missed (the feed
 * (re)connected, or the gateway dropped events for a slow reader): everything should refetch.
 */
export type FeedSignal = LiveEvent | { type: "resync"; at: number };

/** Backoff between attempts: 1 s doubling to 30 s, with jitter so many tabs do not come back at once. */
export const backoffMs = (failures: number): number => Math.min(30_000, 1000 * 2 ** Math.max(0, failures - 1)) * (0.8 + Math.random() * 0.4);
/** No byte (not even the gateway's `: ping`, every 15 s by default) for this long: the connection is dead though not closed. */
const SILENCE_MS = 60_000;

class LiveFeed {
  private status: FeedStatus = "off";
  private readonly listeners = new Set<(signal: FeedSignal) => void>();
  private readonly statusListeners = new Set<(status: FeedStatus) => void>();
  private controller: AbortController | undefined;

  get current(): FeedStatus {
    return this.status;
  }

  /** Connects (again, from scratch: the token may have changed). */
  start(): void {
    this.stop();
    const controller = new AbortController();
    this.controller = controller;
    void this.run(controller.signal);
  }

  stop(): void {
    this.controller?.abort();
    this.controller = undefined;
    this.setStatus("off");
  }

  subscribe(listener: (signal: FeedSignal) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onStatus(listener: (status: FeedStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  private async run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    let everLive = false;
    while (!signal.aborted) {
      this.setStatus(everLive || failures > 0 ? "reconnecting" : "connecting");
      const attempt = new AbortController();
      const abort = () => attempt.abort();
      signal.addEventListener("abort", abort, { once: true });
      let watchdog: ReturnType<typeof setTimeout> | undefined;
      const heard = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(abort, SILENCE_MS);
      };
      try {
        heard();
        await readEventStream(
          "/v1/events",
          (message) => {
            heard();
            if (this.status !== "live") {
              // Whatever happened while it was down (or before the page's first load ended) is not replayed.
              everLive = true;
              failures = 0;
              this.setStatus("live");
              this.emit({ type: "resync", at: Date.now() });
            }
            this.onMessage(message);
          },
          attempt.signal,
        );
      } catch (err) {
        // A refused token waits for another (the app restarts the feed with it); anything else is retried.
        if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
          this.setStatus("off");
          return;
        }
      } finally {
        clearTimeout(watchdog);
        signal.removeEventListener("abort", abort);
      }
      if (signal.aborted) return;
      failures++;
      this.setStatus("reconnecting");
      await sleep(backoffMs(failures), signal);
    }
  }

  private onMessage({ event, data }: SseMessage): void {
    if (event === undefined || data === undefined) return; // ": connected", ": ping"
    // The gateway's own failure of the stream: dropped, so the loop reconnects.
    if (event === "error") throw new Error(`the live feed failed: ${data}`);
    let parsed: LiveEvent;
    try {
      // The data carries its type too; the `event:` line is the one SSE readers route on.
      parsed = { ...(JSON.parse(data) as LiveEvent), type: event } as LiveEvent;
    } catch {
      return;
    }
    // Events were dropped for this slow reader: everything may be behind.
    this.emit(parsed.type === "watch.lagged" ? { type: "resync", at: parsed.at } : parsed);
  }

  private emit(signal: FeedSignal): void {
    for (const listener of this.listeners) listener(signal);
  }

  private setStatus(status: FeedStatus): void {
    if (status === this.status) return;
    this.status = status;
    for (const listener of this.statusListeners) listener(status);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** The app's one feed. */
export const feed = new LiveFeed();
