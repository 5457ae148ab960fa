import { ErrorCodes, FlotillaError, type Keys, newId, sleep, WaitTimeoutError } from "@flotilla/core";
import { disconnectRedis } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import { type BusEvent, decodeEvent } from "./event.ts";

interface Waiter {
  resolve: (event: BusEvent) => void;
  reject: (err: unknown) => void;
}

/**
 * Where one Bus's `request()` replies arrive: its own reply topic (`_reply.<id>`, expiring an hour
 * after its last reply), read by one blocking loop however many requests wait, each reply matched
 * to its request by correlationId. Started on the first request.
 */
export class ReplyInbox {
  readonly topic = `_reply.${newId()}`;
  private readonly waiters = new Map<string, Waiter>();
  private reader: Redis | undefined;
  private loop: Promise<void> | undefined;
  private open = true;

  private readonly redis: Redis;
  private readonly blocking: () => Redis;
  private readonly keys: Keys;

  constructor(redis: Redis, blocking: () => Redis, keys: Keys) {
    this.redis = redis;
    this.blocking = blocking;
    this.keys = keys;
  }

  /** Waits for the reply correlated by `correlationId` (register before publishing the request). */
  wait(correlationId: string, timeoutMs: number): { reply: Promise<BusEvent>; cancel: () => void } {
    this.loop ??= this.read();
    let timer: NodeJS.Timeout | undefined;
    const reply = new Promise<BusEvent>((resolve, reject) => {
      this.waiters.set(correlationId, { resolve, reject });
      timer = setTimeout(() => {
        this.waiters.delete(correlationId);
        reject(new WaitTimeoutError(`a reply to request ${correlationId}`, timeoutMs));
      }, timeoutMs);
    }).finally(() => clearTimeout(timer));
    // The request awaits the reply only once its publish is written: a close() or a timeout before
    // then must not be an unhandled rejection (the request rejects with its own error).
    reply.catch(() => {});
    return {
      reply,
      cancel: () => {
        clearTimeout(timer);
        this.waiters.delete(correlationId);
      },
    };
  }

  private async read(): Promise<void> {
    this.reader = this.blocking();
    const stream = this.keys.topic(this.topic);
    let last = "0-0";
    while (this.open) {
      let reply: Array<[string, Array<[string, string[]]>]> | null;
      try {
        reply = (await this.reader.xread("COUNT", 100, "BLOCK", 1000, "STREAMS", stream, last)) as typeof reply;
      } catch {
        if (!this.open) return;
        await sleep(200);
        continue;
      }
      for (const [id, fields] of reply?.[0]?.[1] ?? []) {
        last = id;
        let event: BusEvent;
        try {
          event = decodeEvent(this.topic, id, fields);
        } catch {
          continue;
        }
        const waiter = event.correlationId === undefined ? undefined : this.waiters.get(event.correlationId);
        if (!waiter) continue;
        this.waiters.delete(event.correlationId!);
        if (event.error) waiter.reject(new FlotillaError(event.error.code, `the request failed: ${event.error.message}`));
        else waiter.resolve(event);
      }
    }
  }

  async close(): Promise<void> {
    this.open = false;
    for (const w of this.waiters.values()) w.reject(new FlotillaError(ErrorCodes.CLOSED, "the bus was closed while a request waited"));
    this.waiters.clear();
    if (this.reader) disconnectRedis(this.reader);
    await this.loop;
    // Unreachable, the topic is left to expire (REPLY_TOPIC_TTL_MS) rather than close() waiting out the retries.
    if (this.loop && this.redis.status === "ready") await this.redis.del(this.keys.topic(this.topic)).catch(() => {});
  }
}
