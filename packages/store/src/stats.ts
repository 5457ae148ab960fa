import { type Keys, STATS_BUCKET_MS } from "@flotilla/core";
import type { Redis } from "ioredis";

/** A queue's fleet statistics over a window, as the claim, start, settle and cancel scripts count them. */
export interface QueueStats {
  /** Outcomes recorded within the window. */
  completed: number;
  failed: number;
  cancelled: number;
  retried: number;
  /** 95th percentile of how long tasks waited before they first started (ms; its bucket's upper bound). */
  waitP95Ms: number | undefined;
}

const WAIT_FIELD = /^wait_le_(\d+|inf)$/;

/**
 * Reads the statistics buckets of a queue (5 s each) that cover the last `windowMs`. The wait-time
 * buckets' bounds are read from their field names (`wait_le_<ms>`), so the Lua that writes them
 * (includes/countWait.lua) holds the only list.
 */
export async function readQueueStats(redis: Redis, keys: Keys, queue: string, windowMs: number, now = Date.now()): Promise<QueueStats> {
  const pipeline = redis.pipeline();
  for (let t = now - windowMs + STATS_BUCKET_MS; t <= now + STATS_BUCKET_MS - 1; t += STATS_BUCKET_MS) pipeline.hgetall(keys.stats(queue, t));
  const totals: Record<string, number> = {};
  for (const [err, hash] of (await pipeline.exec()) ?? []) {
    if (err) throw err;
    for (const [field, value] of Object.entries(hash as Record<string, string>)) totals[field] = (totals[field] ?? 0) + Number(value);
  }
  const waits: Array<[bound: number, count: number]> = [];
  for (const [field, count] of Object.entries(totals)) {
    const m = WAIT_FIELD.exec(field);
    if (m) waits.push([m[1] === "inf" ? Number.POSITIVE_INFINITY : Number(m[1]), count]);
  }
  waits.sort((a, b) => a[0] - b[0]);
  const samples = waits.reduce((n, [, c]) => n + c, 0);
  let waitP95Ms: number | undefined;
  let seen = 0;
  for (const [bound, count] of waits) {
    seen += count;
    if (samples > 0 && seen >= 0.95 * samples) {
      waitP95Ms = bound;
      break;
    }
  }
  return { completed: totals.completed ?? 0, failed: totals.failed ?? 0, cancelled: totals.cancelled ?? 0, retried: totals.retrying ?? 0, waitP95Ms };
}
