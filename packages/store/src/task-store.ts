import { randomUUID } from "node:crypto";
import {
  type Backoff,
  BackoffSchema,
  CONSUMER_GROUP,
  DEAD_LETTER_MAX_LEN,
  type Keys,
  LuaScript,
  type Priority,
  parseJsonOr,
  parseTaskRecord,
  type Retention,
  splitTaskId,
  type TaskError,
  TaskErrorSchema,
  TaskRecordSchema,
  type TaskResult,
  type TaskStatus,
  TaskStatusSchema,
  type TokenUsage,
  taskIdOf,
} from "@flotilla/core";
import type { Redis } from "ioredis";
import { decodeCursor, encodeCursor, type Position } from "./cursor.ts";

const lua = (name: string, keys: number) => LuaScript.fromFile(new URL(`../lua/${name}.lua`, import.meta.url), keys);
const scripts = {
  create: lua("create", 8),
  claim: lua("claim", 5),
  start: lua("start", 4),
  settle: lua("settle", 9),
  requeue: lua("requeue", 4),
};

/** Lanes as the scripts number them. */
const LANES: readonly Priority[] = ["high", "normal", "low"];
const laneNumber = (p: Priority | undefined) => LANES.indexOf(p ?? "normal") + 1;
const laneOf = (n: unknown): Priority => LANES[Number(n) - 1] ?? "normal";

/** Record fields read back (the payload is only read by the worker that starts the task). */
const FIELDS = Object.keys(TaskRecordSchema.shape);

export interface NewTask {
  /** `<queue>/<name>`. */
  taskId: string;
  queue: string;
  /** The agent's name, kept on the record and on every event. */
  agent: string;
  /** JSON of `{ agent, input }`, validated by the caller. */
  payload: string;
  createdAt: number;
  detailed: boolean;
  maxRetries: number;
  /** Attempts started at most, counting retries and reclaims after a crash. @default maxRetries + 3 */
  maxDeliveries?: number | undefined;
  timeoutMs?: number | undefined;
  metadata: Record<string, unknown>;
  /** This task's own wait between retries (else the worker's). */
  backoff?: Backoff | undefined;
  /** When a delayed task becomes due. */
  runAt?: number | undefined;
  /** @default "normal" */
  priority?: Priority | undefined;
  /**
   * Set for a caller-chosen id: the name is checked for a duplicate first, and a create resent
   * after a lost reply (same submitId) is not taken for one.
   */
  submitId?: string | undefined;
  /** W3C trace context of the submit (JSON of `{ traceparent, tracestate }`), continued by the worker. */
  trace?: string | undefined;
}

/** What a worker needs to run a started task. */
export interface RunnableTask {
  attempt: number;
  /** JSON of `{ agent, input }`, to be validated by the caller. */
  payload: string;
  timeoutMs: number | undefined;
  detailed: boolean;
  /** JSON object given at submit. */
  metadata: string;
  /** The agent's name as recorded at submit. */
  agent: string;
  retries: number;
  maxRetries: number;
  backoff: Backoff | undefined;
  /** How long the task had waited since it was created, in ms. */
  waitedMs: number;
  /** The submit's trace context (JSON), if it was traced. */
  trace: string | undefined;
}

interface EntryRef {
  priority: Priority;
  entryId: string;
}

/** What starting one claimed entry came to. Skipped entries were settled by the script already. */
export type StartReply = EntryRef &
  (
    | ({ kind: "run"; taskId: string } & RunnableTask)
    | { kind: "skip"; taskId: string; reason: "terminal" | "running" | "cancelled"; status: TaskStatus | undefined }
    | { kind: "missing"; taskId: string }
    | { kind: "dead"; taskId: string; attempts: number; lastError: TaskError | undefined }
    | { kind: "malformed"; fields: Record<string, string> | null }
  );

export type StartOutcome =
  | ({ kind: "run" } & RunnableTask)
  | { kind: "skip"; reason: "missing" | "terminal" | "running" | "cancelled"; status: TaskStatus | undefined }
  | { kind: "dead"; attempts: number; lastError: TaskError | undefined };

