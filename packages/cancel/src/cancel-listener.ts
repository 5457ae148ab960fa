import { type Keys, parseJsonOr, type SubscriberHub, type Unsubscribe } from "@flotilla/core";
import type { Redis } from "ioredis";
import { z } from "zod";

export type CancelHandler = (reason: string) => void;

const CancelMessageSchema = z.object({ taskId: z.string(), reason: z.string() });

/**
 * The worker side of cancel: one subscription to the fleet's cancel channel, on the worker's
 * single subscriber connection, serves every task the worker runs. Because requests are also
 * stored on the task, a request missed while the connection was down is found on reconnect.
 */
export class CancelListener {
  private readonly redis: Redis;
  private readonly hub: SubscriberHub;
  private readonly keys: Keys;
  private readonly handlers = new Map<string, CancelHandler>();
  private unsubscribe: Unsubscribe | undefined;
  private stopReconnect: (() => void) | undefined;

  constructor(redis: Redis, hub: SubscriberHub, keys: Keys) {
    this.redis = redis;
    this.hub = hub;
    this.keys = keys;
  }

  async start(): Promise<void> {
    this.unsubscribe = await this.hub.subscribe(this.keys.cancelChannel(), (message) => {
      const parsed = CancelMessageSchema.safeParse(parseJsonOr(message, undefined));
      if (parsed.success) this.fire(parsed.data.taskId, parsed.data.reason);
    });
    this.stopReconnect = this.hub.onReconnect(() => void this.recheck());
  }

  /** Calls `handler` (once) when the task is cancelled; returns the function that stops watching. */
  watch(taskId: string, handler: CancelHandler): () => void {
    this.handlers.set(taskId, handler);
    return () => {
      if (this.handlers.get(taskId) === handler) this.handlers.delete(taskId);
    };
  }

  /** Looks at the stored cancel requests of every watched task. */
  async recheck(): Promise<void> {
    const ids = [...this.handlers.keys()];
    if (ids.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hmget(this.keys.task(id), "cancelRequestedAt", "cancelReason");
    const replies = (await pipeline.exec().catch(() => null)) ?? [];
    replies.forEach(([err, value], i) => {
      const [at, reason] = (value ?? []) as Array<string | null>;
      if (!err && at) this.fire(ids[i]!, reason ?? "cancelled");
    });
  }

  async stop(): Promise<void> {
    this.stopReconnect?.();
    await this.unsubscribe?.();
    this.handlers.clear();
  }

  private fire(taskId: string, reason: string): void {
    const handler = this.handlers.get(taskId);
    if (!handler) return;
    this.handlers.delete(taskId);
    handler(reason);
  }
}
