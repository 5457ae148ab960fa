import { type Keys, taskIdOf } from "@flotilla/core";
import { pipelineBySlot } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import { PACKED_FIELD, unpackValues } from "./record.ts";

/** Other packages read record fields only through these (and TaskStore's get / getMany). */

/**
 * Some fields of a task's record as stored, null where absent: a completed task's packed ones
 * unpacked (see record.ts), so callers need not know how a record is laid out.
 */
export async function readFields(redis: Redis, keys: Keys, taskId: string, fields: readonly string[]): Promise<Array<string | null>> {
  return unpackValues(fields, await redis.hmget(keys.task(taskId), ...fields, PACKED_FIELD), taskId);
}

/** The number of the attempt running (or that last ran) a task; 0 when it never started or does not exist. */
export async function readAttempt(redis: Redis, keys: Keys, taskId: string): Promise<number> {
  return Number((await redis.hget(keys.task(taskId), "attempt")) ?? 0);
}

/**
 * What the events of a running task are stamped and filtered with: the attempt running (or that
 * last ran) it, as readAttempt; the agent its record names; whether it keeps every event type
 * (`detailed`). `agent` and `detailed` are undefined when it does not exist.
 */
export async function readRunning(
  redis: Redis,
  keys: Keys,
  taskId: string,
): Promise<{ attempt: number; agent: string | undefined; detailed: boolean | undefined }> {
  const fields = ["attempt", "agent", "detailed"];
  const [attempt, agent, detailed] = unpackValues(fields, await redis.hmget(keys.task(taskId), ...fields, PACKED_FIELD), taskId);
  // `detailed` is stored only when set; `agent` always is, so it tells a record without it from none.
  if (agent === null) return { attempt: Number(attempt ?? 0), agent: undefined, detailed: undefined };
  return { attempt: Number(attempt ?? 0), agent, detailed: detailed === "1" };
}

const CANCEL_FIELDS = ["cancelRequestedAt", "cancelReason"];

/** The stored cancel requests of some tasks: task id → reason, for those that have one. */
export async function readCancelRequests(redis: Redis, keys: Keys, taskIds: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (taskIds.length === 0) return out;
  const replies = await pipelineBySlot(
    redis,
    taskIds.map((id) => keys.task(id)),
    (pipeline, key) => pipeline.hmget(key, ...CANCEL_FIELDS, PACKED_FIELD),
  );
  replies.forEach(([err, value], i) => {
    if (err) throw err;
    const [at, reason] = unpackValues(CANCEL_FIELDS, (value ?? []) as Array<string | null>, taskIds[i]!);
    if (at) out.set(taskIds[i]!, reason ?? "cancelled");
  });
  return out;
}

/**
 * Tasks of a queue created at or after `from` (ms, the index's score), oldest first, at most
 * `limit`: the index `listTasks` pages, read forward (what a live feed of submissions polls).
 */
export async function readCreatedSince(
  redis: Redis,
  keys: Keys,
  queue: string,
  from: number,
  limit: number,
): Promise<Array<{ taskId: string; createdAt: number }>> {
  const flat = await redis.zrangebyscore(keys.taskIndex(queue), from, "+inf", "WITHSCORES", "LIMIT", 0, limit);
  const out: Array<{ taskId: string; createdAt: number }> = [];
  for (let i = 0; i < flat.length; i += 2) out.push({ taskId: taskIdOf(queue, flat[i]!), createdAt: Number(flat[i + 1]) });
  return out;
}

/** Every queue a task was submitted to, sorted (the registry that listing across queues reads). */
export async function listQueues(redis: Redis, keys: Keys): Promise<string[]> {
  return (await redis.smembers(keys.queues())).sort();
}

/**
 * Graph node tasks of a queue that ended at or before `endedBefore` (ms, Redis's clock) and whose
 * hand-off is not yet cleared: task id → when it ended, oldest first, at most `limit`.
 */
export async function readHandoffs(
  redis: Redis,
  keys: Keys,
  queue: string,
  endedBefore: number,
  limit: number,
): Promise<Array<{ taskId: string; endedAt: number }>> {
  const flat = await redis.zrangebyscore(keys.handoff(queue), "-inf", endedBefore, "WITHSCORES", "LIMIT", 0, limit);
  const out: Array<{ taskId: string; endedAt: number }> = [];
  for (let i = 0; i < flat.length; i += 2) out.push({ taskId: flat[i]!, endedAt: Number(flat[i + 1]) });
  return out;
}

/** Clears hand-offs the graph engine finished (their successors exist): they are not swept again. */
export async function clearHandoffs(redis: Redis, keys: Keys, queue: string, taskIds: readonly string[]): Promise<void> {
  if (taskIds.length > 0) await redis.zrem(keys.handoff(queue), ...taskIds);
}
