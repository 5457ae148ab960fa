import type { FleetWatch, FlotillaClient, WatchEvent } from "@flotilla/client";
import { DropOldestBuffer } from "@flotilla/core";

/** What one `GET /v1/events` stream gets: the events it may see, as they come. */
export interface FeedSubscription extends AsyncIterable<WatchEvent> {
  close(): void;
}

interface Subscriber {
  wants: (event: WatchEvent) => boolean;
  buffer: DropOldestBuffer<WatchEvent>;
}

/**
 * One `client.watch()` shared by every open `GET /v1/events` stream, however many dashboards watch:
 * opened with the first, closed when the last leaves. Each stream has its own bounded buffer, so a
 * slow reader loses its oldest events (and is told, `watch.lagged`) without holding the others back.
 */
export class LiveFeed {
  private readonly client: FlotillaClient;
  private readonly maxBuffered: number;
  private readonly subscribers = new Set<Subscriber>();
  private watch: FleetWatch | undefined;

  constructor(client: FlotillaClient, maxBuffered = 1000) {
    this.client = client;
    this.maxBuffered = maxBuffered;
  }

  /** Resolves once the shared feed is live, so nothing that happens after is missed. */
  async subscribe(wants: (event: WatchEvent) => boolean): Promise<FeedSubscription> {
    const sub: Subscriber = { wants, buffer: new DropOldestBuffer(this.maxBuffered, (dropped) => ({ type: "watch.lagged", dropped, at: Date.now() })) };
    this.subscribers.add(sub);
    const watch = this.open();
    try {
      await watch.ready;
    } catch (err) {
      this.leave(sub);
      throw err;
    }
    return { [Symbol.asyncIterator]: () => sub.buffer[Symbol.asyncIterator](), close: () => this.leave(sub) };
  }

  private open(): FleetWatch {
    if (this.watch) return this.watch;
    const watch = this.client.watch();
    this.watch = watch;
    void (async () => {
      for await (const event of watch) for (const sub of this.subscribers) if (sub.wants(event)) sub.buffer.push(event);
    })().catch(() => {});
    // A feed that could not start is dropped, so the next subscriber tries again.
    watch.ready.catch(() => {
      if (this.watch === watch) this.watch = undefined;
    });
    return watch;
  }

  private leave(sub: Subscriber): void {
    sub.buffer.close();
    if (!this.subscribers.delete(sub) || this.subscribers.size > 0) return;
    const watch = this.watch;
    this.watch = undefined;
    void watch?.close();
  }

  async close(): Promise<void> {
    for (const sub of this.subscribers) sub.buffer.close();
    this.subscribers.clear();
    const watch = this.watch;
    this.watch = undefined;
    await watch?.close();
  }
}