export interface FinishInput {
  attempt: number;
  status: "COMPLETED" | "FAILED" | "CANCELLED" | "RETRYING";
  agent: string;
  result?: unknown;
  error?: TaskError | undefined;
  /** With RETRYING: when the next attempt is due. */
  retryAt?: number | undefined;
  /** With RETRYING: the task is handed back unfinished (worker shutdown) and uses up no retry. */
  release?: boolean | undefined;
  /** The attempt's token totals, kept on the record. */
  usage?: TokenUsage | undefined;
}

/** An attempt's outcome with the queue entry to settle: acknowledged, delayed for a retry, or dead-lettered. */
export interface SettleInput extends FinishInput {
  taskId: string;
  priority: Priority;
  /** "" when there is no entry to settle. */
  entryId: string;
  /** With FAILED: the dead letter's reason. */
  deadReason?: string | undefined;
}

export type FinishOutcome =
  | { ok: true; status: TaskStatus; deadLettered: boolean }
  | { ok: false; reason: "missing" | "terminal" | "stale"; status: TaskStatus | undefined };

export interface ListTasksOptions {
  status?: TaskStatus | undefined;
  queue?: string | undefined;
  /** @default 50 */
  limit?: number | undefined;
  /** From the previous page's `nextCursor`. */
  cursor?: string | undefined;
}

export interface TaskPage {
  tasks: TaskResult[];
  /** Undefined on the last page. */
  nextCursor: string | undefined;
}

const optStatus = (s: unknown): TaskStatus | undefined => {
  const parsed = TaskStatusSchema.safeParse(s);
  return parsed.success ? parsed.data : undefined;
};

/**
 * The task record: one hash per task, every status change made by a Lua script that checks the
 * transition, so no terminal status is ever overwritten. A task's record shares its queue's slot,
 * so the hot path works on whole batches: one script creates and enqueues a batch, one claims and
 * starts a batch, one records a batch of outcomes and settles their entries.
 */
export class TaskStore {
  private readonly redis: Redis;
  private readonly keys: Keys;
  private readonly retention: Retention;
  private createsSinceTrim = 0;

  constructor(redis: Redis, keys: Keys, retention: Retention) {
    this.redis = redis;
    this.keys = keys;
    this.retention = retention;
    for (const s of Object.values(scripts)) s.install(redis);
  }

  private laneKeys(queue: string): string[] {
    return LANES.map((p) => this.keys.lane(queue, p));
  }

  /**
   * Creates records (PENDING) for tasks of one queue and enqueues each, in one script call.
   * Returns, per task, true when created, false when its caller-chosen name was taken.
   * Without submitIds, the batch as a whole is made replay-safe by `batchId`.
   */
  async createMany(queue: string, tasks: readonly NewTask[], batchId: string = randomUUID()): Promise<boolean[]> {
    if (tasks.length === 0) return [];
    const k = this.keys;
    const args: Array<string | number> = [];
    let marker = false;
    for (const t of tasks) {
      const { queue: q, name } = splitTaskId(t.taskId);
      if (q !== queue) throw new Error(`task ${t.taskId} is not in queue ${queue}`);
      if (t.submitId === undefined) marker = true;
      const metadata = JSON.stringify(t.metadata);
      args.push(
        name,
        t.agent,
        t.payload,
        t.detailed ? 1 : 0,
        t.maxRetries,
        t.timeoutMs ?? "",
        metadata === "{}" ? "" : metadata,
        t.maxDeliveries ?? t.maxRetries + 3,
        t.backoff ? JSON.stringify(t.backoff) : "",
        t.runAt ?? "",
        laneNumber(t.priority),
        t.submitId ?? "",
        t.trace ?? "",
      );
    }
    this.createsSinceTrim += tasks.length;
    const trim = this.createsSinceTrim >= 1000;
    if (trim) this.createsSinceTrim = 0;
    const reply = (await scripts.create.run(
      this.redis,
      [...this.laneKeys(queue), ...LANES.map((p) => k.delayed(queue, p)), k.taskIndex(queue), k.batch(queue, batchId)],
      [
        queue,
        k.taskBase(queue),
        k.eventsBase(queue),
        tasks[0]!.createdAt,
        trim ? this.retention.indexMaxSize : 0,
        marker ? 1 : 0,
        ...args,
      ],
    )) as string;
    return [...reply].map((c) => c === "1");
  }

