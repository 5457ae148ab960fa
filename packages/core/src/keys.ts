import { sha1 } from "@noble/hashes/legacy.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { DEFAULTS } from "./defaults.ts";
import { ValidationError } from "./errors.ts";
import { type Priority, SAFE_ID } from "./schemas.ts";

/** Fleet statistics are kept in buckets of this many ms. */
export const STATS_BUCKET_MS = 5000;

/** The consumer group every worker of a queue reads through. */
export const CONSUMER_GROUP = "flotilla";

/** A task id split into its queue and its name within that queue. */
export interface TaskRef {
  queue: string;
  name: string;
}

const TASK_ID = /^([A-Za-z0-9_.:-]{1,64})\/([A-Za-z0-9_.:-]{1,128})$/;

/** Splits `<queue>/<name>`; a malformed id is a ValidationError. */
export function splitTaskId(taskId: string): TaskRef {
  const m = TASK_ID.exec(taskId);
  if (!m) {
    throw new ValidationError("task id", [{ path: "taskId", message: `invalid task id "${taskId}": expected <queue>/<name>` }]);
  }
  return { queue: m[1]!, name: m[2]! };
}

export const taskIdOf = (queue: string, name: string): string => `${queue}/${name}`;

/**
 * Every Redis key and channel Flotilla uses, built from one prefix.
 * The part in `{…}` is the Redis Cluster hash tag. A task's keys carry its queue's tag (a task id
 * is `<queue>/<name>`), so one script can create, enqueue, claim, start, finish and acknowledge
 * whole batches of a queue's tasks in a single slot. See the key table in the package README.
 */
