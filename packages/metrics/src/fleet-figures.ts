import { Broker } from "@flotilla/broker";
import { type Keys, STATS_BUCKET_MS } from "@flotilla/core";
import { getFleetStatus } from "@flotilla/health";
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

const WAIT_BOUNDS = [100, 500, 1000, 5000, 10_000, 30_000, 60_000, 300_000, Number.POSITIVE_INFINITY];
const waitField = (bound: number) => `wait_le_${Number.isFinite(bound) ? bound : "inf"}`;

/** Reads every queue's state and the fleet's statistics over the last `windowMs`. */
export async function readFleetFigures(redis: Redis, keys: Keys, queues: readonly string[], windowMs: number, now = Date.now()): Promise<QueueState[]> {
  const broker = new Broker(redis, keys);
  const fleet = await getFleetStatus(redis, keys);
  const out: QueueState[] = [];
  for (const queue of queues) {
    const depth = await broker.depth(queue);
    const pipeline = redis.pipeline();
    for (let t = now - windowMs + STATS_BUCKET_MS; t <= now + STATS_BUCKET_MS - 1; t += STATS_BUCKET_MS) pipeline.hgetall(keys.stats(queue, t));
    const totals: Record<string, number> = {};
    for (const [err, hash] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      for (const [field, value] of Object.entries(hash as Record<string, string>)) totals[field] = (totals[field] ?? 0) + Number(value);
    }
    const waits = WAIT_BOUNDS.map((b) => totals[waitField(b)] ?? 0);
    const samples = waits.reduce((a, b) => a + b, 0);
    let waitP95Ms: number | undefined;
    if (samples > 0) {
      let seen = 0;
      for (let i = 0; i < WAIT_BOUNDS.length; i++) {
        seen += waits[i]!;
        if (seen >= 0.95 * samples) {
          waitP95Ms = WAIT_BOUNDS[i]!;
          break;
        }
      }
    }
    out.push({
      queue,
      waiting: depth.waiting,
      inFlight: depth.inFlight,
      delayed: depth.delayed,
      liveWorkers: fleet.workers.filter((w) => w.alive && (w.queues ?? []).includes(queue)).length,
      completed: totals.completed ?? 0,
      failed: totals.failed ?? 0,
      cancelled: totals.cancelled ?? 0,
      retried: totals.retrying ?? 0,
      waitP95Ms,
    });
  }
  return out;
}
