import { ErrorCodes, FlotillaError, type Keys, parseJsonOr, type TaskError } from "@flotilla/core";
import { withRedis } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import { type BusEvent, decodeEvent } from "./event.ts";
import { scripts } from "./scripts.ts";

/** A dead letter of a subscriber group: the event, why it is here, how often it was delivered, its last error. */
export interface BusDeadLetter {
  /** The dead letter's own id (in the group's dead-letter stream). */
  id: string;
  /** The event's id in its topic. */
  eventId: string;
  topic: string;
  subscription: string;
  /** `RETRIES_EXHAUSTED`, or the code of the error that sent it here at once (UNRECOVERABLE, MALFORMED_EVENT, …). */
  reason: string;
  /** Deliveries made. */
  attempts: number;
  error: TaskError | undefined;
  failedAt: number;
  /** The event as published, or undefined when it could not be read (then `raw` has its fields). */
  event: BusEvent | undefined;
  raw: Record<string, string>;
}

/** A subscriber group's dead letters: list, get, re-publish, purge. */
export class BusDeadLetters {
  private readonly redis: Redis;
  private readonly keys: Keys;

  constructor(redis: Redis, keys: Keys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** Oldest first, `limit` at most, after `after` (a dead-letter id) for paging. */
  list(topic: string, subscription: string, options: { limit?: number; after?: string } = {}): Promise<BusDeadLetter[]> {
    return withRedis(this.redis, () => this.listNow(topic, subscription, options));
  }

  get(topic: string, subscription: string, id: string): Promise<BusDeadLetter | undefined> {
    return withRedis(this.redis, () => this.getNow(topic, subscription, id));
  }

  /**
   * Publishes dead letters again as new events of the topic (every subscription gets them) and
   * removes them; all of the group's when `ids` is not given (up to 10,000 per call). Returns the
   * new event ids by dead-letter id; one that is not there (or cannot be read) is a DEAD_LETTER_NOT_FOUND error.
   */
  republish(topic: string, subscription: string, ids?: readonly string[]): Promise<Record<string, string>> {
    return withRedis(this.redis, () => this.republishNow(topic, subscription, ids));
  }

  /** Deletes the group's dead letters; returns how many there were. */
  purge(topic: string, subscription: string): Promise<number> {
    return withRedis(this.redis, () => this.purgeNow(topic, subscription));
  }

  private async listNow(topic: string, subscription: string, options: { limit?: number; after?: string } = {}): Promise<BusDeadLetter[]> {
    const start = options.after ? `(${options.after}` : "-";
    const entries = (await this.redis.xrange(this.keys.topicDeadLetters(topic, subscription), start, "+", "COUNT", options.limit ?? 100)) as Array<
      [string, string[]]
    >;
    return entries.map(([id, fields]) => toDeadLetter(topic, subscription, id, fields));
  }

  private async getNow(topic: string, subscription: string, id: string): Promise<BusDeadLetter | undefined> {
    const [entry] = (await this.redis.xrange(this.keys.topicDeadLetters(topic, subscription), id, id)) as Array<[string, string[]]>;
    return entry && toDeadLetter(topic, subscription, entry[0], entry[1]);
  }

  private async republishNow(topic: string, subscription: string, ids?: readonly string[]): Promise<Record<string, string>> {
    const dead = this.keys.topicDeadLetters(topic, subscription);
    const which = ids ?? ((await this.redis.xrange(dead, "-", "+", "COUNT", 10_000)) as Array<[string, string[]]>).map(([id]) => id);
    if (which.length === 0) return {};
    const out = (await scripts.republish.run(this.redis, [dead, this.keys.topic(topic), this.keys.topicStats(topic)], which)) as Array<
      [string, string | false | null]
    >;
    const missing = out.filter(([, n]) => !n).map(([id]) => id);
    if (missing.length > 0) {
      throw new FlotillaError(ErrorCodes.DEAD_LETTER_NOT_FOUND, `no dead letter ${missing.join(", ")} of ${topic}/${subscription} to publish again`, {
        details: { republished: Object.fromEntries(out.filter(([, n]) => n)) },
      });
    }
    return Object.fromEntries(out as Array<[string, string]>);
  }

  private async purgeNow(topic: string, subscription: string): Promise<number> {
    const dead = this.keys.topicDeadLetters(topic, subscription);
    const replies = (await this.redis.pipeline().xlen(dead).del(dead).exec()) ?? [];
    return Number(replies[0]?.[1] ?? 0);
  }
}

function toDeadLetter(topic: string, subscription: string, id: string, fields: string[]): BusDeadLetter {
  const f: Record<string, string> = {};
  const raw: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i]!;
    if (name.startsWith("f:")) raw[name.slice(2)] = fields[i + 1]!;
    else f[name] = fields[i + 1]!;
  }
  const eventId = f.event ?? "";
  let event: BusEvent | undefined;
  try {
    event = decodeEvent(topic, eventId, Object.entries(raw).flat());
  } catch {
    event = undefined;
  }
  return {
    id,
    eventId,
    topic,
    subscription,
    reason: f.reason ?? "",
    attempts: Number(f.attempts ?? 0),
    error: parseJsonOr(f.error, undefined) as TaskError | undefined,
    failedAt: Number(f.failedAt ?? 0),
    event,
    raw,
  };
}
