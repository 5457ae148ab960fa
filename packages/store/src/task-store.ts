import { randomUUID } from "node:crypto";
import { delayedKeys, LANE_ORDER, laneKeys, laneNumber, laneOrderArg } from "@flotilla/broker";
import {
  type Backoff,
  CONSUMER_GROUP,
  CorruptRecordError,
  type Keys,
  type Priority,
  type Retention,
  splitTaskId,
  type TaskStatus,
  ValidationError,
} from "@flotilla/core";
import { pipelineBySlot } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import { type ListTasksOptions, listTasks, type TaskPage } from "./listing.ts";
import { READ_FIELDS, recordFromValues, type TaskResult } from "./record.ts";
import { type FinishOutcome, optStatus, parseFinish, parseStartReplies, type SettleInput, type StartReply } from "./replies.ts";
import { CREATE_TASK_FIELDS, encodeRow, SETTLE_OUTCOME_FIELDS, START_ENTRY_FIELDS } from "./script-fields.ts";
import { scripts } from "./scripts.ts";
import { taskSignature } from "./signing.ts";
import { newSubmitId } from "./submit-id.ts";

export interface NewTask {
  /** `<queue>/<name>`. */
  taskId: string;
  queue: string;
  /** The agent's name, kept on the record and on every event. */
  agent: string;
  /** JSON of `{ agent, input }`, validated by the caller. */
  payload: string;
  /** The first characters of the input, for task lists (inputPreviewOf). @default none */
  inputPreview?: string | undefined;
  /** A fixed creation time (tests). @default Redis's clock (TIME), as every time the scripts write */
  createdAt?: number | undefined;
  detailed: boolean;
  maxRetries: number;
  /** Attempts started at most, counting retries and reclaims after a crash. @default maxRetries + 3 */
  maxDeliveries?: number | undefined;
  timeoutMs?: number | undefined;
  metadata: Record<string, unknown>;
  /** This task's own wait between retries (else the worker's). */
  backoff?: Backoff | undefined;
  /**
   * A delayed task: ms from its creation until it falls due. A delay, not a time: the due time is
   * set on Redis's clock, so a process whose clock is off does not move it.
   */
  delayMs?: number | undefined;
  /** @default "normal" */
  priority?: Priority | undefined;
  /**
   * Set for a caller-chosen id: the name is checked for a duplicate first, and a create resent
   * after a lost reply (same submitId) is not taken for one.
   */
  submitId?: string | undefined;
  /** W3C trace context of the submit (JSON of `{ traceparent, tracestate }`), continued by the worker. */
  trace?: string | undefined;
  /**
   * A graph node task: when it ends (however it ends), the script that ends it notes its id in the
   * queue's hand-off set (`keys.handoff`), read with `readHandoffs` (see @flotilla/graph).
   */
  handoff?: boolean | undefined;
  /**
   * At most `limit` of the queue's tasks with this `key` (e.g. a tenant id) run at once, across the
   * whole fleet; the others wait parked, holding no worker slot (see includes/takeConcurrencySlot.lua).
   */
  concurrency?: { key: string; limit: number } | undefined;
}

/** Trim a queue's index once in this many creates. */
const TRIM_EVERY = 1000;

/**
 * The task record: one hash per task, every status change made by a Lua script that checks the
 * transition, so no terminal status is ever overwritten. A task's record shares its queue's slot,
 * so the hot path works on whole batches: one script creates and enqueues a batch, one claims and
 * starts a batch, one records a batch of outcomes and settles their entries.
 */
export class TaskStore {
  protected readonly redis: Redis;
  protected readonly keys: Keys;
  private readonly retention: Retention;
  private readonly byQueue: Readonly<Record<string, Retention>>;
  private readonly signingSecret: string | undefined;
  private createsSinceTrim = 0;

  /** `byQueue`: queues whose retention differs from `retention` (a worker's `queueRetention`). */
  /** `signingSecret`: every task this store creates is signed with it (see signing.ts). */
  constructor(
    redis: Redis,
    keys: Keys,
    retention: Retention,
    byQueue: Readonly<Record<string, Retention>> = {},
    options: { signingSecret?: string | undefined } = {},
  ) {
    this.redis = redis;
    this.keys = keys;
    this.retention = retention;
    this.byQueue = byQueue;
    this.signingSecret = options.signingSecret;
    for (const s of Object.values(scripts)) s.install(redis);
  }

