import { CONSUMER_GROUP, DEFAULT_RETENTION, type Keys, PRIORITIES, type Priority } from "@flotilla/core";
import { isCluster, keySlot } from "@flotilla/core/redis";
import type { ChainableCommander, Redis } from "ioredis";
import { type DeadLetter, type DeadLetterInput, parseDeadLetter } from "./dead-letters.ts";
import { type Lane, pairsToObject, type RawEntry } from "./entry.ts";
import { laneKeys, laneNumber } from "./lanes.ts";
import { scripts } from "./scripts.ts";

export interface BrokerOptions {
  /** Dead-letter streams keep about this many entries. @default DEFAULT_RETENTION.deadLetterMaxLen (100_000) */
  deadLetterMaxLen?: number;
}

/**
 * On a cluster, a worker whose queues lie in several slots cannot wait on all of them in one read
 * (XREADGROUP names keys of one slot): it waits on one slot's queues per read, in turn, at most this
 * long each, so a task on another slot's queue waits for at most this long while the worker idles.
 */
export const MULTI_SLOT_BLOCK_MS = 100;

/**
 * On a cluster, a blocking read waits at most this long: a read blocked on a cluster node cannot be
 * ended early by CLIENT UNBLOCK (it is sent to whichever node the read went to), so a stopping
 * worker waits for it to return.
 */
export const CLUSTER_BLOCK_MS = 1000;

export type StreamReply = Array<[key: string, entries: Array<[id: string, fields: string[] | null]>]> | null;

/**
 * Task queues on Redis Streams. Each queue has three priority lanes (high, normal, low), each a
 * stream read through one consumer group; an entry is acknowledged and deleted when its task is
 * done, put in the lane's delayed set for a retry, or moved to the queue's dead-letter stream.
 * Every write that settles an entry is fenced: only the consumer holding it may make it.
 *
 * The broker owns the lanes, their delayed sets, the dead letters and the claim markers; the
 * store's scripts settle entries through the broker's Lua includes.
 */
export class Broker {
  protected readonly redis: Redis;
  protected readonly keys: Keys;
  private readonly deadLetterMaxLen: number;
  private readonly groups = new Set<string>();
  /** Which slot's queues the next blocking read waits on, when they lie in several (cluster). */
  private blockTurn = 0;

  constructor(redis: Redis, keys: Keys, options: BrokerOptions = {}) {
    this.redis = redis;
    this.keys = keys;
    this.deadLetterMaxLen = options.deadLetterMaxLen ?? DEFAULT_RETENTION.deadLetterMaxLen;
    for (const s of Object.values(scripts)) s.install(redis);
  }

  protected stream(lane: Lane): string {
    return this.keys.lane(lane.queue, lane.priority);
  }

  /**
   * Creates the consumer group of every lane that lacks one (and the lane), at id 0 so entries added
   * before any worker ran are read: one script call, all three lanes or none. Done once per queue on
   * this Broker; `again` does it once more, after a read met NOGROUP (`isMissingGroup`): Redis lost
   * its data (restarted without persistence, or failed over to an empty replica).
   */
  async ensureGroup(queue: string, options: { again?: boolean } = {}): Promise<void> {
    if (this.groups.has(queue) && !options.again) return;
    await scripts.makeGroups.run(this.redis, laneKeys(this.keys, queue), [CONSUMER_GROUP]);
    this.groups.add(queue);
  }

  /**
   * Waits (up to `blockMs`) on `blocking` for new entries in any lane of `queues` and claims up to
   * `count` of them. `blocking` is a connection used for nothing else.
   */
  async block(blocking: Redis, consumer: string, queues: readonly string[], count: number, blockMs: number): Promise<RawEntry[]> {
    if (isCluster(blocking)) {
      const bySlot = [...Map.groupBy(queues, (queue) => keySlot(this.keys.queue(queue))).values()];
      queues = bySlot[this.blockTurn++ % bySlot.length]!;
      blockMs = Math.min(blockMs, bySlot.length > 1 ? MULTI_SLOT_BLOCK_MS : CLUSTER_BLOCK_MS);
    }
    const lanes = PRIORITIES.flatMap((priority) => queues.map((queue) => ({ queue, priority })));
    const reply = (await blocking.xreadgroup(
      "GROUP",
      CONSUMER_GROUP,
      consumer,
      "COUNT",
      count,
      "BLOCK",
      blockMs,
      "STREAMS",
      ...lanes.map((l) => this.stream(l)),
      ...lanes.map(() => ">"),
    )) as StreamReply;
    return this.toEntries(reply, lanes);
  }

