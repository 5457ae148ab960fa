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
  /** Live workers that serve this queue (in the fleet-wide figures: every live worker). */
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

/** What rules of scope "fleet" and "redis" judge, once: the queue is "*", counts summed over the queues, every live worker. */
function fleetWide(queues: readonly QueueState[], liveWorkers: number, redisMemory: RedisMemory): QueueState {
  const sum = (field: "waiting" | "inFlight" | "delayed" | "completed" | "failed" | "cancelled" | "retried") => queues.reduce((n, q) => n + q[field], 0);
  return {
    queue: "*",
    waiting: sum("waiting"),
    inFlight: sum("inFlight"),
    delayed: sum("delayed"),
    liveWorkers,
    completed: sum("completed"),
    failed: sum("failed"),
    cancelled: sum("cancelled"),
    retried: sum("retried"),
    waitP95Ms: undefined,
    redisMemory,
  };
}

/** Reads every queue's state and the fleet's statistics over the last `windowMs`, and Redis's memory. */
export async function readFleetFigures(redis: Redis, keys: Keys, queues: readonly string[], windowMs: number, now = Date.now()): Promise<QueueState[]> {
  return (await readFigures(redis, keys, queues, windowMs, now)).queues;
}

/** Each queue's figures and the fleet-wide ones, from one read of the fleet. */
export async function readFigures(
  redis: Redis,
  keys: Keys,
  queues: readonly string[],
  windowMs: number,
  now = Date.now(),
): Promise<{ queues: QueueState[]; wide: QueueState }> {
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
  return { queues: out, wide: fleetWide(out, fleet.live, redisMemory) };
}