  /** The retention of one queue's tasks. */
  retentionOf(queue: string): Retention {
    return this.byQueue[queue] ?? this.retention;
  }

  /**
   * Creates records (PENDING) for tasks of one queue and enqueues each, in one script call.
   * Returns, per task, true when created, false when its caller-chosen name was taken; and
   * `lanesMade` when the queue's lanes did not exist and the call made them with their consumer
   * group (the queue is new, or Redis lost its data): register the queue (again).
   * Without submitIds, the batch as a whole is made replay-safe by `batchId`.
   */
  async createMany(queue: string, tasks: readonly NewTask[], batchId?: string): Promise<{ created: boolean[]; lanesMade: boolean }> {
    if (tasks.length === 0) return { created: [], lanesMade: false };
    const k = this.keys;
    const args: Array<string | number> = [];
    let marker = false;
    for (const t of tasks) {
      const name = nameIn(queue, t.taskId);
      if (t.submitId === undefined) marker = true;
      const metadata = JSON.stringify(t.metadata);
      encodeRow(
        CREATE_TASK_FIELDS,
        {
          name,
          agent: t.agent,
          payload: t.payload,
          detailed: t.detailed ? 1 : 0,
          maxRetries: t.maxRetries,
          timeoutMs: t.timeoutMs ?? "",
          metadata: metadata === "{}" ? "" : metadata,
          maxDeliveries: t.maxDeliveries ?? t.maxRetries + 3,
          backoff: t.backoff ? JSON.stringify(t.backoff) : "",
          runIn: t.delayMs ?? "",
          lane: laneNumber(t.priority),
          submitId: t.submitId ?? "",
          trace: t.trace ?? "",
          handoff: t.handoff ? 1 : "",
          concurrencyKey: t.concurrency?.key ?? "",
          concurrencyLimit: t.concurrency?.limit ?? "",
          signature: this.signingSecret === undefined ? "" : taskSignature(this.signingSecret, t.taskId, t.payload, metadata),
          inputPreview: t.inputPreview ?? "",
        },
        args,
      );
    }
    this.createsSinceTrim += tasks.length;
    const trim = this.createsSinceTrim >= TRIM_EVERY;
    if (trim) this.createsSinceTrim = 0;
    const reply = (await scripts.create.run(
      this.redis,
      [...laneKeys(k, queue), ...delayedKeys(k, queue), k.taskIndex(queue), k.submitMarker(queue, batchId ?? (marker ? randomUUID() : "-"))],
      [
        queue,
        k.taskBase(queue),
        k.eventsBase(queue),
        tasks[0]!.createdAt ?? "",
        trim ? this.retention.indexMaxSize : 0,
        marker ? 1 : 0,
        CONSUMER_GROUP,
        ...args,
      ],
    )) as string;
    const lanesMade = reply.endsWith("+");
    return { created: [...(lanesMade ? reply.slice(0, -1) : reply)].map((c) => c === "1"), lanesMade };
  }

  /** Creates one record in PENDING and enqueues it; false when the id is taken. */
  async create(task: NewTask): Promise<boolean> {
    const {
      created: [created],
    } = await this.createMany(task.queue, [{ ...task, submitId: task.submitId ?? newSubmitId() }]);
    return created === true;
  }

  async get(taskId: string): Promise<TaskResult | undefined> {
    const values = await this.redis.hmget(this.keys.task(taskId), ...READ_FIELDS).catch(notAHash);
    return recordFromValues(values, taskId);
  }

  async getMany(taskIds: readonly string[]): Promise<Array<TaskResult | undefined>> {
    if (taskIds.length === 0) return [];
    const replies = await pipelineBySlot(
      this.redis,
      taskIds.map((id) => this.keys.task(id)),
      (pipeline, key) => pipeline.hmget(key, ...READ_FIELDS),
    );
    return replies.map(([err, values], i) => {
      if (err) notAHash(err);
      return recordFromValues(values as Array<string | null>, taskIds[i]!);
    });
  }

  /** `now` fixed by a test, else '' (the scripts read Redis's clock). */
  private startArgs(queue: string, consumer: string, now: number | undefined): Array<string | number> {
    return [CONSUMER_GROUP, consumer, now ?? "", this.keys.taskBase(queue), this.retentionOf(queue).keepCompleted.ageMs, this.keys.statusChannel(queue)];
  }