  /** Creates one record in PENDING and enqueues it; false when the id is taken. */
  async create(task: NewTask): Promise<boolean> {
    const [created] = await this.createMany(task.queue, [{ ...task, submitId: task.submitId ?? randomUUID() }]);
    return created === true;
  }

  async get(taskId: string): Promise<TaskResult | undefined> {
    const values = await this.redis.hmget(this.keys.task(taskId), ...FIELDS);
    return parseTaskRecord(zip(values), taskId);
  }

  async getMany(taskIds: readonly string[]): Promise<Array<TaskResult | undefined>> {
    if (taskIds.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of taskIds) pipeline.hmget(this.keys.task(id), ...FIELDS);
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([err, values], i) => {
      if (err) throw err;
      return parseTaskRecord(zip(values as Array<string | null>), taskIds[i]!);
    });
  }

  private startArgs(queue: string, consumer: string, now: number): Array<string | number> {
    return [CONSUMER_GROUP, consumer, now, this.keys.taskBase(queue), this.retention.recordTtlMs, this.keys.statusChannel(queue)];
  }

  /**
   * Claims up to `count` new entries of a queue for `consumer` and starts their tasks, in one round
   * trip. Lanes are read in `order` without blocking.
   */
  async claim(queue: string, consumer: string, count: number, order: readonly Priority[] = LANES, now = Date.now()): Promise<StartReply[]> {
    const reply = await scripts.claim.run(this.redis, [...this.laneKeys(queue), this.keys.batch(queue, randomUUID()), this.keys.stats(queue, now)], [
      ...this.startArgs(queue, consumer, now),
      count,
      order.map(laneNumber).join(","),
    ]);
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
    now = Date.now(),
  ): Promise<StartReply[]> {
    if (entries.length === 0) return [];
    const args: Array<string | number> = [...this.startArgs(queue, consumer, now), reclaimed ? 1 : 0];
    for (const e of entries) args.push(laneNumber(e.priority), e.entryId, e.name);
    return parseStartReplies(queue, await scripts.start.run(this.redis, [...this.laneKeys(queue), this.keys.stats(queue, now)], args));
  }

  /**
   * Moves a task to RUNNING with a new attempt number, or says why it must not run.
   * `reclaimed`: the entry came back after its lease lapsed, so a RUNNING task is taken over.
   */
  async start(
    taskId: string,
    workerId: string,
    options: { reclaimed?: boolean; now?: number; entryId?: string; priority?: Priority } = {},
  ): Promise<StartOutcome> {
    const { queue, name } = splitTaskId(taskId);
    const [reply] = await this.startEntries(
      queue,
      workerId,
      [{ priority: options.priority ?? "normal", entryId: options.entryId ?? "", name }],
      options.reclaimed ?? false,
      options.now,
    );
    if (!reply) throw new Error("empty start reply");
    switch (reply.kind) {
      case "run": {
        const { kind, priority, entryId, taskId: _, ...run } = reply;
        return { kind, ...run };
      }
      case "skip":
        return { kind: "skip", reason: reply.reason, status: reply.status };
      case "dead":
        return { kind: "dead", attempts: reply.attempts, lastError: reply.lastError };
      default:
        return { kind: "skip", reason: "missing", status: undefined };
    }
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
    const now = options.now ?? Date.now();
    const args: Array<string | number> = [
      ...this.startArgs(queue, consumer, now),
      DEAD_LETTER_MAX_LEN,
      options.claim ?? 0,
      (options.order ?? LANES).map(laneNumber).join(","),
    ];
    for (const o of outcomes) {
      const { queue: q, name } = splitTaskId(o.taskId);
      if (q !== queue) throw new Error(`task ${o.taskId} is not in queue ${queue}`);
      args.push(
        laneNumber(o.priority),
        o.entryId,
        name,
        o.attempt,
        o.status,
        o.result === undefined ? "" : JSON.stringify(o.result),
        o.error ? JSON.stringify(o.error) : "",
        o.retryAt ?? "",
        o.release ? 1 : 0,
        o.deadReason ?? "",
        o.usage ? JSON.stringify(o.usage) : "",
      );
    }
    const [settled, started] = (await scripts.settle.run(
      this.redis,
      [...this.laneKeys(queue), ...LANES.map((p) => k.delayed(queue, p)), k.deadLetters(queue), k.batch(queue, options.batchId ?? randomUUID()), k.stats(queue, now)],
      args,
    )) as [unknown[], unknown];
    return { outcomes: settled.map(parseFinish), started: parseStartReplies(queue, started) };
  }

  /** Records the end of an attempt with no entry to settle; rejected when the task is already terminal or the attempt is stale. */
  async finish(taskId: string, input: FinishInput, now = Date.now()): Promise<FinishOutcome> {
    const { outcomes } = await this.settle(splitTaskId(taskId).queue, "", [{ ...input, taskId, priority: "normal", entryId: "" }], { now });
    return outcomes[0]!;
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
    const { name } = splitTaskId(letter.taskId);
    const reply = (await scripts.requeue.run(
      this.redis,
      [k.task(letter.taskId), k.events(letter.taskId), k.lane(letter.queue, letter.priority), k.deadLetters(letter.queue)],
      [letter.id, name],
    )) as string[];
    return { outcome: reply[0] as "ok", status: optStatus(reply[1]) };
  }

  /** Notes a queue in the registry that listing across queues reads. */
  async registerQueue(queue: string): Promise<void> {
    await this.redis.sadd(this.keys.queues(), queue);
  }

  /** Newest first; filters by status and queue. Records that expired are dropped from their index. */
  async list(options: ListTasksOptions = {}): Promise<TaskPage> {
    const limit = Math.max(1, Math.min(options.limit ?? 50, 1000));
    const queues = options.queue ? [options.queue] : (await this.redis.smembers(this.keys.queues())).sort();
    const after = decodeCursor(options.cursor);
    const batch = Math.max(limit * 2, 100);
    const budget = Math.max(limit * 20, 2000); // entries scanned per call when filters reject most
    const sources = queues.map((queue) => new IndexReader(this.redis, this.keys.taskIndex(queue), queue, after, batch));
    const tasks: TaskResult[] = [];
    let scanned = 0;
    let last: Position | undefined;
    for (;;) {
      // The newest `batch` rows across every queue's index, merged.
      const rows: IndexRow[] = [];
      while (rows.length < batch) {
        const heads = await Promise.all(sources.map((s) => s.peek()));
        let best = -1;
        for (let i = 0; i < heads.length; i++) {
          const h = heads[i];
          if (h && (best < 0 || newer(h, heads[best]!))) best = i;
        }
        if (best < 0) break;
        rows.push(sources[best]!.take());
      }
      if (rows.length === 0) return { tasks, nextCursor: undefined };
      const records = await this.getMany(rows.map((r) => r.id));
      const gone = new Map<string, string[]>();
      for (let i = 0; i < rows.length; i++) {
        const record = records[i];
        const row = rows[i]!;
        last = { score: row.score, id: row.id };
        scanned++;
        if (!record) {
          gone.set(row.queue, [...(gone.get(row.queue) ?? []), splitTaskId(row.id).name]);
        } else if ((!options.status || record.status === options.status) && (!options.queue || record.queue === options.queue)) {
          tasks.push(record);
          if (tasks.length === limit) break;
        }
      }
      for (const [queue, names] of gone) await this.redis.zrem(this.keys.taskIndex(queue), ...names);
      if (tasks.length === limit || scanned >= budget) return { tasks, nextCursor: last && encodeCursor(last) };
    }
  }
}