export interface Keys {
  readonly prefix: string;
  /** Hash: the task record (its status events are kept in its `log` field). */
  task(taskId: string): string;
  /** What `task()` puts before a task's name, for scripts that build task keys of one queue. */
  taskBase(queue: string): string;
  /** Stream: the task's events other than status changes, for replay (created by the first such event). */
  events(taskId: string): string;
  /** What `events()` puts before a task's name. */
  eventsBase(queue: string): string;
  /** Pub/Sub (sharded): the task's events other than status changes, live (JSON arrays of events). */
  eventsChannel(taskId: string): string;
  /** What `eventsChannel()` puts before a task's name. */
  eventsChannelBase(queue: string): string;
  /** List: messages sent to the running task (`handle.send`), waiting for its next turn boundary, oldest first. */
  inbox(taskId: string): string;
  /** Pub/Sub (sharded): status events of every task of a queue (JSON arrays, one message per script call). */
  statusChannel(queue: string): string;
  /**
   * Pub/Sub (sharded): cancel requests for a queue's running tasks, in the queue's slot, so the cancel
   * script publishes where it writes and only the workers serving the queue hear it.
   */
  cancelChannel(queue: string): string;
  /** Stream: the queue's normal-priority lane, which workers claim from through the consumer group. */
  queue(queue: string): string;
  /** Stream: one priority lane of a queue (`normal` is `queue(queue)`); same hash tag as the queue. */
  lane(queue: string, priority: Priority): string;
  /** Stream: entries of the queue that could not be run, with the reason. */
  deadLetters(queue: string): string;
  /** String: a mark a durable submit's replica check writes in the queue's slot, so that one WAIT covers the submits before it. */
  replicaMark(queue: string): string;
  /** Sorted set: task names of one lane waiting for a later attempt or a scheduled start, scored by due time. */
  delayed(queue: string, priority?: Priority): string;
  /** Sorted set: the queue's task names by creation time, for listing. */
  taskIndex(queue: string): string;
  /**
   * Sorted set: names of a queue's finished tasks of one kind (`completed`: COMPLETED or CANCELLED;
   * `failed`), scored by when they ended; only with a count in `keepCompleted` / `keepFailed`, whose
   * oldest beyond the count are deleted.
   */
  kept(queue: string, kind: "completed" | "failed"): string;
  /** String: what one submit batch created, so a resend after a lost reply does not create it twice (store). */
  submitMarker(queue: string, batchId: string): string;
  /**
   * Sorted set: ids of the queue's graph node tasks that ended and whose run has not yet been told,
   * scored by when they ended (ms). Written by the scripts that end a task (store), cleared by the
   * graph engine once the node's successors exist; a live worker's sweeper finishes what a crash left.
   */
  handoff(queue: string): string;
  /**
   * Set: the names of a queue's running tasks of one concurrency key; `<this>:waiting` (list) holds
   * the key's parked tasks in order. The store's scripts build the same names from the queue's
   * normal lane key (`:concurrency:<key>`).
   */
  concurrency(queue: string, key: string): string;
  /** String: which entries one claim call took, so a resend after a lost reply starts those again (broker). */
  claimMarker(queue: string, callId: string): string;
  /** Hash: each consumer's lease (ms) on the queue, so a reclaimer waits out the holder's lease, not its own (broker). */
  leases(queue: string): string;
  /** Hash: the queue's fleet statistics for the 5-second bucket holding `at` (ms): outcomes, wait-time buckets. */
  stats(queue: string, at: number): string;
  /** Stream: alert events (firing, resolved) that other processes can read. */
  alerts(): string;
  /** String: which alert manager evaluates the rules now (an `exclusive` one's lease, TTL = its lease). */
  alertsLease(): string;
  /** String: the figures of the alerts firing now as of the rules' last round (JSON by alert id; TTL: 3 rounds). */
  alertsNow(): string;
  /** Set: every queue a task was submitted to, for listing across queues. */
  queues(): string;
  /** String: the task id an idempotency key was first used for (the key is hashed; TTL = its window). */
  idempotency(key: string): string;
  /** List: a conversation's messages (JSON entries, oldest first), for agents' memory. */
  memory(conversationId: string): string;
  /** Sorted set: worker ids by last heartbeat. */
  workers(): string;
  /** String (JSON): one worker's heartbeat record. */
  worker(workerId: string): string;
  /**
   * Hash: a graph run's record (status, graph, topology, input, open node count). A run's keys carry
   * its id as their hash tag: one slot per run, apart from its node tasks' queues (see @flotilla/graph).
   */
  run(runId: string): string;
  /** Hash: a run's node instances (`<node>@<branch>#<n>`) → state (CREATED … EXECUTED | ERRORED | CANCELLED | SKIPPED), and what each one's end created. */
  runNodes(runId: string): string;
  /** Hash: a run's node instances → their outputs (JSON); `!<instance>` → the error of one that failed. */
  runOutputs(runId: string): string;
  /** Hash: a run's join counters (in-edges resolved per node and branch), fan-out widths and loop counts. */
  runJoins(runId: string): string;
  /** Stream: a run's lifecycle events (run and node started / finished), for replay and live reading. */
  runEvents(runId: string): string;
  /** Sorted set: graph run ids by start time, for listing. */
  graphRuns(): string;
  /** Hash: a graph template's versions (`<n>` → the graph's JSON) and `latest`, by the template's name. */
  graphTemplate(name: string): string;
  /**
   * Sorted set: runs being started, by when (ms): written before a run's record and cleared once its
   * first node tasks exist, so a sweeper finishes a start whose process died.
   */
  graphStarting(): string;
  /**
   * Stream: a bus topic's events (@flotilla/bus). A topic's keys carry its name as their hash tag:
   * its stream, its groups' retries, errors and dead letters share one slot.
   */
  topic(topic: string): string;
  /** What every other key of a topic starts with (`<topic>:`), for scripts that build per-event keys of one topic. */
  topicBase(topic: string): string;
  /** Stream: one subscriber group's dead letters on a topic, with the reason, the attempts and the last error. */
  topicDeadLetters(topic: string, group: string): string;
  /** Sorted set: a group's events waiting to be delivered again (failed, in backoff), scored by when they are due. */
  topicRetries(topic: string, group: string): string;
  /** Hash: a group's events that failed and wait for their next delivery → the last error (JSON). */
  topicErrors(topic: string, group: string): string;
  /** Hash: a topic's counters: `published`, and `<group>:<count>` for delivered, acked, retried, reclaimed, dead. */
  topicStats(topic: string): string;
  /** Hash: a group's consumers → their lease (ms), so a reclaimer waits out the holder's lease, not its own. */
  topicLeases(topic: string, group: string): string;
  /** Stream: a topic's notable deliveries (retried, reclaimed, dead-lettered), capped. */
  topicMetrics(topic: string): string;
  /** Set: every topic published to or subscribed, for listing. */
  topics(): string;
  /**
   * Hash: a schedule (@flotilla/schedules): its definition, the task it fires, its next tick and
   * its counters. Every schedule key is in the `{schedules}` slot, so a script sees a schedule and
   * the due set together.
   */
  schedule(id: string): string;
  /** Sorted set: schedule ids by their next tick (ms); a paused schedule stays in it at +inf (never due), so the set lists every schedule. */
  schedulesDue(): string;
  /** Hash: a fleet-wide rate limit's token buckets (@flotilla/ratelimit): requests, tokens, when last refilled, paused until. */
  rateLimit(name: string): string;
  /** Sharded channel (the limit's slot): a pause of the limit was made or lengthened; the message is how long it has left (ms). */
  rateLimitPaused(name: string): string;
}

