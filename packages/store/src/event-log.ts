import type { Keys, Retention } from "@flotilla/core";
import type { MessageListener, SubscriberHub, Unsubscribe } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import { PACKED_FIELD, unpackValues } from "./record.ts";
import { scripts } from "./scripts.ts";

/**
 * A task's events as the store keeps them: its status events in its record (`log`), the rest in its
 * event stream (one entry per published batch), each announced on a channel — the status channel of
 * its queue, its own events channel. `@flotilla/events` gives them their types; this is the storage.
 */

/**
 * Appends a task's events (other than status changes), batch by batch, each in one script call.
 * Made once per producer: the task's three keys are built here, not on every batch.
 */
export class TaskEventLog {
  private readonly redis: Redis;
  private readonly keys: [record: string, stream: string, channel: string];
  private readonly retention: Retention;

  constructor(redis: Redis, keys: Keys, retention: Retention, taskId: string) {
    this.redis = redis;
    this.keys = [keys.task(taskId), keys.events(taskId), keys.eventsChannel(taskId)];
    this.retention = retention;
    // Defined on the connection now, so pipelines made later can queue the script too.
    scripts.publish.install(redis);
  }

  /**
   * Appends a batch; returns the last seq written, or -1 when the task no longer runs as `attempt`
   * (finished, cancelled or taken over): the producer must stop.
   * @param attempt the attempt the events belong to; `"*"` for whichever runs (a Temporal activity)
   * @param batchId makes a resend harmless: `<attempt>:<n>` increasing per producer, or `scope=<name>:<first index>`
   * @param bodies JSON objects without `seq`, which the store numbers
   */
  async append(attempt: number | "*", batchId: string, bodies: readonly string[]): Promise<number> {
    const r = this.retention;
    return (await scripts.publish.run(this.redis, this.keys, [attempt, r.eventMaxLen, r.runningEventTtlMs, batchId, ...bodies])) as number;
  }
}

/** What `readTaskLog` returns: raw JSON, for `@flotilla/events` to parse. */
export interface TaskLog {
  /** The record's status, or null when it does not exist. */
  status: string | null;
  /** Its status events, comma-joined JSON objects (null: none). */
  statusLog: string | null;
  /** JSON of its result, put back on the `completed` event by readers. */
  result: string | null;
  /** Its agent's name: the log's events leave it out (and their type and task id), readers put them back. */
  agent: string | null;
  /** Event stream entries after the asked seq: [id, JSON array of events], in order. */
  batches: Array<[id: string, json: string]>;
  /** Whether more stream entries may follow the last one (a full page). */
  more: boolean;
}

const LOG_FIELDS = ["status", "log", "result", "agent"];

/** Reads a task's status log and its first page of stream entries after `after`, in one round trip. */
export async function readTaskLog(redis: Redis, keys: Keys, taskId: string, after: number, pageSize: number): Promise<TaskLog> {
  const replies =
    (await redis
      .pipeline()
      .hmget(keys.task(taskId), ...LOG_FIELDS, PACKED_FIELD)
      .xrange(keys.events(taskId), `(0-${after}`, "+", "COUNT", pageSize)
      .exec()) ?? [];
  for (const [err] of replies) if (err) throw err;
  const [status = null, statusLog = null, result = null, agent = null] = unpackValues(LOG_FIELDS, replies[0]![1] as Array<string | null>, taskId);
  const rows = replies[1]![1] as Array<[string, string[]]>;
  return { status, statusLog, result, agent, batches: rows.map(([id, fields]) => [id, fields[1] ?? "null"]), more: rows.length === pageSize };
}

/** The next page of a task's stream entries after entry `afterId`. */
export async function readTaskLogPage(redis: Redis, keys: Keys, taskId: string, afterId: string, pageSize: number): Promise<TaskLog["batches"]> {
  const rows = await redis.xrange(keys.events(taskId), `(${afterId}`, "+", "COUNT", pageSize);
  return rows.map(([id, fields]) => [id, fields[1] ?? "null"]);
}

/** Subscribes to the status events of every task of a queue (JSON arrays, one message per script call). */
export function subscribeStatus(hub: SubscriberHub, keys: Keys, queue: string, listener: MessageListener): Promise<Unsubscribe> {
  return hub.subscribe(keys.statusChannel(queue), listener);
}

/** Subscribes to a task's other events, live (JSON arrays, one message per published batch). */
export function subscribeTaskEvents(hub: SubscriberHub, keys: Keys, taskId: string, listener: MessageListener): Promise<Unsubscribe> {
  return hub.subscribe(keys.eventsChannel(taskId), listener);
}