  /**
   * Claims up to `count` new entries of a queue for `consumer` and starts their tasks, in one round
   * trip. Lanes are read in `order` without blocking. A task past its delivery limit is failed and
   * dead-lettered in the same call (a `dead` reply says so), as in startEntries and settle.
   */
  async claim(queue: string, consumer: string, count: number, order: readonly Priority[] = LANE_ORDER, now?: number): Promise<StartReply[]> {
    const k = this.keys;
    const reply = await scripts.claim.run(
      this.redis,
      [...laneKeys(k, queue), k.claimMarker(queue, randomUUID()), k.stats(queue, now ?? Date.now()), k.deadLetters(queue)],
      [...this.startArgs(queue, consumer, now), this.retention.deadLetterMaxLen, count, laneOrderArg(order)],
    );
    return parseStartReplies(queue, reply);
  }

  /**
   * Starts the tasks of entries `consumer` already holds (read by a blocking claim, or reclaimed
   * after their lease lapsed: then a RUNNING task is taken over).
   */
  async startEntries(
    queue: string,
    consumer: string,
    entries: ReadonlyArray<{ priority: Priority; entryId: string; name: string }>,
    reclaimed: boolean,
    now?: number,
  ): Promise<StartReply[]> {
    if (entries.length === 0) return [];
    const args: Array<string | number> = [...this.startArgs(queue, consumer, now), this.retention.deadLetterMaxLen, reclaimed ? 1 : 0];
    for (const e of entries) encodeRow(START_ENTRY_FIELDS, { lane: laneNumber(e.priority), entryId: e.entryId, name: e.name }, args);
    const k = this.keys;
    return parseStartReplies(
      queue,
      await scripts.start.run(this.redis, [...laneKeys(k, queue), k.stats(queue, now ?? Date.now()), k.deadLetters(queue)], args),
    );
  }

  /**
   * Records attempt outcomes of one queue and settles their entries, in one script call. Each is
   * fenced on its attempt; outcomes come back in order. With `claim`, the same call then claims and
   * starts up to that many new entries (lanes in `order`): finish a batch, start the next.
   */
  async settle(
    queue: string,
    consumer: string,
    outcomes: readonly SettleInput[],
    options: { claim?: number; order?: readonly Priority[]; now?: number; batchId?: string } = {},
  ): Promise<{ outcomes: FinishOutcome[]; started: StartReply[] }> {
    const k = this.keys;
    const r = this.retentionOf(queue);
    const { now } = options;
    const args: Array<string | number> = [
      ...this.startArgs(queue, consumer, now),
      this.retention.deadLetterMaxLen,
      options.claim ?? 0,
      laneOrderArg(options.order ?? LANE_ORDER),
      k.eventsBase(queue),
      r.eventTtlMs,
      r.events === "until-end" ? 1 : 0,
      r.keepCompleted.count,
      r.keepFailed.count,
      r.keepFailed.ageMs,
    ];
    for (const o of outcomes) {
      encodeRow(
        SETTLE_OUTCOME_FIELDS,
        {
          lane: laneNumber(o.priority),
          entryId: o.entryId,
          name: nameIn(queue, o.taskId),
          attempt: o.attempt,
          status: o.status,
          result: o.result === undefined ? "" : JSON.stringify(o.result),
          errorJson: o.error ? JSON.stringify(o.error) : "",
          // A delay, not a time: the due time is set on Redis's clock.
          retryIn: o.retryAt === undefined ? "" : o.retryAt - Date.now(),
          release: o.release ? 1 : 0,
          deadReason: o.deadReason ?? "",
          usage: o.usage ? JSON.stringify(o.usage) : "",
          waiting: o.waiting ? JSON.stringify(o.waiting) : "",
          resume: o.resume === undefined ? "" : JSON.stringify(o.resume),
        },
        args,
      );
    }
    const [settled, started] = (await scripts.settle.run(
      this.redis,
      [
        ...laneKeys(k, queue),
        ...delayedKeys(k, queue),
        k.deadLetters(queue),
        k.claimMarker(queue, options.batchId ?? randomUUID()),
        k.stats(queue, now ?? Date.now()),
        k.kept(queue, "completed"),
        k.kept(queue, "failed"),
        k.taskIndex(queue),
      ],
      args,
    )) as [unknown[], unknown];
    return { outcomes: settled.map(parseFinish), started: parseStartReplies(queue, started) };
  }

