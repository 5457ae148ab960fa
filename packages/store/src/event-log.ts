import { type Keys, type Retention, splitTaskId } from "@flotilla/core";
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
 * Appends a task's events (other than status changes), batch by batch. The batches of every task of
 * a queue handed over in the same tick go to Redis together, in one script call (see
 * flushEventAppends): a worker running hundreds of streaming tasks makes a call per tick, not one per
 * task. Made once per producer: the task's keys are built here, not on every batch.
 */
export class TaskEventLog {
  private readonly redis: Redis;
  /** The task's name and its queue's key bases: what the script takes. */
  readonly target: AppendTarget;
  private readonly retention: Retention;
  /**
   * How many messages wait in the task's inbox (sent to it: TaskStore.sendMessage), as the last
   * append's reply said: a turn boundary takes them when this is above 0, and asks nothing otherwise.
   */
  messagesWaiting = 0;

  constructor(redis: Redis, keys: Keys, retention: Retention, taskId: string) {
    this.redis = redis;
    const { queue, name } = splitTaskId(taskId);
    this.target = {
      queue,
      name,
      record: keys.task(taskId),
      bases: [keys.taskBase(queue), keys.eventsBase(queue), keys.eventsChannelBase(queue)],
    };
    this.retention = retention;
    // Defined on the connection now, so pipelines made later can queue the script too.
    scripts.publish.install(redis);
  }

  /**
   * Appends a batch; returns the last seq written, or -1 when the task no longer runs as `attempt`
   * (finished, cancelled or taken over): the producer must stop. Sent with the other batches of the
   * tick (see flushEventAppends); a CorruptRecordError when the record cannot be trusted.
   * @param attempt the attempt the events belong to; `"*"` for whichever runs (a Temporal activity)
   * @param batchId makes a resend harmless: `<attempt>:<n>` increasing per producer, or `scope=<name>:<first index>`
   * @param bodies JSON objects without `seq`, which the store numbers
   */
  async append(attempt: number | "*", batchId: string, bodies: readonly string[]): Promise<number> {
    const r = this.retention;
    const { last, waiting } = await appendsOf(this.redis).add(this.target, [attempt, r.eventMaxLen, r.runningEventTtlMs, batchId, bodies.length, ...bodies]);
    if (last >= 0) this.messagesWaiting = waiting;
    return last;
  }
}

interface AppendTarget {
  queue: string;
  name: string;
  record: string;
  bases: [task: string, stream: string, channel: string];
}

/** The last seq written (-1: fenced out) and how many messages wait in the task's inbox. */
interface AppendReply {
  last: number;
  waiting: number;
}

interface PendingAppend {
  target: AppendTarget;
  /** attempt, eventMaxLen, ttlMs, batchId, count, bodies… (the script's per-task fields after the name). */
  args: Array<string | number>;
  resolve: (reply: AppendReply) => void;
  reject: (err: unknown) => void;
}

/** Events in one call at most, and so the most one call carries (its tasks' batches are kept whole). */
const EVENTS_PER_CALL = 2000;

/** Gathers the batches handed over in a tick, per queue, and sends each queue's in one script call. */
class Appends {
  private readonly redis: Redis;
  private pending = new Map<string, PendingAppend[]>();
  private scheduled = false;

  constructor(redis: Redis) {
    this.redis = redis;
  }

  add(target: AppendTarget, args: Array<string | number>): Promise<AppendReply> {
    return new Promise<AppendReply>((resolve, reject) => {
      const list = this.pending.get(target.queue);
      if (list) list.push({ target, args, resolve, reject });
      else this.pending.set(target.queue, [{ target, args, resolve, reject }]);
      withPending.add(this);
      if (!this.scheduled) {
        // Sent at the latest in the next turn of the event loop; a producer's tick (flushEventAppends) sends it sooner.
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  flush(): void {
    this.scheduled = false;
    withPending.delete(this);
    const pending = this.pending;
    if (pending.size === 0) return;
    this.pending = new Map();
    for (const list of pending.values()) {
      let call: PendingAppend[] = [];
      let events = 0;
      for (const p of list) {
        const count = Number(p.args[4]);
        if (call.length > 0 && events + count > EVENTS_PER_CALL) {
          void this.send(call);
          call = [];
          events = 0;
        }
        call.push(p);
        events += count;
      }
      void this.send(call);
    }
  }

  private async send(call: PendingAppend[]): Promise<void> {
    const first = call[0]!.target;
    const args: Array<string | number> = [...first.bases];
    for (const p of call) {
      args.push(p.target.name);
      for (const a of p.args) args.push(a);
    }
    let reply: unknown[];
    try {
      reply = (await scripts.publish.run(this.redis, [first.record], args)) as unknown[];
    } catch (err) {
      for (const p of call) p.reject(err);
      return;
    }
    call.forEach((p, i) => {
      const r = reply[i];
      if (typeof r === "number") p.resolve({ last: r, waiting: 0 });
      // Messages wait in the task's inbox: { last, waiting }.
      else if (Array.isArray(r) && typeof r[0] === "number" && typeof r[1] === "number") p.resolve({ last: r[0], waiting: r[1] });
      else p.reject(scripts.publish.typed(new Error(String(r))));
    });
  }
}

const appends = new WeakMap<Redis, Appends>();
/** The connections with batches waiting: what flushEventAppends sends. */
const withPending = new Set<Appends>();

function appendsOf(redis: Redis): Appends {
  let a = appends.get(redis);
  if (!a) {
    a = new Appends(redis);
    appends.set(redis, a);
  }
  return a;
}

/**
 * Sends every batch handed to a TaskEventLog and not yet sent, now, one call per connection and
 * queue. A producer that hands over the batches of many tasks at once (a worker's publishers, each
 * tick) calls it after the last, so they leave together without waiting a turn of the event loop.
 */
export function flushEventAppends(): void {
  for (const a of [...withPending]) a.flush();
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