interface IndexRow extends Position {
  queue: string;
}

const newer = (a: Position, b: Position) => a.score > b.score || (a.score === b.score && a.id > b.id);

/** Reads one queue's index newest first, in pages, after a cursor position. */
class IndexReader {
  private readonly redis: Redis;
  private readonly key: string;
  private readonly queue: string;
  private readonly after: Position | undefined;
  private readonly page: number;
  private offset = 0;
  private buffer: IndexRow[] = [];
  private done = false;

  constructor(redis: Redis, key: string, queue: string, after: Position | undefined, page: number) {
    this.redis = redis;
    this.key = key;
    this.queue = queue;
    this.after = after;
    this.page = page;
  }

  async peek(): Promise<IndexRow | undefined> {
    while (this.buffer.length === 0 && !this.done) {
      const max = this.after ? String(this.after.score) : "+inf";
      const rows = await this.redis.zrange(this.key, max, "-inf", "BYSCORE", "REV", "LIMIT", this.offset, this.page, "WITHSCORES");
      this.offset += rows.length / 2;
      if (rows.length / 2 < this.page) this.done = true;
      for (let i = 0; i < rows.length; i += 2) {
        const row = { queue: this.queue, id: taskIdOf(this.queue, rows[i]!), score: Number(rows[i + 1]) };
        if (this.after && row.score === this.after.score && row.id >= this.after.id) continue;
        this.buffer.push(row);
      }
    }
    return this.buffer[0];
  }

