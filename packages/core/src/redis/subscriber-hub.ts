import type { Redis } from "ioredis";
import { exponentialDelay } from "../backoff.ts";
import { sleep } from "../ids.ts";
import { type Logger, silentLogger } from "../logger.ts";
import { asCluster } from "./cluster.ts";
import { closeRedis, type OwnedRedis, RECONNECT_BACKOFF, whenReady } from "./connection.ts";

export type MessageListener = (message: string, channel: string) => void;
export type Unsubscribe = () => Promise<void>;

export interface SubscriberHubOptions {
  /** A subscribe waits this long for the connection before failing with a ConnectionError. @default 10_000 */
  readyTimeoutMs?: number;
  /** Where a failed re-subscription after a reconnect is reported (it is retried). @default silentLogger */
  logger?: Logger;
}

/**
 * One subscriber connection shared by every listener of a process, reference-counted per channel.
 * After a reconnect it re-subscribes itself and only then tells `onReconnect` listeners, so a
 * listener that catches up from a stream cannot miss a message published in between.
 *
 * Channels are sharded (SSUBSCRIBE, Redis 7): every Flotilla channel carries its queue's hash tag,
 * so on a cluster a message goes only to the node serving that slot and the subscriber keeps one
 * connection per master (ioredis's sharded subscribers), instead of every node relaying every
 * message. On a single Redis sharded channels behave as plain ones.
 *
 * SSUBSCRIBE is only sent once the connection is ready: sent earlier, it can overtake ioredis's
 * ready check (INFO), which Redis then refuses on a subscribed connection, dropping it.
 */
export class SubscriberHub {
  private readonly conn: OwnedRedis;
  private readonly listeners = new Map<string, Set<MessageListener>>();
  private readonly ready = new Map<string, Promise<unknown>>();
  private readonly reconnectListeners = new Set<() => void>();
  private readonly readyTimeoutMs: number;
  private readonly log: Logger;
  /** A connection was lost since the last subscribe round: the next `ready` must re-subscribe. */
  private lost = false;
  private closed = false;
  /** One wait for the connection, shared by every subscribe issued before it is ready. */
  private readyWait: Promise<void> | undefined;

  constructor(conn: OwnedRedis, options: SubscriberHubOptions = {}) {
    this.conn = conn;
    this.readyTimeoutMs = options.readyTimeoutMs ?? 10_000;
    this.log = options.logger ?? silentLogger;
    const redis = conn.redis;
    redis.on("smessage", (channel: string, message: string) => this.dispatch(channel, message));
    if (asCluster(redis)) {
      // A cluster's sharded subscribers subscribe again by themselves after a node was lost or the
      // slots moved, and then say so: only then may listeners catch up.
      redis.on("subscribersReady", () => this.caughtUp());
    } else {
      // We re-subscribe ourselves so we know when it is done.
      redis.options.autoResubscribe = false;
      redis.on("close", () => {
        this.lost = true;
      });
      redis.on("ready", () => {
        if (!this.lost) return;
        this.lost = false;
        void this.resubscribe();
      });
    }
    redis.on("error", () => {
      // Reconnects are handled by ioredis; errors surface to callers through their commands.
    });
  }

  get redis(): Redis {
    return this.conn.redis;
  }

  /** Resolves once Redis has confirmed the subscription. */
  async subscribe(channel: string, listener: MessageListener): Promise<Unsubscribe> {
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      const redis = this.conn.redis;
      this.ready.set(
        channel,
        this.connected().then(() => redis.ssubscribe(channel)),
      );
    }
    set.add(listener);
    try {
      await this.ready.get(channel);
    } catch (err) {
      set.delete(listener);
      if (set.size === 0) this.forget(channel, set);
      throw err;
    }
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(channel) === set) {
        this.forget(channel, set);
        if (!this.closed) await this.conn.redis.sunsubscribe(channel).catch(() => {});
      }
    };
  }

  private connected(): Promise<void> {
    if (this.conn.redis.status === "ready") return Promise.resolve();
    this.readyWait ??= whenReady(this.conn.redis, this.readyTimeoutMs).finally(() => {
      this.readyWait = undefined;
    });
    return this.readyWait;
  }

  /** Called after the connection came back and every channel is subscribed again. */
  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.reconnectListeners.clear();
    await closeRedis(this.conn);
  }

  private forget(channel: string, set: Set<MessageListener>): void {
    if (this.listeners.get(channel) !== set) return;
    this.listeners.delete(channel);
    this.ready.delete(channel);
  }

  private dispatch(channel: string, message: string): void {
    const set = this.listeners.get(channel);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(message, channel);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }

  /**
   * After a reconnect: subscribes every channel again, retrying until it works or the hub closes (a
   * connection that came back may fail a command; waiting for the next reconnect could wait
   * forever), and only then tells the reconnect listeners, so none catches up too early.
   */
  private async resubscribe(): Promise<void> {
    for (let tries = 1; ; tries++) {
      const channels = [...this.listeners.keys()];
      try {
        if (channels.length) await this.conn.redis.ssubscribe(...channels);
        break;
      } catch (err) {
        if (this.closed || this.lost) return; // closed, or another reconnect will resubscribe
        this.log.warn("re-subscribing after a reconnect failed; retrying", { err, channels: channels.length, tries });
        await sleep(exponentialDelay(RECONNECT_BACKOFF, tries));
      }
    }
    this.caughtUp();
  }

  /** Tells the reconnect listeners that every channel is subscribed again. */
  private caughtUp(): void {
    for (const listener of [...this.reconnectListeners]) {
      try {
        listener();
      } catch (err) {
        // One listener's failure must not keep the others from catching up.
        this.log.warn("a reconnect listener failed", { err });
      }
    }
  }
}
