import { Broker } from "@flotilla/broker";
import type { Keys } from "@flotilla/core";
import { type RedisMemory, readRedisMemory } from "@flotilla/core/redis";
import { getFleetStatus } from "@flotilla/health";
import { readQueueStats } from "@flotilla/store";
import type { Redis } from "ioredis";

/** What alert rules look at, per queue: live state, and the fleet's figures over the window. */
export interface QueueState {
  queue: string;
  waiting: number;
  inFlight: number;
  delayed: number;
  /** Live workers that serve this queue. */
  liveWorkers: number;
  /** Outcomes recorded by the fleet within the window. */
  completed: number;
  failed: number;
  cancelled: number;
  retried: number;
  /** 95th percentile of how long tasks waited before they first started, within the window (ms; bucket upper bound). */
  waitP95Ms: number | undefined;
  /** Redis's memory (INFO), the same for every queue. */
  redisMemory: RedisMemory;
}

/** The figures a rule of scope "redis" judges once for the whole Redis: the queue is "*", every count 0. */
export const redisWide = (redisMemory: RedisMemory): QueueState => ({
  queue: "*",
  waiting: 0,
  inFlight: 0,
  delayed: 0,
  liveWorkers: 0,
  completed: 0,
  failed: 0,
  cancelled: 0,
  retried: 0,
  waitP95Ms: undefined,
  redisMemory,
});

/** Reads every queue's state and the fleet's statistics over the last `windowMs`, and Redis's memory. */
export async function readFleetFigures(redis: Redis, keys: Keys, queues: readonly string[], windowMs: number, now = Date.now()): Promise<QueueState[]> {
  const broker = new Broker(redis, keys);
  const fleet = await getFleetStatus(redis, keys);
  const redisMemory = await readRedisMemory(redis);
  const out: QueueState[] = [];
  for (const queue of queues) {
    const depth = await broker.depth(queue);
    const stats = await readQueueStats(redis, keys, queue, windowMs, now);
    out.push({
      queue,
      waiting: depth.waiting,
      inFlight: depth.inFlight,
      delayed: depth.delayed,
      liveWorkers: fleet.workers.filter((w) => w.alive && (w.queues ?? []).includes(queue)).length,
      ...stats,
      redisMemory,
    });
  }
  return out;
}