export function createKeys(prefix: string = DEFAULTS.prefix): Keys {
  if (!prefix || /[{}\s]/.test(prefix)) {
    throw new ValidationError("key prefix", [{ path: "prefix", message: `"${prefix}" must be non-empty, with no braces or spaces` }]);
  }
  const invalid = (kind: string, id: string) =>
    new ValidationError(`${kind} id`, [{ path: kind, message: `invalid ${kind} id "${id}": use letters, digits and _ . : - only` }]);
  const tagged = (kind: string, id: string) => {
    if (!SAFE_ID.test(id)) throw invalid(kind, id);
    return `${prefix}:${kind}:{${id}}`;
  };
  const group = (g: string) => {
    if (!SAFE_ID.test(g)) throw invalid("group", g);
    return g;
  };
  const ofTask = (kind: string, taskId: string) => {
    const { queue, name } = splitTaskId(taskId);
    return `${prefix}:${kind}:{${queue}}:${name}`;
  };
  return {
    prefix,
    task: (id) => ofTask("task", id),
    taskBase: (q) => `${tagged("task", q)}:`,
    events: (id) => ofTask("stream", id),
    eventsBase: (q) => `${tagged("stream", q)}:`,
    eventsChannel: (id) => ofTask("events", id),
    inbox: (id) => ofTask("inbox", id),
    eventsChannelBase: (q) => `${tagged("events", q)}:`,
    statusChannel: (q) => tagged("status", q),
    cancelChannel: (q) => tagged("cancel", q),
    queue: (q) => tagged("queue", q),
    deadLetters: (q) => `${tagged("queue", q)}:dead`,
    lane: (q, p) => (p === "normal" ? tagged("queue", q) : `${tagged("queue", q)}:${p}`),
    delayed: (q, p = "normal") => `${tagged("queue", q)}:delayed${p === "normal" ? "" : `:${p}`}`,
    taskIndex: (q) => `${tagged("queue", q)}:tasks`,
    replicaMark: (q) => `${tagged("queue", q)}:replicated`,
    kept: (q, kind) => `${tagged("queue", q)}:kept:${kind}`,
    submitMarker: (q, id) => `${tagged("queue", q)}:batch:${id}`,
    handoff: (q) => `${tagged("queue", q)}:handoff`,
    concurrency: (q, key) => {
      if (!SAFE_ID.test(key) || key.length > 128) throw invalid("concurrency key", key);
      return `${tagged("queue", q)}:concurrency:${key}`;
    },
    claimMarker: (q, id) => `${tagged("queue", q)}:claim:${id}`,
    leases: (q) => `${tagged("queue", q)}:leases`,
    stats: (q, at) => `${tagged("queue", q)}:stats:${Math.floor(at / STATS_BUCKET_MS)}`,
    queues: () => `${prefix}:{fleet}:queues`,
    alerts: () => `${prefix}:{fleet}:alerts`,
    alertsLease: () => `${prefix}:{fleet}:alerts:lease`,
    alertsNow: () => `${prefix}:{fleet}:alerts:now`,
    idempotency: (key) => `${prefix}:idem:{${bytesToHex(sha1(utf8ToBytes(key)))}}`,
    memory: (id) => tagged("memory", id),
    workers: () => `${prefix}:{health}:workers`,
    run: (id) => tagged("run", id),
    runNodes: (id) => `${tagged("run", id)}:nodes`,
    runOutputs: (id) => `${tagged("run", id)}:outputs`,
    runJoins: (id) => `${tagged("run", id)}:joins`,
    runEvents: (id) => `${tagged("run", id)}:events`,
    graphRuns: () => `${prefix}:{graph}:runs`,
    graphStarting: () => `${prefix}:{graph}:starting`,
    topic: (t) => tagged("topic", t),
    topicBase: (t) => `${tagged("topic", t)}:`,
    topicDeadLetters: (t, g) => `${tagged("topic", t)}:dead:${group(g)}`,
    topicRetries: (t, g) => `${tagged("topic", t)}:retry:${group(g)}`,
    topicErrors: (t, g) => `${tagged("topic", t)}:errors:${group(g)}`,
    topicStats: (t) => `${tagged("topic", t)}:stats`,
    topicLeases: (t, g) => `${tagged("topic", t)}:leases:${group(g)}`,
    topicMetrics: (t) => `${tagged("topic", t)}:metrics`,
    topics: () => `${prefix}:{fleet}:topics`,
    schedule: (id) => {
      if (!SAFE_ID.test(id)) throw invalid("schedule", id);
      return `${prefix}:{schedules}:schedule:${id}`;
    },
    schedulesDue: () => `${prefix}:{schedules}:due`,
    rateLimit: (name) => tagged("ratelimit", name),
    rateLimitPaused: (name) => tagged("ratelimit-paused", name),
    graphTemplate: (name) => {
      if (!SAFE_ID.test(name)) throw invalid("template", name);
      return `${prefix}:{graph}:template:${name}`;
    },
    worker: (id) => {
      if (!SAFE_ID.test(id)) throw invalid("worker", id);
      return `${prefix}:{health}:worker:${id}`;
    },
  };
}
