import { createKeys, ErrorCodes, type JsonValue, type Keys, LifecycleError, newId, parseInput, ValidationError } from "@flotilla/core";
import {
  CONNECTION_OPTION_KEYS,
  type ConnectionOptions,
  closeRedis,
  disconnectRedis,
  type OwnedRedis,
  openRedis,
  type ResolvedConnectionOptions,
  resolveConnectionOptions,
  withRedis,
} from "@flotilla/core/redis";
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

/**
 * The client's connection options (`redis`, `prefix`, `connectTimeoutMs`, read as every entry point
 * reads them: the option, else REDIS_CLUSTER_NODES / REDIS_URL / FLOTILLA_PREFIX, else the default),
 * the bus's tuning, and where its metrics go. Any other key is a ValidationError naming it.
 */
export interface BusOptions extends ConnectionOptions, BusTuning {
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

  private readonly connection: ResolvedConnectionOptions;
  private closed = false;

  constructor(options: BusOptions = {}) {
    const { redis, prefix, connectTimeoutMs, metrics, ...tuning } = options ?? {};
    this.connection = resolveConnectionOptions({ redis, prefix, connectTimeoutMs });
    const parsedTuning = parseBusTuning(tuning);
    this.conn = openRedis(this.connection.redis, "command", { failFast: true, connectTimeoutMs: this.connection.connectTimeoutMs });
    this.conn.redis.on("error", () => {}); // surfaced per command as ConnectionError
    this.keys = createKeys(this.connection.prefix);
    this.publisher = new Publisher(this.conn.redis, this.keys, parsedTuning, metrics ?? defaultMetrics());
    this.readers = new BusReaders(this.conn.redis, this.keys);
    this.deadLetters = new BusDeadLetters(this.conn.redis, this.keys);
  }

  /** Publishes one event; returns its id. Rejects with ValidationError (bad topic, payload or option) or EVENT_TOO_LARGE before writing anything. */
  async publish(topic: string, payload: JsonValue, options?: PublishOptions): Promise<string> {
    const [id] = await this.publishMany([{ topic, payload, ...(options && { options }) }]);
    return id!;
  }

  /** Publishes many events, of any topics, in one round trip; their ids in order. One bad item rejects the call before anything is written. */
  publishMany(items: readonly PublishItem[]): Promise<string[]> {
    return this.run(() => this.publisher.publishMany(items));
  }

  /**
   * Publishes an event with this bus's reply topic as `replyTo` and a new correlationId, and
   * resolves with the reply event (its `payload` is the handler's result). Rejects with the error
   * of an event that failed for good, or WAIT_TIMEOUT.
   */
  async request(topic: string, payload: JsonValue, options: RequestOptions = {}): Promise<BusEvent> {
    const { timeoutMs = 30_000, ...publish } = options;
    if (this.closed) throw new LifecycleError(ErrorCodes.CLOSED, "the bus is closed");
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
    return this.run(() => this.readers.topics());
  }

  /** Counts and backlog per topic and subscription (one topic's, or every topic's). */
  stats(topic?: string): Promise<TopicStats[]> {
    return this.run(() => this.readers.stats(topic));
  }

  /** A topic's subscriptions (consumer groups): consumers, pending, lag, retrying, dead letters, counts. */
  groups(topic: string): Promise<GroupInfo[]> {
    return this.run(() => this.readers.groups(topic));
  }

  /** The newest events of a topic, newest first. @default limit 20 */
  async inspect(topic: string, options: { limit?: number } = {}): Promise<InspectedEvent[]> {
    const limit = parseInput(LimitSchema, options.limit ?? 20, "limit");
    return this.run(() => this.readers.inspect(topic, limit));
  }

  /**
   * Deletes a subscription: its group with its pending events (trimming is no longer held back by
   * them), retries, errors, dead letters and counts. Stop the workers serving it first: a worker
   * still serving it makes the group again. Returns whether it existed.
   */
  async deleteSubscription(topic: string, name: string): Promise<boolean> {
    const k = this.keys;
    const n = await this.run(() =>
      scripts.deleteGroup.run(
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
      ),
    );
    return n === 1;
  }

  /**
   * Closes the bus's connections, reachable or not: a request still waiting rejects with CLOSED, a
   * command still waiting for Redis rejects, and nothing is left to keep the process alive.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.inbox?.close();
    for (const r of this.blocking) disconnectRedis(r);
    await closeRedis(this.conn);
  }

  /** Runs a command of the bus: a lost connection is a ConnectionError in Flotilla's words, a closed bus CLOSED. */
  private run<T>(op: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new LifecycleError(ErrorCodes.CLOSED, "the bus is closed"));
    return withRedis(this.conn.redis, op);
  }

  private openBlocking(): Redis {
    const r = openRedis(this.connection.redis, "blocking", { connectTimeoutMs: this.connection.connectTimeoutMs }).redis;
    r.on("error", () => {}); // the inbox's loop retries its read
    this.blocking.push(r);
    return r;
  }
}

/**
 * The bus's tuning, checked strictly. A key that is neither tuning nor a connection option is named
 * as unknown here, rather than by the tuning schema alone, which does not know the connection options.
 */
function parseBusTuning(tuning: Record<string, unknown>) {
  const known = new Set<string>([...CONNECTION_OPTION_KEYS, "metrics", ...Object.keys(BusOptionsSchema.shape)]);
  const unknown = Object.keys(tuning).find((key) => !known.has(key));
  if (unknown !== undefined) throw ValidationError.of("bus options", unknown, "is not a Bus option");
  return parseInput(BusOptionsSchema, tuning, "bus options");
}
