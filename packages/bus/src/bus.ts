import { createKeys, DEFAULTS, type JsonValue, type Keys, newId, parseInput } from "@flotilla/core";
import { closeRedis, type OwnedRedis, openRedis, type RedisConnection } from "@flotilla/core/redis";
import { defaultMetrics, type FlotillaMetrics } from "@flotilla/metrics";
import type { Redis } from "ioredis";
import { z } from "zod";
import { BusDeadLetters } from "./dead-letters.ts";
import type { BusEvent } from "./event.ts";
import { ReplyInbox } from "./inbox.ts";
import { Publisher, type PublishItem } from "./publisher.ts";
import { BusReaders, type GroupInfo, type InspectedEvent, type TopicStats } from "./readers.ts";
import { BusOptionsSchema, type BusTuning, type PublishOptions } from "./schemas.ts";
import { scripts } from "./scripts.ts";

export interface BusOptions extends BusTuning {
  /** Redis URL, ioredis options or client, or a cluster. @default REDIS_CLUSTER_NODES, else process.env.REDIS_URL ?? "redis://127.0.0.1:6379" */
  redis?: RedisConnection;
  /** Key prefix shared with the workers. @default "flotilla" */
  prefix?: string;
  /** Where `flotilla.bus.published` is counted. @default defaultMetrics() */
  metrics?: FlotillaMetrics;
}

export interface RequestOptions extends Omit<PublishOptions, "replyTo" | "correlationId"> {
  /** Give up (WAIT_TIMEOUT) after this long. @default 30_000 */
  timeoutMs?: number;
}

const LimitSchema = z.number().int().min(1).max(10_000);

/**
 * The topic event bus from any process: `publish` / `publishMany` events, `request` and await a
 * reply, read topics, groups, events and dead letters, delete a subscription. Subscriptions are
 * served by workers (`busWorker({ subscriptions })`).
 */
export class Bus {
  /** Each subscription's dead letters: list, get, republish, purge. */
  readonly deadLetters: BusDeadLetters;
  private readonly conn: OwnedRedis;
  private readonly keys: Keys;
  private readonly publisher: Publisher;
  private readonly readers: BusReaders;
  private inbox: ReplyInbox | undefined;
  private readonly blocking: Redis[] = [];

  private readonly options: BusOptions;

  constructor(options: BusOptions = {}) {
    this.options = options;
    const { redis: _redis, prefix, metrics, ...tuning } = options;
    this.conn = openRedis(options.redis, "command", { failFast: true });
    this.conn.redis.on("error", () => {}); // surfaced per command as ConnectionError
    this.keys = createKeys(prefix ?? DEFAULTS.prefix);
    this.publisher = new Publisher(this.conn.redis, this.keys, parseInput(BusOptionsSchema, tuning, "bus options"), metrics ?? defaultMetrics());
    this.readers = new BusReaders(this.conn.redis, this.keys);
    this.deadLetters = new BusDeadLetters(this.conn.redis, this.keys);
  }

  /** Publishes one event; returns its id. Rejects with ValidationError (bad topic, payload or option) or EVENT_TOO_LARGE before writing anything. */
  async publish(topic: string, payload: JsonValue, options?: PublishOptions): Promise<string> {
    const [id] = await this.publisher.publishMany([{ topic, payload, ...(options && { options }) }]);
    return id!;
  }

  /** Publishes many events, of any topics, in one round trip; their ids in order. One bad item rejects the call before anything is written. */
  publishMany(items: readonly PublishItem[]): Promise<string[]> {
    return this.publisher.publishMany(items);
  }

  /**
   * Publishes an event with this bus's reply topic as `replyTo` and a new correlationId, and
   * resolves with the reply event (its `payload` is the handler's result). Rejects with the error
   * of an event that failed for good, or WAIT_TIMEOUT.
   */
  async request(topic: string, payload: JsonValue, options: RequestOptions = {}): Promise<BusEvent> {
    const { timeoutMs = 30_000, ...publish } = options;
    this.inbox ??= new ReplyInbox(this.conn.redis, () => this.openBlocking(), this.keys);
    const correlationId = newId();
    const waiting = this.inbox.wait(correlationId, timeoutMs);
    try {
      await this.publish(topic, payload, { ...publish, correlationId, replyTo: this.inbox.topic });
    } catch (err) {
      waiting.cancel();
      throw err;
    }
    return waiting.reply;
  }

  /** Every topic published to or subscribed, sorted. */
  topics(): Promise<string[]> {
    return this.readers.topics();
  }

  /** Counts and backlog per topic and subscription (one topic's, or every topic's). */
  stats(topic?: string): Promise<TopicStats[]> {
    return this.readers.stats(topic);
  }

  /** A topic's subscriptions (consumer groups): consumers, pending, lag, retrying, dead letters, counts. */
  groups(topic: string): Promise<GroupInfo[]> {
    return this.readers.groups(topic);
  }

  /** The newest events of a topic, newest first. @default limit 20 */
  async inspect(topic: string, options: { limit?: number } = {}): Promise<InspectedEvent[]> {
    return this.readers.inspect(topic, parseInput(LimitSchema, options.limit ?? 20, "limit"));
  }

  /**
   * Deletes a subscription: its group with its pending events (trimming is no longer held back by
   * them), retries, errors, dead letters and counts. Stop the workers serving it first: a worker
   * still serving it makes the group again. Returns whether it existed.
   */
  async deleteSubscription(topic: string, name: string): Promise<boolean> {
    const k = this.keys;
    const n = await scripts.deleteGroup.run(
      this.conn.redis,
      [
        k.topic(topic),
        k.topicRetries(topic, name),
        k.topicErrors(topic, name),
        k.topicDeadLetters(topic, name),
        k.topicStats(topic),
        k.topicLeases(topic, name),
      ],
      [name],
    );
    return n === 1;
  }

  async close(): Promise<void> {
    await this.inbox?.close();
    for (const r of this.blocking) r.disconnect();
    await closeRedis(this.conn);
  }

  private openBlocking(): Redis {
    const r = openRedis(this.options.redis, "blocking").redis;
    r.on("error", () => {}); // the inbox's loop retries its read
    this.blocking.push(r);
    return r;
  }
}
