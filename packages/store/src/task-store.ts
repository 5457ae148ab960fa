import {
  type Backoff,
  BackoffSchema,
  type Keys,
  LuaScript,
  type Priority,
  parseJsonOr,
  parseTaskRecord,
  type Retention,
  type TaskError,
  TaskErrorSchema,
  TaskRecordSchema,
  type TaskResult,
  type TaskStatus,
  TaskStatusSchema,
} from "@flotilla/core";
import { randomUUID } from "node:crypto";
import type { ChainableCommander, Redis } from "ioredis";
import { decodeCursor, encodeCursor } from "./cursor.ts";

const lua = (name: string, keys: number) => LuaScript.fromFile(new URL(`../lua/${name}.lua`, import.meta.url), keys);
const scripts = { create: lua("create", 2), start: lua("start", 4), finish: lua("finish", 4), requeue: lua("requeue", 2) };

/** Record fields read back (the payload is only read by the worker that starts the task). */
const FIELDS = Object.keys(TaskRecordSchema.shape);

export interface NewTask {
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
  /** Identifies this submit, so a create resent after a lost reply is not taken for a duplicate id. */
  submitId?: string | undefined;
}

export type StartOutcome =
  | {
      kind: "run";
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
    }
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
}

export type FinishOutcome =
  | { ok: true; status: TaskStatus }
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
 * transition, so no terminal status is ever overwritten.
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

  /** Queues the creation of a record (and its index entry) on a pipeline; the reply is 1 or 0. */
  queueCreate(pipeline: ChainableCommander, task: NewTask): void {
    const k = this.keys;
    scripts.create.queue(
      pipeline,
      [k.task(task.taskId), k.events(task.taskId)],
      [
        task.taskId,
        task.queue,
        task.agent,
        task.payload,
        task.createdAt,
        task.detailed ? 1 : 0,
        task.maxRetries,
        task.timeoutMs ?? "",
        JSON.stringify(task.metadata),
        this.retention.pendingTtlMs,
        task.maxDeliveries ?? task.maxRetries + 3,
        task.backoff ? JSON.stringify(task.backoff) : "",
        task.runAt ?? "",
        task.priority ?? "normal",
        task.submitId ?? randomUUID(),
      ],
    );
    pipeline.zadd(k.taskIndex(), "NX", task.createdAt, task.taskId);
    if (++this.createsSinceTrim >= 1000) {
      this.createsSinceTrim = 0;
      this.queueIndexTrim(pipeline, task.createdAt);
    }
  }

  /** Creates a record in PENDING; false when the id is taken. */
  async create(task: NewTask): Promise<boolean> {
    const pipeline = this.redis.pipeline();
    this.queueCreate(pipeline, task);
    const [created] = (await pipeline.exec()) ?? [];
    if (!created) throw new Error("empty pipeline reply");
    if (created[0]) throw created[0];
    return created[1] === 1;
  }

  /** Removes a record that never made it into its queue. */
  async discard(taskId: string): Promise<void> {
    await this.redis.multi().unlink(this.keys.task(taskId), this.keys.events(taskId)).exec();
    await this.redis.zrem(this.keys.taskIndex(), taskId);
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

  /**
   * Moves a claimed task to RUNNING with a new attempt number, or says why it must not run.
   * `reclaimed`: the entry came back after its lease lapsed, so a RUNNING task is taken over.
   */
  async start(
    taskId: string,
    workerId: string,
    options: { reclaimed?: boolean; now?: number; entryId?: string } = {},
  ): Promise<StartOutcome> {
    const now = options.now ?? Date.now();
    const k = this.keys;
    const r = this.retention;
    const reply = (await scripts.start.run(
      this.redis,
      [k.task(taskId), k.events(taskId), k.eventsChannel(taskId), k.doneChannel(taskId)],
      [workerId, now, r.eventMaxLen, r.eventTtlMs, r.recordTtlMs, options.reclaimed ? 1 : 0, options.entryId ?? ""],
    )) as string[];
    if (reply[0] === "run") {
      return {
        kind: "run",
        attempt: Number(reply[1]),
        payload: reply[2] ?? "",
        timeoutMs: reply[3] ? Number(reply[3]) : undefined,
        detailed: reply[4] === "1",
        metadata: reply[5] ?? "{}",
        agent: reply[6] ?? "",
        retries: Number(reply[7] ?? 0),
        maxRetries: Number(reply[8] ?? 0),
        backoff: parseBackoff(reply[9]),
      };
    }
    if (reply[1] === "dead") {
      const lastError = TaskErrorSchema.safeParse(parseJsonOr(reply[4], null));
      return { kind: "dead", attempts: Number(reply[3]), lastError: lastError.success ? lastError.data : undefined };
    }
    return { kind: "skip", reason: reply[1] as "missing", status: optStatus(reply[2]) };
  }

  /** Records the end of an attempt; rejected when the task is already terminal or the attempt is stale. */
  queueFinish(pipeline: ChainableCommander, taskId: string, input: FinishInput, now = Date.now()): void {
    const k = this.keys;
    const r = this.retention;
    const event: Record<string, unknown> = {
      type: "status",
      status: input.status.toLowerCase(),
      taskId,
      attempt: input.attempt,
      ts: now,
      agent: input.agent,
    };
    if (input.result !== undefined) event.result = input.result;
    if (input.error) event.error = input.error;
    scripts.finish.queue(
      pipeline,
      [k.task(taskId), k.events(taskId), k.eventsChannel(taskId), k.doneChannel(taskId)],
      [
        input.attempt,
        input.status,
        now,
        input.result === undefined ? "" : JSON.stringify(input.result),
        input.error ? JSON.stringify(input.error) : "",
        JSON.stringify(event),
        r.eventMaxLen,
        r.eventTtlMs,
        r.recordTtlMs,
        input.retryAt ?? "",
        input.release ? 1 : 0,
      ],
    );
  }

  /** Brings a FAILED task back to PENDING (its dead letter is being re-queued); false if it is not FAILED. */
  async requeue(taskId: string): Promise<{ ok: boolean; status: TaskStatus | undefined }> {
    const k = this.keys;
    const reply = (await scripts.requeue.run(this.redis, [k.task(taskId), k.events(taskId)], [this.retention.pendingTtlMs])) as string[];
    return { ok: reply[0] === "ok", status: optStatus(reply[1]) };
  }

  async finish(taskId: string, input: FinishInput, now = Date.now()): Promise<FinishOutcome> {
    const pipeline = this.redis.pipeline();
    this.queueFinish(pipeline, taskId, input, now);
    const [[err, reply] = []] = (await pipeline.exec()) ?? [];
    if (err) throw err;
    return parseFinish(reply);
  }

  /** Newest first; filters by status and queue. Records that expired are dropped from the index. */
  async list(options: ListTasksOptions = {}): Promise<TaskPage> {
    const limit = Math.max(1, Math.min(options.limit ?? 50, 1000));
    const index = this.keys.taskIndex();
    const after = decodeCursor(options.cursor);
    const max = after ? String(after.score) : "+inf";
    const batch = Math.max(limit * 2, 100);
    const budget = Math.max(limit * 20, 2000); // entries scanned per call when filters reject most
    const tasks: TaskResult[] = [];
    let offset = 0;
    let scanned = 0;
    let last: { score: number; id: string } | undefined;
    for (;;) {
      const rows = await this.redis.zrange(index, max, "-inf", "BYSCORE", "REV", "LIMIT", offset, batch, "WITHSCORES");
      if (rows.length === 0) return { tasks, nextCursor: undefined };
      offset += rows.length / 2;
      const ids: string[] = [];
      const scores: number[] = [];
      for (let i = 0; i < rows.length; i += 2) {
        const id = rows[i]!;
        const score = Number(rows[i + 1]);
        if (after && score === after.score && id >= after.id) continue;
        ids.push(id);
        scores.push(score);
      }
      const records = await this.getMany(ids);
      const gone: string[] = [];
      for (let i = 0; i < ids.length; i++) {
        const record = records[i];
        last = { score: scores[i]!, id: ids[i]! };
        scanned++;
        if (!record) {
          gone.push(ids[i]!);
        } else if ((!options.status || record.status === options.status) && (!options.queue || record.queue === options.queue)) {
          tasks.push(record);
          if (tasks.length === limit) break;
        }
      }
      if (gone.length) await this.redis.zrem(index, ...gone);
      if (tasks.length === limit || scanned >= budget) return { tasks, nextCursor: last && encodeCursor(last) };
    }
  }

  private queueIndexTrim(pipeline: ChainableCommander, now: number): void {
    const index = this.keys.taskIndex();
    // No record outlives pendingTtl + recordTtl, so older index entries point at nothing.
    pipeline.zremrangebyscore(index, "-inf", `(${now - this.retention.pendingTtlMs - this.retention.recordTtlMs}`);
    pipeline.zremrangebyrank(index, 0, -this.retention.indexMaxSize - 1);
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

export function parseFinish(reply: unknown): FinishOutcome {
  const r = reply as string[];
  if (r[0] === "ok") return { ok: true, status: optStatus(r[1])! };
  return { ok: false, reason: r[1] as "stale", status: optStatus(r[2]) };
}
