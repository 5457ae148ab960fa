import { Broker } from "@flotilla/broker";
import type { Keys } from "@flotilla/core";
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
}

/** Reads every queue's state and the fleet's statistics over the last `windowMs`. */
export async function readFleetFigures(redis: Redis, keys: Keys, queues: readonly string[], windowMs: number, now = Date.now()): Promise<QueueState[]> {
  const broker = new Broker(redis, keys);
  const fleet = await getFleetStatus(redis, keys);
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
    });
  }
  return out;
}
