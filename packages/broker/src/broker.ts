import { CONSUMER_GROUP, type Keys, LuaScript, parseJsonOr } from "@flotilla/core";
import type { ChainableCommander, Redis } from "ioredis";
import { pairsToObject, type RawEntry } from "./entry.ts";

const lua = (name: string, keys: number) => LuaScript.fromFile(new URL(`../lua/${name}.lua`, import.meta.url), keys);
const scripts = {
  ack: lua("ack", 1),
  deadLetter: lua("dead-letter", 2),
  renew: lua("renew", 1),
  retry: lua("retry", 2),
  promote: lua("promote", 2),
  requeue: lua("requeue", 2),
};

export interface BrokerOptions {
  /** Dead-letter streams keep about this many entries. @default 100_000 */
  deadLetterMaxLen?: number;
}

export interface DeadLetter {
  id: string;
  queue: string;
  entryId: string;
  taskId: string | undefined;
  reason: string;
  /** The entry's fields as they were in the queue. */
  fields: Record<string, string> | null;
  at: number;
  extra: Record<string, unknown>;
}

export interface DeadLetterInput {
  reason: string;
  fields: Record<string, string> | null;
  taskId?: string | undefined;
  extra?: Record<string, unknown>;
}

type StreamReply = Array<[key: string, entries: Array<[id: string, fields: string[] | null]>]> | null;

/**
 * Task queues on Redis Streams. Each queue is one stream read through one consumer group;
 * an entry is acknowledged and deleted when its task is done, or moved to the dead-letter stream.
 */
export class Broker {
  private readonly redis: Redis;
  private readonly keys: Keys;
  private readonly deadLetterMaxLen: number;
  private readonly groups = new Set<string>();

  constructor(redis: Redis, keys: Keys, options: BrokerOptions = {}) {
    this.redis = redis;
    this.keys = keys;
    this.deadLetterMaxLen = options.deadLetterMaxLen ?? 100_000;
    for (const s of Object.values(scripts)) s.install(redis);
  }

  /** Creates the queue's consumer group at id 0, so entries added before any worker ran are read. */
  async ensureGroup(queue: string): Promise<void> {
    if (this.groups.has(queue)) return;
    try {
      await this.redis.xgroup("CREATE", this.keys.queue(queue), CONSUMER_GROUP, "0", "MKSTREAM");
    } catch (err) {
      if (!String((err as Error).message).includes("BUSYGROUP")) throw err;
    }
    this.groups.add(queue);
  }

  queueEnqueue(pipeline: ChainableCommander, queue: string, taskId: string): void {
    pipeline.xadd(this.keys.queue(queue), "*", "task", taskId);
  }

  async enqueue(queue: string, taskId: string): Promise<string> {
    return (await this.redis.xadd(this.keys.queue(queue), "*", "task", taskId)) as string;
  }

  /** Holds a task back until `dueAt` (ms since the epoch); a worker moves it into the queue then. */
  async schedule(queue: string, taskId: string, dueAt: number): Promise<void> {
    await this.redis.zadd(this.keys.delayed(queue), dueAt, taskId);
  }

  /** Queues the move of an entry `consumer` owns to the delayed set, due at `dueAt`. */
  queueRetry(pipeline: ChainableCommander, queue: string, consumer: string, entryId: string, taskId: string, dueAt: number): void {
    scripts.retry.queue(pipeline, [this.keys.queue(queue), this.keys.delayed(queue)], [CONSUMER_GROUP, consumer, entryId, taskId, dueAt]);
  }

  /** Moves up to `max` due tasks into the queue; returns how many, and when the next one is due. */
  async promote(queue: string, now = Date.now(), max = 1000): Promise<{ moved: number; nextDueAt: number | undefined }> {
    const [moved, next] = (await scripts.promote.run(this.redis, [this.keys.queue(queue), this.keys.delayed(queue)], [now, max])) as [
      number,
      string,
    ];
    return { moved, nextDueAt: next ? Number(next) : undefined };
  }

  /** Sends a dead letter's task back to the queue and deletes the dead letter; false if it was gone. */
  async requeueDeadLetter(queue: string, deadLetterId: string, taskId: string): Promise<boolean> {
    const done = await scripts.requeue.run(this.redis, [this.keys.queue(queue), this.keys.deadLetters(queue)], [deadLetterId, taskId]);
    return done === 1;
  }

  async getDeadLetter(queue: string, deadLetterId: string): Promise<DeadLetter | undefined> {
    const [found] = await this.listDeadLetters(queue, { from: deadLetterId, count: 1 });
    return found?.id === deadLetterId ? found : undefined;
  }

  /**
   * Claims up to `count` new entries across `queues` for `consumer`, blocking up to `blockMs`.
   * `blocking` must be a connection used for nothing else.
   */
  async claim(blocking: Redis, consumer: string, queues: readonly string[], count: number, blockMs: number): Promise<RawEntry[]> {
    const streamKeys = queues.map((q) => this.keys.queue(q));
    const reply = (await blocking.xreadgroup(
      "GROUP",
      CONSUMER_GROUP,
      consumer,
      "COUNT",
      count,
      "BLOCK",
      blockMs,
      "STREAMS",
      ...streamKeys,
      ...queues.map(() => ">"),
    )) as StreamReply;
    return this.toEntries(reply, streamKeys, queues);
  }

