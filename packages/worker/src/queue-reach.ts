import type { Keys, Logger } from "@flotilla/core";
import { asCluster, isConnectionFailure, keySlot } from "@flotilla/core/redis";
import type { Redis } from "ioredis";

/** How often a queue out of reach is asked again whether it answers (one question at a time per queue). */
export const QUEUE_RECHECK_MS = 250;

/**
 * Which of a worker's queues can be reached now, on a Redis Cluster: a master that dies takes its
 * slots' queues out of reach until its replica takes over (seconds: the cluster's node timeout and an
 * election), while the other masters' queues answer as before. A call to a queue on the dead master
 * waits out ioredis's redirections (seconds) before it fails; every such call the claim loop made in
 * turn (claims, promotion, reclaim scans, the blocking read) held up the queues of the masters that
 * answer. So a queue is marked out of reach the moment the cluster drops the connection to its
 * master, or a call to it fails for want of a connection, and the worker leaves it alone — no claim,
 * scan, promotion or read — while one question at a time (EXISTS on its lane, every
 * QUEUE_RECHECK_MS) waits for it to answer again. On a single Redis every queue is always in reach:
 * the worker's link (RedisLink) judges the one connection.
 */
export class QueueReach {
  private readonly redis: Redis;
  private readonly keys: Keys;
  private readonly queues: readonly string[];
  private readonly log: Logger;
  private readonly onBack: () => void;
  /** Out of reach, with whether a question to it is out. */
  private readonly out = new Map<string, { asking: boolean }>();
  private timer: NodeJS.Timeout | undefined;
  private off: (() => void) | undefined;

  /** `onBack`: told when a queue answers again (the claim loop looks again). */
  constructor(redis: Redis, keys: Keys, queues: readonly string[], log: Logger, onBack: () => void) {
    this.redis = redis;
    this.keys = keys;
    this.queues = queues;
    this.log = log;
    this.onBack = onBack;
  }

  start(): void {
    const cluster = asCluster(this.redis);
    if (!cluster || this.off) return;
    const dropped = (node: Redis) => {
      const key = `${node.options?.host ?? "127.0.0.1"}:${node.options?.port ?? 6379}`;
      for (const queue of this.queues) {
        const master = (cluster.slots[keySlot(this.keys.queue(queue))] as string[] | undefined)?.[0];
        if (master === key) this.markOut(queue, `the cluster lost its connection to ${key}, the master of its slot`);
      }
    };
    cluster.on("-node", dropped);
    this.off = () => cluster.off("-node", dropped);
    this.timer = setInterval(() => this.recheck(), QUEUE_RECHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.off?.();
    this.off = undefined;
  }

  /** Whether calls to `queue` go out: not known to be out of reach. */
  usable(queue: string): boolean {
    return !this.out.has(queue);
  }

  /** The queues in reach, of `queues`. */
  usableOf(queues: readonly string[]): string[] {
    return this.out.size === 0 ? [...queues] : queues.filter((q) => !this.out.has(q));
  }

  /**
   * What a failed call to `queue` means: on a cluster, a connection failure (its master gone, the
   * cluster redirecting in vain) takes the queue out of reach until it answers again. True when it did.
   */
  failed(queue: string, err: unknown): boolean {
    if (!asCluster(this.redis) || !this.queues.includes(queue) || !isConnectionFailure(err)) return false;
    this.markOut(queue, err instanceof Error ? err.message : String(err));
    return true;
  }

  private markOut(queue: string, why: string): void {
    if (this.out.has(queue)) return;
    this.out.set(queue, { asking: false });
    this.log.warn("queue out of reach: serving the others until its Redis node answers again", { queue, why });
  }

  private recheck(): void {
    for (const [queue, state] of this.out) {
      if (state.asking) continue;
      state.asking = true;
      this.redis.exists(this.keys.queue(queue)).then(
        () => {
          this.out.delete(queue);
          this.log.info("queue in reach again", { queue });
          this.onBack();
        },
        () => {
          state.asking = false;
        },
      );
    }
  }
}
