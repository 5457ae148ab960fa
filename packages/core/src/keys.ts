import { createHash } from "node:crypto";
import { ValidationError } from "./errors.ts";
import { type Priority, SAFE_ID } from "./schemas.ts";

/** The consumer group every worker of a queue reads through. */
export const CONSUMER_GROUP = "flotilla";

/**
 * Every Redis key and channel Flotilla uses, built from one prefix.
 * The part in `{…}` is the Redis Cluster hash tag: keys of one task share a slot, as do keys of one
 * queue, so each Lua script touches a single slot. See the key table in the package README.
 */
export interface Keys {
  readonly prefix: string;
  /** Hash: the task record. */
  task(taskId: string): string;
  /** Stream: the task's events, for replay. */
  events(taskId: string): string;
  /** Pub/Sub: the task's events, live (JSON arrays of events). */
  eventsChannel(taskId: string): string;
  /** Pub/Sub: the task's terminal status, for `result()` waiters. */
  doneChannel(taskId: string): string;
  /** Pub/Sub: cancel requests for running tasks, one channel for the whole fleet. */
  cancelChannel(): string;
  /** Stream: the queue's normal-priority lane, which workers claim from through the consumer group. */
  queue(queue: string): string;
  /** Stream: one priority lane of a queue (`normal` is `queue(queue)`); same hash tag as the queue. */
  lane(queue: string, priority: Priority): string;
  /** Stream: entries of the queue that could not be run, with the reason. */
  deadLetters(queue: string): string;
  /** Sorted set: task ids of one lane waiting for a later attempt or a scheduled start, scored by due time. */
  delayed(queue: string, priority?: Priority): string;
  /** String: the task id an idempotency key was first used for (the key is hashed; TTL = its window). */
  idempotency(key: string): string;
  /** Sorted set: task ids by creation time, for listing. */
  taskIndex(): string;
  /** Sorted set: worker ids by last heartbeat. */
  workers(): string;
  /** String (JSON): one worker's heartbeat record. */
  worker(workerId: string): string;
}


export function createKeys(prefix = "flotilla"): Keys {
  if (!prefix || /[{}\s]/.test(prefix)) {
    throw new ValidationError("key prefix", [{ path: "prefix", message: `"${prefix}" must be non-empty, with no braces or spaces` }]);
  }
  const invalid = (kind: string, id: string) =>
    new ValidationError(`${kind} id`, [{ path: kind, message: `invalid ${kind} id "${id}": use letters, digits and _ . : - only` }]);
  const tagged = (kind: string, id: string) => {
    if (!SAFE_ID.test(id)) throw invalid(kind, id);
    return `${prefix}:${kind}:{${id}}`;
  };
  return {
    prefix,
    task: (id) => tagged("task", id),
    events: (id) => tagged("stream", id),
    eventsChannel: (id) => tagged("events", id),
    doneChannel: (id) => tagged("done", id),
    cancelChannel: () => `${prefix}:cancel`,
    queue: (q) => tagged("queue", q),
    deadLetters: (q) => `${tagged("queue", q)}:dead`,
    lane: (q, p) => (p === "normal" ? tagged("queue", q) : `${tagged("queue", q)}:${p}`),
    delayed: (q, p = "normal") => `${tagged("queue", q)}:delayed${p === "normal" ? "" : `:${p}`}`,
    idempotency: (key) => `${prefix}:idem:{${createHash("sha1").update(key).digest("hex")}}`,
    taskIndex: () => `${prefix}:{index}:tasks`,
    workers: () => `${prefix}:{health}:workers`,
    worker: (id) => {
      if (!SAFE_ID.test(id)) throw invalid("worker", id);
      return `${prefix}:{health}:worker:${id}`;
    },
  };
}
