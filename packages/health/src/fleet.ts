import { DEFAULTS, type Keys, parseJsonOr } from "@flotilla/core";
import { redisTime } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import { type WorkerRecord, WorkerRecordSchema } from "./schema.ts";

export interface WorkerStatus extends Partial<WorkerRecord> {
  workerId: string;
  lastBeat: number;
  /** False once its last beat is older than the threshold. */
  alive: boolean;
}

export interface FleetStatus {
  workers: WorkerStatus[];
  live: number;
  dead: number;
  /** Tasks running on live workers. */
  running: number;
  at: number;
}

export interface FleetStatusOptions {
  /**
   * A worker whose last beat is older than this is dead.
   * @default two thirds of each worker's heartbeat TTL (two missed beats)
   */
  deadAfterMs?: number;
}

/** A worker is dead once it missed two beats (beats come every third of its TTL). */
export const deadAfter = (heartbeatTtlMs: number): number => Math.floor((heartbeatTtlMs * 2) / 3);

/**
 * How many workers beat within the last `deadAfterMs`: one ZCOUNT (after Redis's TIME), for a gauge
 * every worker reads often (getFleetStatus reads every record).
 * @param deadAfterMs @default deadAfter(DEFAULTS.heartbeatTtlMs)
 * @param now @default Redis's time: beats are stamped with it
 */
export async function countLiveWorkers(redis: Redis, keys: Keys, deadAfterMs = deadAfter(DEFAULTS.heartbeatTtlMs), now?: number): Promise<number> {
  const at = now ?? (await redisTime(redis));
  return redis.zcount(keys.workers(), at - deadAfterMs, "+inf");
}

/**
 * Lists the fleet: live workers with their figures, and workers that stopped beating as dead. Beats
 * are stamped and judged by Redis's clock (TIME), so neither the worker's clock nor the reader's
 * matters: a live worker 30 s behind is not shown dead, one 30 s ahead does not outlive its beats.
 */
export async function getFleetStatus(redis: Redis, keys: Keys, options: FleetStatusOptions = {}): Promise<FleetStatus> {
  // Redis's time and the beats in one round trip; ioredis 6 types ZRANGE's stop as a string.
  const [now, rows] = await Promise.all([redisTime(redis), redis.zrange(keys.workers(), 0, "-1", "WITHSCORES")]);
  const ids: string[] = [];
  const beats: number[] = [];
  for (let i = 0; i < rows.length; i += 2) {
    ids.push(rows[i]!);
    beats.push(Number(rows[i + 1]));
  }
  const records = ids.length ? await redis.mget(...ids.map((id) => keys.worker(id))) : [];
  const workers: WorkerStatus[] = ids.map((workerId, i) => {
    const parsed = records[i] ? WorkerRecordSchema.safeParse(parseJsonOr(records[i], undefined)) : undefined;
    const record = parsed?.success ? parsed.data : undefined;
    // The score is the beat's time on Redis's clock (see Heartbeat.beat); the record's copy is the same.
    const lastBeat = beats[i]!;
    const threshold = options.deadAfterMs ?? deadAfter(record?.heartbeatTtlMs ?? DEFAULTS.heartbeatTtlMs);
    const alive = record !== undefined && now - lastBeat <= threshold;
    return { ...record, workerId, lastBeat, alive };
  });
  const live = workers.filter((w) => w.alive);
  return {
    workers,
    live: live.length,
    dead: workers.length - live.length,
    running: live.reduce((n, w) => n + (w.running?.length ?? 0), 0),
    at: now,
  };
}