  /**
   * Gives back entries of `queue` that `consumer` read but will not start (a blocking read brought
   * more than it has slots for): each goes to the end of its lane, unread, for any worker to claim.
   * Entries no longer delivered to `consumer` are left alone. Returns how many were given back.
   */
  async release(queue: string, consumer: string, entries: ReadonlyArray<{ priority: Priority; entryId: string; name: string }>): Promise<number> {
    if (entries.length === 0) return 0;
    const args: Array<string | number> = [CONSUMER_GROUP, consumer];
    for (const e of entries) args.push(laneNumber(e.priority), e.entryId, e.name);
    return (await scripts.release.run(this.redis, laneKeys(this.keys, queue), args)) as number;
  }

  /**
   * Renews the leases of the entries `consumer` holds (resets their idle time) and returns the ids
   * it no longer owns: another worker reclaimed them after their lease lapsed here.
   */
  async renew(lane: Lane, consumer: string, entryIds: readonly string[]): Promise<string[]> {
    if (entryIds.length === 0) return [];
    return (await scripts.renew.run(this.redis, [this.stream(lane)], [CONSUMER_GROUP, consumer, ...entryIds])) as string[];
  }

  /**
   * Claims for `consumer` up to `count` entries of a lane whose lease lapsed — idle for at least its
   * holder's lease (as the holder recorded it) and at least `leaseMs`, this consumer's own lease,
   * which is recorded for others to respect — oldest first: every scan starts at the lane's oldest
   * pending entry, so a task whose worker died is taken before any that lapsed after it.
   */
  async reclaim(lane: Lane, consumer: string, leaseMs: number, count: number): Promise<{ entries: RawEntry[] }> {
    const claimed = (await scripts.reclaim.run(
      this.redis,
      [this.stream(lane), this.keys.leases(lane.queue)],
      [CONSUMER_GROUP, consumer, leaseMs, count],
    )) as Array<[string, string[] | null]>;
    return { entries: claimed.map(([entryId, pairs]) => ({ ...lane, entryId, fields: pairsToObject(pairs) })) };
  }

  /**
   * Forgets the consumers of `queue`'s lanes that hold no entry and have been silent for
   * `minIdleMs` (workers that are gone), except `keep`; returns how many were forgotten.
   */
  async pruneConsumers(queue: string, minIdleMs: number, keep: string): Promise<number> {
    const pipeline = this.redis.pipeline();
    for (const priority of PRIORITIES) {
      scripts.pruneConsumers.queue(pipeline, [this.keys.lane(queue, priority), this.keys.leases(queue)], [CONSUMER_GROUP, minIdleMs, keep]);
    }
    let forgotten = 0;
    for (const [err, names] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      forgotten += (names as string[]).length;
    }
    return forgotten;
  }

  /**
   * Moves due tasks of every lane of `queue` into their lanes (due by Redis's clock, unless a test
   * fixes `now`); returns how many, and when the next is due on this process's clock.
   */
  async promote(queue: string, now?: number, max = 1000): Promise<{ moved: number; nextDueAt: number | undefined }> {
    const pipeline = this.redis.pipeline();
    for (const priority of PRIORITIES) {
      scripts.promote.queue(pipeline, [this.keys.lane(queue, priority), this.keys.delayed(queue, priority)], [now ?? "", max, CONSUMER_GROUP]);
    }
    let moved = 0;
    let nextDueAt: number | undefined;
    for (const [err, reply] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      // The script answers a delay: this process's clock may differ from Redis's.
      const [n, dueIn] = reply as [number, string | number];
      moved += n;
      if (dueIn !== "") nextDueAt = Math.min(nextDueAt ?? Number.POSITIVE_INFINITY, (now ?? Date.now()) + Number(dueIn));
    }
    return { moved, nextDueAt };
  }