  /**
   * Takes a task whose record cannot be trusted (a start or settle replied `corrupt`) out of its
   * queue, in one step: the entry `consumer` holds is dead-lettered with `reason` (the record's small
   * fields kept in the letter as they were) and, when the record is a hash that has not ended, it
   * ends FAILED with code CORRUPT_RECORD and its status event is published, so waiters hear it.
   * `moved` false: the entry is not this consumer's (nothing was written).
   */
  async failCorrupt(
    lane: { queue: string; priority: Priority },
    entryId: string,
    consumer: string,
    taskId: string,
    reason: string,
    now?: number,
  ): Promise<{ moved: boolean; failed: boolean }> {
    const k = this.keys;
    nameIn(lane.queue, taskId);
    const [moved, failed] = (await scripts.failCorrupt.run(
      this.redis,
      [k.lane(lane.queue, lane.priority), k.deadLetters(lane.queue), k.task(taskId), k.stats(lane.queue, now ?? Date.now())],
      [
        CONSUMER_GROUP,
        consumer,
        entryId,
        reason,
        now ?? "",
        taskId,
        this.retention.deadLetterMaxLen,
        this.retentionOf(lane.queue).keepFailed.ageMs,
        k.statusChannel(lane.queue),
        lane.priority,
      ],
    )) as [number, number];
    return { moved: moved === 1, failed: failed === 1 };
  }

  /**
   * Sends a dead-lettered task back to its lane: its FAILED record returns to PENDING and the dead
   * letter is deleted, in one step.
   */
  async requeueDeadLetter(letter: { queue: string; priority: Priority; id: string; taskId: string }): Promise<{
    outcome: "ok" | "gone" | "refused";
    status: TaskStatus | undefined;
  }> {
    const k = this.keys;
    const name = nameIn(letter.queue, letter.taskId);
    const reply = (await scripts.requeue.run(
      this.redis,
      [k.task(letter.taskId), k.events(letter.taskId), k.lane(letter.queue, letter.priority), k.deadLetters(letter.queue)],
      [letter.id, name, CONSUMER_GROUP],
    )) as string[];
    return { outcome: reply[0] as "ok", status: optStatus(reply[1]) };
  }

  /**
   * Sends signal `name` to a WAITING task (see `waitForSignal`): kept on its record, the task goes
   * back to its lane to be resumed by any worker. `payload`: JSON text, checked by the caller.
   * `not-waiting`: it does not wait for this signal (`waitingFor`: the one it waits for, if any).
   */
  async signal(
    taskId: string,
    name: string,
    payload: string,
    now?: number,
  ): Promise<{ outcome: "ok" | "missing" | "not-waiting"; status: TaskStatus | undefined; waitingFor: string | undefined }> {
    const k = this.keys;
    const { queue } = splitTaskId(taskId);
    const reply = (await scripts.signal.run(
      this.redis,
      [k.task(taskId), ...laneKeys(k, queue), ...delayedKeys(k, queue)],
      [name, payload, now ?? "", CONSUMER_GROUP, k.statusChannel(queue)],
    )) as string[];
    return { outcome: reply[0] as "ok", status: optStatus(reply[1]), waitingFor: reply[2] || undefined };
  }

  /** Notes a queue in the registry that listing across queues reads. */
  async registerQueue(queue: string): Promise<void> {
    await this.redis.sadd(this.keys.queues(), queue);
  }

  /** Newest first; filters by status and queue. Records that expired are dropped from their index. */
  list(options: ListTasksOptions = {}): Promise<TaskPage> {
    return listTasks(this.redis, this.keys, (ids) => this.getMany(ids), options);
  }
}

/** A task key that holds no hash (written straight into Redis by something else) is a corrupt record; other errors pass. */
function notAHash(err: unknown): never {
  if (err instanceof Error && err.message.startsWith("WRONGTYPE")) throw new CorruptRecordError("task record", "the key is not a hash");
  throw err;
}

/** A task's name within `queue`; a task of another queue is a ValidationError (one call, one slot). */
function nameIn(queue: string, taskId: string): string {
  const { queue: q, name } = splitTaskId(taskId);
  if (q !== queue) throw ValidationError.of("task id", "taskId", `task ${taskId} is not in queue ${queue}`);
  return name;
}
