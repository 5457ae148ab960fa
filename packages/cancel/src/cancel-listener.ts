import { type ExponentialBackoff, exponentialDelay, type Keys, type Logger, parseJsonOr, silentLogger, sleep } from "@flotilla/core";
import type { SubscriberHub, Unsubscribe } from "@flotilla/core/redis";
import { readCancelRequests } from "@flotilla/store";
import type { Redis } from "ioredis";
import { z } from "zod";

export type CancelHandler = (reason: string) => void;

export interface CancelListenerOptions {
  /** How long a request for a task not watched here is remembered. @default 60_000 */
  rememberMs?: number;
  /** Where a failed look at the stored requests is reported. @default silent */
  logger?: Logger;
}

const CancelMessageSchema = z.object({ taskId: z.string(), reason: z.string() });

/** Pause before looking at the stored requests again after failure number 1, 2, …: 200 ms, doubling, at most 5 s. */
const RECHECK_BACKOFF: ExponentialBackoff = { baseMs: 100, maxMs: 5000 };

/**
 * The worker side of cancel: one subscription to the cancel channel of each queue the worker
 * serves (sharded, in the queue's slot), on the worker's subscriber connection, serves every task
 * the worker runs. Because requests are also stored on the task, a request missed while the
 * connection was down is found on reconnect.
 *
 * A worker starts a batch of tasks in one script and watches them once it has the reply; a request
 * for one of them may arrive on the subscriber connection just before that. Requests for tasks not
 * (yet) watched are therefore remembered for a while, and `watch` fires at once for one of them.
 */
export class CancelListener {
  private readonly redis: Redis;
  private readonly hub: SubscriberHub;
  private readonly keys: Keys;
  private readonly handlers = new Map<string, CancelHandler>();
  /** Requests for tasks not watched here, by task id, oldest first. */
  private readonly recent = new Map<string, { reason: string; at: number }>();
  private readonly rememberMs: number;
  private readonly log: Logger;
  private unsubscribe: Unsubscribe | undefined;
  private stopReconnect: (() => void) | undefined;

  constructor(redis: Redis, hub: SubscriberHub, keys: Keys, options: CancelListenerOptions = {}) {
    this.rememberMs = options.rememberMs ?? 60_000;
    this.log = options.logger ?? silentLogger;
    this.redis = redis;
    this.hub = hub;
    this.keys = keys;
  }

  /** Listens to the cancel channels of `queues`, the queues of the tasks this worker runs. */
  async start(queues: readonly string[]): Promise<void> {
    const onMessage = (message: string) => {
      const parsed = CancelMessageSchema.safeParse(parseJsonOr(message, undefined));
      if (parsed.success) this.fire(parsed.data.taskId, parsed.data.reason);
    };
    const subscribed = await Promise.allSettled(queues.map((queue) => this.hub.subscribe(this.keys.cancelChannel(queue), onMessage)));
    const done: Unsubscribe[] = subscribed.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    this.unsubscribe = async () => {
      await Promise.all(done.map((u) => u()));
    };
    const failed = subscribed.find((r) => r.status === "rejected");
    if (failed) {
      await this.stop();
      throw failed.reason;
    }
    this.stopReconnect = this.hub.onReconnect(() => void this.recheckUntilDone());
  }

  /** Calls `handler` (once) when the task is cancelled; returns the function that stops watching. */
  watch(taskId: string, handler: CancelHandler): () => void {
    const early = this.recent.get(taskId);
    if (early) {
      this.recent.delete(taskId);
      handler(early.reason);
      return () => {};
    }
    this.handlers.set(taskId, handler);
    return () => {
      if (this.handlers.get(taskId) === handler) this.handlers.delete(taskId);
    };
  }

  /** Looks at the stored cancel requests of every watched task. */
  async recheck(): Promise<void> {
    const ids = [...this.handlers.keys()];
    if (ids.length === 0) return;
    for (const [id, reason] of await readCancelRequests(this.redis, this.keys, ids)) this.fire(id, reason);
  }

  /**
   * After a reconnect: a request may have been missed while the connection was down, so look at the
   * stored ones, retrying (with a growing pause) until Redis answers or the listener stops.
   */
  private async recheckUntilDone(): Promise<void> {
    for (let tries = 1; this.unsubscribe; tries++) {
      try {
        await this.recheck();
        return;
      } catch (err) {
        this.log.warn("could not look for cancel requests missed while disconnected; retrying", { err, tries });
        await sleep(exponentialDelay(RECHECK_BACKOFF, tries));
      }
    }
  }

  /** Requests remembered for tasks not watched here. */
  async pendingRequests(): Promise<number> {
    return this.recent.size;
  }

  async stop(): Promise<void> {
    this.stopReconnect?.();
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    await unsubscribe?.();
    this.handlers.clear();
    this.recent.clear();
  }

  private remember(taskId: string, reason: string): void {
    const now = Date.now();
    this.recent.delete(taskId);
    this.recent.set(taskId, { reason, at: now });
    // Oldest first: drop what is too old, and keep the map bounded.
    for (const [id, r] of this.recent) {
      if (now - r.at < this.rememberMs && this.recent.size <= 10_000) break;
      this.recent.delete(id);
    }
  }

  private fire(taskId: string, reason: string): void {
    const handler = this.handlers.get(taskId);
    if (!handler) {
      this.remember(taskId, reason);
      return;
    }
    this.handlers.delete(taskId);
    handler(reason);
  }
}