  /** Moves an entry `consumer` owns to the queue's dead-letter stream and acknowledges it, atomically. */
  async deadLetter(lane: Lane, entryId: string, consumer: string, input: DeadLetterInput): Promise<boolean> {
    const pipeline = this.redis.pipeline();
    this.queueDeadLetter(pipeline, lane, entryId, consumer, input);
    const [[err, moved] = []] = (await pipeline.exec()) ?? [];
    if (err) throw err;
    return moved === 1;
  }

  /** The same, queued on a pipeline. */
  queueDeadLetter(pipeline: ChainableCommander, lane: Lane, entryId: string, consumer: string, input: DeadLetterInput): void {
    scripts.deadLetter.queue(
      pipeline,
      [this.stream(lane), this.keys.deadLetters(lane.queue)],
      [
        CONSUMER_GROUP,
        entryId,
        input.reason,
        JSON.stringify(input.fields),
        "", // now: Redis's clock
        input.taskId ?? "",
        this.deadLetterMaxLen,
        JSON.stringify({ ...input.extra, priority: lane.priority }),
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
    return rows.map((row) => parseDeadLetter(queue, row));
  }

  async getDeadLetter(queue: string, deadLetterId: string): Promise<DeadLetter | undefined> {
    const [found] = await this.listDeadLetters(queue, { from: deadLetterId, count: 1 });
    return found?.id === deadLetterId ? found : undefined;
  }

  /**
   * Entries waiting to be claimed, claimed but not yet done, and held back for later, over all
   * lanes; and how long the oldest waiting entry has waited (ms on Redis's clock; 0 when none waits):
   * a queue's lag, what autoscaling reads beside its backlog.
   */
  async depth(queue: string): Promise<QueueDepth> {
    const pipeline = this.redis.pipeline().time();
    for (const priority of PRIORITIES) {
      const key = this.keys.lane(queue, priority);
      pipeline.xlen(key).xpending(key, CONSUMER_GROUP).zcard(this.keys.delayed(queue, priority)).xinfo("GROUPS", key);
    }
    pipeline.xlen(this.keys.deadLetters(queue));
    const replies = (await pipeline.exec()) ?? [];
    const [seconds, micros] = (replies[0]?.[1] as [string, string] | undefined) ?? [String(Date.now() / 1000), "0"];
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    let waiting = 0;
    let inFlight = 0;
    let delayed = 0;
    const lanes = { high: 0, normal: 0, low: 0 };
    const dead = Number(replies[1 + PRIORITIES.length * 4]?.[1] ?? 0);
    const behind: Array<{ key: string; lastDelivered: string }> = [];
    PRIORITIES.forEach((priority, lane) => {
      const at = 1 + lane * 4;
      // A lane whose group does not exist yet answers XPENDING with an error: nothing is in flight there.
      const len = Number(replies[at]?.[1] ?? 0);
      const pending = replies[at + 1]?.[0] ? 0 : Number((replies[at + 1]?.[1] as [number] | null)?.[0] ?? 0);
      const group = replies[at + 3]?.[0] ? undefined : groupInfo(replies[at + 3]?.[1], CONSUMER_GROUP);
      // Waiting: what the group has not read yet, its lag. A lane keeps acknowledged entries above its
      // oldest pending one until a settle trims them (see flushAcks.lua), so its length less what is
      // pending over-counts; that is only the fallback for a lag Redis cannot tell.
      const unread = group?.lag ?? Math.max(0, len - pending);
      waiting += unread;
      lanes[priority] = unread;
      inFlight += pending;
      delayed += Number(replies[at + 2]?.[1] ?? 0);
      if (unread > 0 && group) behind.push({ key: this.keys.lane(queue, priority), lastDelivered: group.lastDelivered });
    });
    let oldestWaitMs = 0;
    if (behind.length > 0) {
      // The first entry after what the group has delivered is the lane's oldest waiting one (acknowledged entries are deleted).
      const firsts = (await behind.reduce((p, b) => p.xrange(b.key, `(${b.lastDelivered}`, "+", "COUNT", 1), this.redis.pipeline()).exec()) ?? [];
      for (const [err, rows] of firsts) {
        const id = err ? undefined : (rows as Array<[string, string[]]>)[0]?.[0];
        if (id) oldestWaitMs = Math.max(oldestWaitMs, now - Number(id.split("-")[0]));
      }
    }
    return { waiting, lanes, inFlight, delayed, dead, oldestWaitMs };
  }

  /**
   * The newest dead letter of task `taskId` in its queue, looked for newest first (at most `maxScan`
   * letters read, 1,000 a call), or undefined when none is left (never dead-lettered, or trimmed).
   */
  async findDeadLetter(queue: string, taskId: string, maxScan = 100_000): Promise<DeadLetter | undefined> {
    let end = "+";
    for (let scanned = 0; scanned < maxScan; ) {
      const rows = await this.redis.xrevrange(this.keys.deadLetters(queue), end, "-", "COUNT", 1000);
      for (const row of rows) {
        const letter = parseDeadLetter(queue, row);
        if (letter.taskId === taskId) return letter;
      }
      if (rows.length < 1000) return undefined;
      scanned += rows.length;
      end = `(${rows.at(-1)![0]}`;
    }
    return undefined;
  }

  /** Deletes every dead letter of a queue (their tasks' FAILED records stay); returns how many there were. */
  async purgeDeadLetters(queue: string): Promise<number> {
    const [[, count]] = (await this.redis.multi().xlen(this.keys.deadLetters(queue)).del(this.keys.deadLetters(queue)).exec()) as [[unknown, number]];
    return count;
  }

  protected toEntries(reply: StreamReply, lanes: readonly Lane[]): RawEntry[] {
    if (!reply) return [];
    const out: RawEntry[] = [];
    for (const [key, entries] of reply) {
      const lane = lanes.find((l) => this.stream(l) === key);
      if (!lane) continue;
      for (const [entryId, pairs] of entries) out.push({ ...lane, entryId, fields: pairsToObject(pairs) });
    }
    return out;
  }
}

/**
 * True for the error Redis gives a read through a consumer group that does not exist (NOGROUP): the
 * lane or its group is gone, because Redis lost its data. `ensureGroup(queue, { again: true })`
 * makes them again.
 */
export function isMissingGroup(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith("NOGROUP ");
}

/** A queue's entries over its lanes (see Broker.depth). */
export interface QueueDepth {
  /** Entries waiting to be claimed. */
  waiting: number;
  /** Claimed and not yet done. */
  inFlight: number;
  /** Waiting entries per lane. */
  lanes: Record<Priority, number>;
  /** Held back for a retry or a scheduled start. */
  delayed: number;
  /** Entries in its dead letters. */
  dead: number;
  /** How long the oldest waiting entry has waited (ms, Redis's clock; 0 when none waits). */
  oldestWaitMs: number;
}

/** A consumer group's last delivered entry, from an XINFO GROUPS reply. */
function groupInfo(reply: unknown, name: string): { lastDelivered: string; lag: number | undefined } | undefined {
  for (const g of (reply as unknown[][] | null) ?? []) {
    const fields: Record<string, unknown> = {};
    for (let i = 0; i + 1 < g.length; i += 2) fields[String(g[i])] = g[i + 1];
    if (fields.name === name) {
      const lag = fields.lag === null || fields.lag === undefined ? undefined : Number(fields.lag);
      return { lastDelivered: String(fields["last-delivered-id"] ?? "0-0"), lag: Number.isFinite(lag) ? lag : undefined };
    }
  }
  return undefined;
}
