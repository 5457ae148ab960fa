import { checkJsonDepth, DEFAULTS, ErrorCodes, FlotillaError, type JsonValue, type Keys, parseInput, ValidationError } from "@flotilla/core";
import { pipelineBySlot } from "@flotilla/core/redis";
import { type FlotillaMetrics, METRICS } from "@flotilla/metrics";
import type { Redis } from "ioredis";
import { AnyTopicSchema, type EventMeta, type PublishOptions, PublishOptionsSchema, type ResolvedBusTuning } from "./schemas.ts";
import { scripts } from "./scripts.ts";

/** Reply topics (`_reply.<id>`) expire this long after their last reply: a requester that died leaves nothing behind. */
export const REPLY_TOPIC_TTL_MS = 3_600_000;
/** Entries over maxLen before a publish tries to trim. */
const slackOf = (maxLen: number) => Math.max(100, Math.floor(maxLen / 10));

/** One event of a `publishMany` call. */
export interface PublishItem {
  topic: string;
  payload: JsonValue;
  options?: PublishOptions;
  /** A reply's error (the bus sets it on the reply to an event that failed for good). */
  error?: { code: string; message: string };
}

/** An event checked and encoded, ready for the publish script. */
interface Encoded {
  topic: string;
  idem: string;
  windowMs: number;
  payload: string;
  meta: string;
}

/**
 * Writes events: validates them (topic name, JSON payload within the size and depth caps, options), then one
 * publish script call per topic, all in one round trip. Knows which topics it registered in the
 * topic set, so listing costs a publish nothing after the first.
 */
export class Publisher {
  private readonly known = new Set<string>();

  private readonly redis: Redis;
  private readonly keys: Keys;
  private readonly tuning: ResolvedBusTuning;
  private readonly metrics: FlotillaMetrics;

  constructor(redis: Redis, keys: Keys, tuning: ResolvedBusTuning, metrics: FlotillaMetrics) {
    this.metrics = metrics;
    this.redis = redis;
    this.keys = keys;
    this.tuning = tuning;
  }

  async publishMany(items: readonly PublishItem[]): Promise<string[]> {
    if (items.length === 0) return [];
    const encoded = items.map((item, i) => this.encode(item, items.length > 1 ? `items.${i}` : ""));
    await this.register(encoded.map((e) => e.topic));
    const byTopic = Map.groupBy(encoded.keys(), (i) => encoded[i]!.topic);
    const streams = new Map([...byTopic.keys()].map((t) => [this.keys.topic(t), t]));
    scripts.publish.install(this.redis);
    const replies = await pipelineBySlot(this.redis, [...streams.keys()], (pipeline, stream) => {
      const topic = streams.get(stream)!;
      const args: Array<string | number> = [
        this.tuning.maxLen,
        slackOf(this.tuning.maxLen),
        this.keys.topicBase(topic),
        topic.startsWith("_reply.") ? REPLY_TOPIC_TTL_MS : 0,
      ];
      for (const i of byTopic.get(topic)!) {
        const e = encoded[i]!;
        args.push(e.idem, e.windowMs, e.payload, e.meta);
      }
      scripts.publish.queue(pipeline, [stream, this.keys.topicStats(topic), `${this.keys.topicBase(topic)}trimhint`], args);
    });
    const ids = new Array<string>(items.length);
    [...streams.values()].forEach((topic, t) => {
      const [err, got] = replies[t]!;
      if (err) throw scripts.publish.typed(err);
      const indexes = byTopic.get(topic)!;
      indexes.forEach((i, j) => {
        ids[i] = (got as string[])[j]!;
      });
      this.metrics.add(METRICS.busPublished, indexes.length, { topic });
    });
    return ids;
  }

  private encode(item: PublishItem, at: string): Encoded {
    const where = (field: string) => (at ? `${at}.${field}` : field);
    const topic = AnyTopicSchema.safeParse(item.topic);
    if (!topic.success)
      throw ValidationError.of("publish", where("topic"), `invalid topic "${String(item.topic)}": use letters, digits and _ . - only, at most 64`);
    const options = parseInput(PublishOptionsSchema, item.options ?? {}, "publish options");
    // Consumers dead-letter a payload nested deeper than this as MALFORMED_EVENT (decodeEvent): refused
    // here instead, before anything is written; checked before JSON.stringify, which overflows the stack on a deep enough one.
    checkJsonDepth(item.payload, DEFAULTS.maxJsonDepth, where("payload"));
    let payload: string | undefined;
    try {
      payload = JSON.stringify(item.payload);
    } catch (err) {
      throw ValidationError.of("publish", where("payload"), `not JSON: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (payload === undefined) throw ValidationError.of("publish", where("payload"), "not JSON (undefined, a function or a symbol)");
    const bytes = Buffer.byteLength(payload);
    if (bytes > this.tuning.maxPayloadBytes) {
      throw new FlotillaError(
        ErrorCodes.EVENT_TOO_LARGE,
        `the payload of an event of ${item.topic} is ${bytes} bytes, over the bus's maxPayloadBytes (${this.tuning.maxPayloadBytes})`,
        {
          retryable: false,
        },
      );
    }
    const meta: EventMeta = {
      correlationId: options.correlationId,
      causationId: options.causationId,
      source: options.source ?? this.tuning.source,
      replyTo: options.replyTo,
      webhook: options.webhook,
      headers: options.headers,
      error: item.error,
    };
    return {
      topic: topic.data,
      idem: options.idempotencyKey ?? "",
      windowMs: options.idempotencyWindowMs,
      payload,
      meta: JSON.stringify(meta),
    };
  }

  /** Adds topics this process has not yet registered to the topic set (one command, only for new ones). */
  private async register(topics: readonly string[]): Promise<void> {
    const fresh = [...new Set(topics)].filter((t) => !this.known.has(t) && !t.startsWith("_reply."));
    if (fresh.length === 0) return;
    await this.redis.sadd(this.keys.topics(), ...fresh);
    for (const t of fresh) this.known.add(t);
  }
}
