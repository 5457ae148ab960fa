import { type Keys, splitTaskId } from "@flotilla/core";
import type { SubscriberHub, Unsubscribe } from "@flotilla/core/redis";
import { subscribeStatus } from "@flotilla/store";
import { type EventOf, FlotillaEventSchema } from "./schema.ts";

export type StatusEvent = EventOf<"status">;
/** Called with each status event of the task, or with undefined when a message for it could not be read: look at the record. */
export type StatusListener = (event: StatusEvent | undefined) => void;

interface QueueFeed {
  subscribed: Promise<Unsubscribe>;
  watchers: Map<string, Set<StatusListener>>;
  idleTimer: NodeJS.Timeout | undefined;
}

export interface StatusFeedOptions {
  /** A queue's channel stays subscribed this long after its last watcher left. @default 30_000 */
  lingerMs?: number;
}

/**
 * Status events of the tasks a process waits on. Workers publish every status change of a queue
 * on one channel (one message per batch), so a client subscribes once per queue, however many
 * tasks it awaits, and this feed hands each event to the watchers of its task.
 */
export class StatusFeed {
  private readonly hub: SubscriberHub;
  private readonly keys: Keys;
  private readonly lingerMs: number;
  private readonly queues = new Map<string, QueueFeed>();

  constructor(hub: SubscriberHub, keys: Keys, options: StatusFeedOptions = {}) {
    this.hub = hub;
    this.keys = keys;
    this.lingerMs = options.lingerMs ?? 30_000;
  }

  /** Calls `listener` with each status event of the task; resolves once the subscription is live. */
  async watch(taskId: string, listener: StatusListener): Promise<() => void> {
    const { queue } = splitTaskId(taskId);
    let feed = this.queues.get(queue);
    if (!feed) {
      const created: QueueFeed = { subscribed: Promise.resolve(async () => {}), watchers: new Map(), idleTimer: undefined };
      created.subscribed = subscribeStatus(this.hub, this.keys, queue, (message) => this.dispatch(created, message));
      this.queues.set(queue, created);
      feed = created;
    }
    clearTimeout(feed.idleTimer);
    let set = feed.watchers.get(taskId);
    if (!set) {
      set = new Set();
      feed.watchers.set(taskId, set);
    }
    set.add(listener);
    try {
      await feed.subscribed;
    } catch (err) {
      this.unwatch(queue, feed, taskId, listener);
      if (this.queues.get(queue) === feed && feed.watchers.size === 0) this.queues.delete(queue);
      throw err;
    }
    return () => this.unwatch(queue, feed, taskId, listener);
  }

  private unwatch(queue: string, feed: QueueFeed, taskId: string, listener: StatusListener): void {
    const set = feed.watchers.get(taskId);
    if (!set?.delete(listener)) return;
    if (set.size === 0) feed.watchers.delete(taskId);
    if (feed.watchers.size > 0 || this.queues.get(queue) !== feed) return;
    clearTimeout(feed.idleTimer);
    feed.idleTimer = setTimeout(() => {
      if (feed.watchers.size > 0 || this.queues.get(queue) !== feed) return;
      this.queues.delete(queue);
      void feed.subscribed.then((unsubscribe) => unsubscribe()).catch(() => {});
    }, this.lingerMs);
    feed.idleTimer.unref();
  }

  private dispatch(feed: QueueFeed, message: string): void {
    let batch: unknown;
    try {
      batch = JSON.parse(message);
    } catch {
      batch = undefined;
    }
    if (!Array.isArray(batch)) {
      // Unreadable: whoever waits on this queue looks at their task's record instead.
      for (const set of feed.watchers.values()) for (const listener of [...set]) listener(undefined);
      return;
    }
    for (const raw of batch) {
      const taskId = (raw as { taskId?: unknown } | null)?.taskId;
      const set = typeof taskId === "string" ? feed.watchers.get(taskId) : undefined;
      if (!set) continue;
      const parsed = FlotillaEventSchema.safeParse(raw);
      const event = parsed.success && parsed.data.type === "status" ? parsed.data : undefined;
      for (const listener of [...set]) listener(event);
    }
  }

  /** Drops every subscription. */
  async close(): Promise<void> {
    const feeds = [...this.queues.values()];
    this.queues.clear();
    for (const feed of feeds) {
      clearTimeout(feed.idleTimer);
      await feed.subscribed.then((unsubscribe) => unsubscribe()).catch(() => {});
    }
  }
}