  /** Acknowledges (and deletes) the entries `consumer` still owns; returns how many. */
  queueAck(pipeline: ChainableCommander, queue: string, consumer: string, entryIds: readonly string[]): void {
    scripts.ack.queue(pipeline, [this.keys.queue(queue)], [CONSUMER_GROUP, consumer, ...entryIds]);
  }

  async ack(queue: string, consumer: string, ...entryIds: string[]): Promise<number> {
    return (await scripts.ack.run(this.redis, [this.keys.queue(queue)], [CONSUMER_GROUP, consumer, ...entryIds])) as number;
  }

  /**
   * Renews the leases of the entries `consumer` holds (resets their idle time) and returns the ids
   * it no longer owns: another worker reclaimed them after their lease lapsed here.
   */
  async renew(queue: string, consumer: string, entryIds: readonly string[]): Promise<string[]> {
    if (entryIds.length === 0) return [];
    return (await scripts.renew.run(this.redis, [this.keys.queue(queue)], [CONSUMER_GROUP, consumer, ...entryIds])) as string[];
  }

  /**
   * Claims for `consumer` up to `count` entries whose lease lapsed (idle at least `minIdleMs`),
   * scanning the pending list from `cursor`; returns the cursor to continue from ("0-0": wrapped).
   */
  async reclaim(
    queue: string,
    consumer: string,
    minIdleMs: number,
    count: number,
    cursor = "0-0",
  ): Promise<{ cursor: string; entries: RawEntry[] }> {
    const [next, claimed] = (await this.redis.xautoclaim(
      this.keys.queue(queue),
      CONSUMER_GROUP,
      consumer,
      minIdleMs,
      cursor,
      "COUNT",
      count,
    )) as [string, Array<[string, string[] | null]>, string[]?];
    return { cursor: next, entries: claimed.map(([entryId, pairs]) => ({ queue, entryId, fields: pairsToObject(pairs) })) };
  }

  /** Moves an entry `consumer` owns to the queue's dead-letter stream and acknowledges it, atomically. */
  async deadLetter(queue: string, entryId: string, consumer: string, input: DeadLetterInput): Promise<boolean> {
    const pipeline = this.redis.pipeline();
    this.queueDeadLetter(pipeline, queue, entryId, consumer, input);
    const [[err, moved] = []] = (await pipeline.exec()) ?? [];
    if (err) throw err;
    return moved === 1;
  }

  queueDeadLetter(pipeline: ChainableCommander, queue: string, entryId: string, consumer: string, input: DeadLetterInput): void {
    scripts.deadLetter.queue(
      pipeline,
      [this.keys.queue(queue), this.keys.deadLetters(queue)],
      [
        CONSUMER_GROUP,
        entryId,
        input.reason,
        JSON.stringify(input.fields),
        Date.now(),
        input.taskId ?? "",
        this.deadLetterMaxLen,
        JSON.stringify(input.extra ?? {}),
        consumer,
      ],
    );
  }

  /** Oldest first; `after` pages on from the last id seen. */
  async listDeadLetters(queue: string, options: { count?: number; after?: string; from?: string } = {}): Promise<DeadLetter[]> {
    const rows = await this.redis.xrange(
      this.keys.deadLetters(queue),
      options.from ?? (options.after ? `(${options.after}` : "-"),
      "+",
      "COUNT",
      options.count ?? 100,
    );
    return rows.map(([id, pairs]) => {
      const f = pairsToObject(pairs) ?? {};
      return {
        id,
        queue,
        entryId: f.entryId ?? "",
        taskId: f.taskId || undefined,
        reason: f.reason ?? "",
        fields: parseJsonOr(f.fields, f.fields ?? null) as Record<string, string> | null,
        at: Number(f.at ?? 0),
        extra: parseJsonOr(f.extra, {}) as Record<string, unknown>,
      };
    });
  }

  /** Entries waiting to be claimed, claimed but not yet done, and held back for later. */
  async depth(queue: string): Promise<{ waiting: number; inFlight: number; delayed: number }> {
    const key = this.keys.queue(queue);
    const [[, len], [, pending], [, delayed]] = (await this.redis
      .pipeline()
      .xlen(key)
      .xpending(key, CONSUMER_GROUP)
      .zcard(this.keys.delayed(queue))
      .exec()
      .catch(() => [
        [null, 0],
        [null, [0]],
        [null, 0],
      ])) as [[unknown, number], [unknown, [number] | null], [unknown, number]];
    const inFlight = Number(pending?.[0] ?? 0);
    return { waiting: Math.max(0, Number(len ?? 0) - inFlight), inFlight, delayed: Number(delayed ?? 0) };
  }

  private toEntries(reply: StreamReply, streamKeys: readonly string[], queues: readonly string[]): RawEntry[] {
    if (!reply) return [];
    const out: RawEntry[] = [];
    for (const [key, entries] of reply) {
      const queue = queues[streamKeys.indexOf(key)] ?? key;
      for (const [entryId, pairs] of entries) out.push({ queue, entryId, fields: pairsToObject(pairs) });
    }
    return out;
  }
}