  take(): IndexRow {
    return this.buffer.shift()!;
  }
}

function zip(values: Array<string | null>): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < FIELDS.length; i++) {
    const v = values[i];
    if (v !== null && v !== undefined) out[FIELDS[i]!] = v;
  }
  return out;
}

function parseBackoff(text: string | undefined): Backoff | undefined {
  if (!text) return undefined;
  const parsed = BackoffSchema.safeParse(parseJsonOr(text, null));
  return parsed.success ? parsed.data : undefined;
}

function parseStartReplies(queue: string, reply: unknown): StartReply[] {
  return (reply as unknown[][]).map((r) => {
    const priority = laneOf(r[1]);
    const entryId = String(r[2]);
    const taskId = taskIdOf(queue, String(r[3] ?? ""));
    switch (r[0]) {
      case "run":
        return {
          kind: "run",
          priority,
          entryId,
          taskId,
          attempt: Number(r[4]),
          payload: String(r[5] ?? ""),
          timeoutMs: r[6] ? Number(r[6]) : undefined,
          detailed: r[7] === "1",
          metadata: String(r[8] ?? "{}"),
          agent: String(r[9] ?? ""),
          retries: Number(r[10] ?? 0),
          maxRetries: Number(r[11] ?? 0),
          backoff: parseBackoff(r[12] as string | undefined),
          waitedMs: Number(r[13] ?? 0),
          trace: r[14] ? String(r[14]) : undefined,
        };
      case "skip":
        return { kind: "skip", priority, entryId, taskId, reason: r[4] as "terminal", status: optStatus(r[5]) };
      case "dead": {
        const lastError = TaskErrorSchema.safeParse(parseJsonOr(r[5] as string, null));
        return { kind: "dead", priority, entryId, taskId, attempts: Number(r[4]), lastError: lastError.success ? lastError.data : undefined };
      }
      case "missing":
        return { kind: "missing", priority, entryId, taskId };
      default: {
        const pairs = r.slice(3).map(String);
        const fields: Record<string, string> = {};
        for (let i = 0; i + 1 < pairs.length; i += 2) fields[pairs[i]!] = pairs[i + 1]!;
        return { kind: "malformed", priority, entryId, fields: pairs.length ? fields : null };
      }
    }
  });
}

export function parseFinish(reply: unknown): FinishOutcome {
  const r = reply as unknown[];
  if (r[0] === "ok") return { ok: true, status: optStatus(r[1])!, deadLettered: Number(r[2]) === 1 };
  return { ok: false, reason: r[1] as "stale", status: optStatus(r[2]) };
}
