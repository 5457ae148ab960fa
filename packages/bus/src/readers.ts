import type { Keys } from "@flotilla/core";
import type { Redis } from "ioredis";
import { type BusEvent, decodeEvent, publishedAtOf } from "./event.ts";
import { fieldsOf } from "./util.ts";

/** A subscriber group on a topic, as Redis and the bus's counters know it. */
export interface GroupInfo {
  /** The subscription's name. */
  name: string;
  /** Consumers the group knows (live ones and those not yet forgotten). */
  consumers: number;
  /** Events delivered and not yet settled (being handled, or waiting for a retry). */
  pending: number;
  /** Events of the topic not yet delivered to the group (null when Redis cannot tell, after trims of unread entries). */
  lag: number | null;
  /** The last event delivered to the group. */
  lastDeliveredId: string;
  /** Failed events waiting for their next delivery. */
  retrying: number;
  /** Dead letters the group holds. */
  deadLetters: number;
  counts: GroupCounts;
}

export interface GroupCounts {
  delivered: number;
  acked: number;
  retried: number;
  reclaimed: number;
  dead: number;
}

export interface TopicStats {
  topic: string;
  /** Entries the stream holds now. */
  length: number;
  published: number;
  groups: GroupInfo[];
}

/** An entry of a topic as `inspect()` shows it: the event, or why it cannot be read. */
export type InspectedEvent = BusEvent | { id: string; topic: string; publishedAt: number; malformed: string; fields: Record<string, string> };

const COUNTS = ["delivered", "acked", "retried", "reclaimed", "dead"] as const;

/** Reads topics, their groups and their events: what `Bus.stats()`, `groups()`, `topics()` and `inspect()` answer. */
export class BusReaders {
  private readonly redis: Redis;
  private readonly keys: Keys;

  constructor(redis: Redis, keys: Keys) {
    this.redis = redis;
    this.keys = keys;
  }

  /** Every topic published to or subscribed (the bus's own `_` topics left out), sorted. */
  async topics(): Promise<string[]> {
    return (await this.redis.smembers(this.keys.topics())).filter((t) => !t.startsWith("_")).sort();
  }

  async groups(topic: string): Promise<GroupInfo[]> {
    const stream = this.keys.topic(topic);
    const [groups, stats] = await Promise.all([
      this.redis.xinfo("GROUPS", stream).catch((err: Error) => {
        if (err.message.includes("no such key")) return [];
        throw err;
      }) as Promise<unknown[][]>,
      this.redis.hgetall(this.keys.topicStats(topic)),
    ]);
    const infos = groups.map(fieldsOf);
    const sizes = await Promise.all(
      infos.map(async (g) => {
        const name = String(g.name);
        const p = this.redis.pipeline();
        p.zcard(this.keys.topicRetries(topic, name));
        p.xlen(this.keys.topicDeadLetters(topic, name));
        const replies = (await p.exec()) ?? [];
        return { retrying: Number(replies[0]?.[1] ?? 0), dead: Number(replies[1]?.[1] ?? 0) };
      }),
    );
    return infos.map((g, i) => {
      const name = String(g.name);
      const counts = Object.fromEntries(COUNTS.map((c) => [c, Number(stats[`${name}:${c}`] ?? 0)])) as unknown as GroupCounts;
      return {
        name,
        consumers: Number(g.consumers ?? 0),
        pending: Number(g.pending ?? 0),
        lag: g.lag === null || g.lag === undefined ? null : Number(g.lag),
        lastDeliveredId: String(g["last-delivered-id"]),
        retrying: sizes[i]!.retrying,
        deadLetters: sizes[i]!.dead,
        counts,
      };
    });
  }

  /** A topic's figures, or every topic's. */
  async stats(topic?: string): Promise<TopicStats[]> {
    const topics = topic === undefined ? await this.topics() : [topic];
    return Promise.all(
      topics.map(async (t) => {
        const [length, published, groups] = await Promise.all([
          this.redis.xlen(this.keys.topic(t)),
          this.redis.hget(this.keys.topicStats(t), "published"),
          this.groups(t),
        ]);
        return { topic: t, length, published: Number(published ?? 0), groups };
      }),
    );
  }

  /** The newest `limit` events of a topic, newest first; an entry the bus cannot read is shown as it is, with why. */
  async inspect(topic: string, limit: number): Promise<InspectedEvent[]> {
    const entries = (await this.redis.xrevrange(this.keys.topic(topic), "+", "-", "COUNT", limit)) as Array<[string, string[]]>;
    return entries.map(([id, fields]) => {
      try {
        return decodeEvent(topic, id, fields);
      } catch (err) {
        const f: Record<string, string> = {};
        for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
        return { id, topic, publishedAt: publishedAtOf(id), malformed: err instanceof Error ? err.message : String(err), fields: f };
      }
    });
  }
}
