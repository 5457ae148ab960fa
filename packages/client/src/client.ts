import { randomUUID } from "node:crypto";
import { Broker, type DeadLetter } from "@flotilla/broker";
import { createKeys, DuplicateTaskError, ErrorCodes, FlotillaError, type JsonValue, JsonValueSchema, type Keys, type Message, newId, parseInput, QueueNameSchema, type ResolvedSubmitOptions, type Retention, type RetentionOptions, type RunnableSpec, RunnableSpecSchema, resolveRetention, type Serializable, type SubmitOptions, SubmitOptionsSchema, splitTaskId, TaskIdSchema, TaskStatusSchema, taskIdOf, ValidationError } from "@flotilla/core";
import { closeRedis, type OwnedRedis, openRedis, type RedisConnection, SubscriberHub, withRedis } from "@flotilla/core/redis";
import { StatusFeed } from "@flotilla/events";
import { type FleetStatus, type FleetStatusOptions, getFleetStatus } from "@flotilla/health";
import { checkConversationId, loadHistory, type MemoryStore, MemoryStores } from "@flotilla/memory";
import { defaultMetrics, type FlotillaMetrics, injectTrace, METRICS, SpanKind, withSpan } from "@flotilla/metrics";
import { type ListTasksOptions, type NewTask, type TaskPage, TaskStore } from "@flotilla/store";
import { z } from "zod";
import type { ClientContext } from "./context.ts";
import { TaskHandle } from "./task-handle.ts";

export interface ClientOptions {
  /** Redis URL, ioredis options or instance. @default process.env.REDIS_URL ?? "redis://127.0.0.1:6379" */
  redis?: RedisConnection;
  /** Key prefix shared with the workers. @default "flotilla" */
  prefix?: string;
  retention?: RetentionOptions;
  /** Largest accepted payload (agent + input) as JSON. @default 1_048_576 */
  maxPayloadBytes?: number;
  /** How long to wait for Redis to answer before a ConnectionError. @default 5_000 */
  connectTimeoutMs?: number;
  /** Memory stores by name, for `conversation()`; `redis` (this client's connection) is built in. */
  memory?: Record<string, MemoryStore>;
  /** Where submit counts go (OpenTelemetry, and readable with `snapshot()`). @default defaultMetrics() */
  metrics?: FlotillaMetrics;
}

/** Anything `submit` accepts as an agent: an object with `toJSON()` (Agent, Swarm) or its plain JSON. */
export type AgentLike = Serializable | RunnableSpec;

/** A conversation kept by a memory store, as the client reads it. */
export interface Conversation {
  /** Its messages, oldest first (a retried task's earlier attempts left out). */
  messages(): Promise<Message[]>;
  /** Forgets it. */
  clear(): Promise<void>;
}

const ListOptionsSchema = z
  .object({
    status: TaskStatusSchema.optional(),
    queue: QueueNameSchema.optional(),
    limit: z.number().int().min(1).max(1000).optional(),
    cursor: z.string().optional(),
  })
  .strict();

/**
 * The application's side of Flotilla: submits agent runs and hands back TaskHandles.
 * It never loads the agent runtime: agents travel as their JSON.
 */
export class FlotillaClient {
  readonly keys: Keys;
  private readonly conn: OwnedRedis;
  private readonly retention: Retention;
  private readonly store: TaskStore;
  private readonly broker: Broker;
  private readonly maxPayloadBytes: number;
  private readonly redisOption: RedisConnection | undefined;
  private readonly connectTimeoutMs: number;
  private hubPromise: Promise<SubscriberHub> | undefined;
  private feed: StatusFeed | undefined;
  /** Queues whose consumer group and registry entry this client has made sure of. */
  private readonly knownQueues = new Set<string>();
  private readonly memoryStores: MemoryStores;
  private readonly metrics: FlotillaMetrics;
  private readonly ctx: ClientContext;
  private closed = false;

  constructor(options: ClientOptions = {}) {
    this.redisOption = options.redis ?? process.env.REDIS_URL;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5000;
    this.keys = createKeys(options.prefix);
    this.retention = resolveRetention(options.retention);
    this.maxPayloadBytes = options.maxPayloadBytes ?? 1_048_576;
    this.memoryStores = new MemoryStores(options.memory, () => this.conn.redis, this.keys.prefix, "client");
    this.metrics = options.metrics ?? defaultMetrics();
    this.conn = openRedis(this.redisOption, "command", { failFast: true, connectTimeoutMs: this.connectTimeoutMs });
    this.conn.redis.on("error", () => {}); // surfaced per command as ConnectionError
    this.store = new TaskStore(this.conn.redis, this.keys, this.retention);
    this.broker = new Broker(this.conn.redis, this.keys);
    this.ctx = {
      redis: this.conn.redis,
      keys: this.keys,
      retention: this.retention,
      store: this.store,
      broker: this.broker,
      hub: () => this.hub(),
      statusFeed: async () => {
        const hub = await this.hub();
        this.feed ??= new StatusFeed(hub, this.keys);
        return this.feed;
      },
    };
  }

  /**
   * Validates and records the task (PENDING), then enqueues it. Rejects with ValidationError
   * naming the bad field, DuplicateTaskError for a taken `taskId`, ConnectionError when Redis is
   * unreachable.
   */
  async submit(agent: AgentLike, input: JsonValue, options: SubmitOptions = {}): Promise<TaskHandle> {
    this.assertOpen();
    const spec = parseInput(RunnableSpecSchema, serialise(agent), "agent");
    const opts = parseInput(SubmitOptionsSchema, options, "options");
    const value = parseInput(JsonValueSchema, input, "input");
    const payload = JSON.stringify({ agent: spec, input: value });
    if (Buffer.byteLength(payload) > this.maxPayloadBytes) {
      throw new ValidationError("input", [
        { path: "input", message: `payload is ${Buffer.byteLength(payload)} bytes; the limit is ${this.maxPayloadBytes}` },
      ]);
    }
    const taskId = taskIdOf(opts.queue, nameFor(opts));
    const redis = this.conn.redis;
    const now = Date.now();
    const runAt = opts.runAt ?? (opts.delayMs === undefined ? undefined : now + opts.delayMs);
    const attributes = { "flotilla.task_id": taskId, "flotilla.queue": opts.queue, "flotilla.agent": spec.name };
    return withSpan("flotilla.submit", { kind: SpanKind.PRODUCER, attributes }, () => withRedis(redis, async () => {
      let idemKey: string | undefined;
      if (opts.idempotencyKey !== undefined) {
        idemKey = this.keys.idempotency(opts.idempotencyKey);
        const [[setErr, set] = [], [getErr, firstId] = []] =
          (await redis.pipeline().set(idemKey, taskId, "PX", opts.idempotencyWindowMs, "NX").get(idemKey).exec()) ?? [];
        if (setErr ?? getErr) throw setErr ?? getErr;
        // Taken: the first submit's task. (Null only if the key expired between SET and GET: go on as new.)
        if (set !== "OK" && typeof firstId === "string") return new TaskHandle(this.ctx, firstId);
      }
      try {
        const handle = await this.createAndEnqueue(taskId, spec.name, payload, now, runAt, opts);
        this.metrics.add(METRICS.submitted, 1, { queue: opts.queue, agent: spec.name });
        return handle;
      } catch (err) {
        // The key must not point at a task that was never made.
        if (idemKey) await redis.del(idemKey).catch(() => {});
        throw err;
      }
    }));
  }

  private async createAndEnqueue(
    taskId: string,
    agent: string,
    payload: string,
    now: number,
    runAt: number | undefined,
    opts: ResolvedSubmitOptions,
  ): Promise<TaskHandle> {
    await this.knowQueue(opts.queue);
    // Record and entry are written by one script: there is never a record that no worker will see.
    const created = await this.store.create(this.newTask(taskId, agent, payload, now, runAt, opts));
    if (!created) throw new DuplicateTaskError(taskId);
    return new TaskHandle(this.ctx, taskId);
  }

  private async knowQueue(queue: string): Promise<void> {
    if (this.knownQueues.has(queue)) return;
    await this.broker.ensureGroup(queue);
    await this.store.registerQueue(queue);
    this.knownQueues.add(queue);
  }

  /**
   * Submits many tasks in one round trip per queue, however many there are: one script creates
   * their records and enqueues them.
   * Every item is validated first: a bad one rejects the whole call (ValidationError naming
   * `items.<i>.<field>`) before anything is written. Taken ids (caller-chosen `taskId`s) reject with
   * a DuplicateTaskError after the others were enqueued; its `details.handles` lists those.
   * Idempotency keys are not supported here: submit those one by one.
   */
  async submitMany(items: ReadonlyArray<{ agent: AgentLike; input: JsonValue; options?: SubmitOptions }>): Promise<TaskHandle[]> {
    this.assertOpen();
    const now = Date.now();
    const prepared = items.map((item, i) => {
      try {
        const spec = parseInput(RunnableSpecSchema, serialise(item.agent), "agent");
        const opts = parseInput(SubmitOptionsSchema, item.options ?? {}, "options");
        if (opts.idempotencyKey !== undefined) {
          throw new ValidationError("options", [{ path: "idempotencyKey", message: "not supported by submitMany" }]);
        }
        const payload = JSON.stringify({ agent: spec, input: parseInput(JsonValueSchema, item.input, "input") });
        if (Buffer.byteLength(payload) > this.maxPayloadBytes) {
          throw new ValidationError("input", [{ path: "input", message: `payload is over ${this.maxPayloadBytes} bytes` }]);
        }
        const runAt = opts.runAt ?? (opts.delayMs === undefined ? undefined : now + opts.delayMs);
        return { taskId: taskIdOf(opts.queue, nameFor(opts)), agent: spec.name, payload, runAt, opts };
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        const issues = err.issues.map((issue) => ({ ...issue, path: `items.${i}.${issue.path || err.field}` }));
        throw new ValidationError("items", issues);
      }
    });
    const redis = this.conn.redis;
    return withSpan("flotilla.submit", { kind: SpanKind.PRODUCER, attributes: { "flotilla.tasks": prepared.length } }, () => withRedis(redis, async () => {
      const byQueue = new Map<string, number[]>();
      for (const [i, p] of prepared.entries()) byQueue.set(p.opts.queue, [...(byQueue.get(p.opts.queue) ?? []), i]);
      for (const queue of byQueue.keys()) await this.knowQueue(queue);
      const created: boolean[] = new Array(prepared.length).fill(false);
      await Promise.all(
        [...byQueue].map(async ([queue, indexes]) => {
          const tasks = indexes.map((i) => {
            const p = prepared[i]!;
            const task = this.newTask(p.taskId, p.agent, p.payload, now, p.runAt, p.opts);
            return p.opts.taskId === undefined ? task : { ...task, submitId: randomUUID() };
          });
          const replies = await this.store.createMany(queue, tasks);
          indexes.forEach((i, j) => {
            created[i] = replies[j] === true;
          });
        }),
      );
      const handles: TaskHandle[] = [];
      const taken: string[] = [];
      prepared.forEach((p, i) => {
        if (created[i]) {
          handles.push(new TaskHandle(this.ctx, p.taskId));
          this.metrics.add(METRICS.submitted, 1, { queue: p.opts.queue, agent: p.agent });
        } else taken.push(p.taskId);
      });
      if (taken.length) {
        const error = new DuplicateTaskError(taken[0]!);
        Object.assign(error, { details: { taken, handles } });
        throw error;
      }
      return handles;
    }));
  }

  private newTask(taskId: string, agent: string, payload: string, now: number, runAt: number | undefined, opts: ResolvedSubmitOptions): NewTask {
    return {
      taskId,
      queue: opts.queue,
      agent,
      payload,
      createdAt: now,
      detailed: opts.detailed,
      maxRetries: opts.maxRetries,
      maxDeliveries: opts.maxDeliveries,
      timeoutMs: opts.timeoutMs,
      metadata: opts.metadata,
      backoff: opts.backoff,
      runAt,
      priority: opts.priority,
      trace: traceOf(),
    };
  }

  /** Re-attaches to a task by id (from any process). */
  handle(taskId: string): TaskHandle {
    return new TaskHandle(this.ctx, parseInput(TaskIdSchema, taskId, "taskId"));
  }

  /**
   * A conversation agents remember across tasks (tasks name it in `metadata.memory`). `store`
   * names a store given in `options.memory`, or `redis` (the default) for this client's Redis.
   */
  conversation(conversationId: string, store = "redis"): Conversation {
    const id = checkConversationId(conversationId);
    const memory = this.memoryStores.get(store);
    const redis = this.conn.redis;
    return {
      messages: () => withRedis(redis, () => loadHistory(memory, id)),
      clear: () => withRedis(redis, () => memory.clear(id)),
    };
  }

  /** Tasks newest first, optionally filtered; pass `nextCursor` back for the next page. */
  async listTasks(options: ListTasksOptions = {}): Promise<TaskPage> {
    const opts = parseInput(ListOptionsSchema, options, "list options");
    return withRedis(this.conn.redis, () => this.store.list(opts));
  }

  async getFleetStatus(options: FleetStatusOptions = {}): Promise<FleetStatus> {
    return withRedis(this.conn.redis, () => getFleetStatus(this.conn.redis, this.keys, options));
  }

  /** Entries of a queue that could not be run, oldest first, with the reason. */
  async listDeadLetters(queue = "default", options: { count?: number; after?: string } = {}): Promise<DeadLetter[]> {
    const q = parseInput(QueueNameSchema, queue, "queue");
    return withRedis(this.conn.redis, () => this.broker.listDeadLetters(q, options));
  }

  async getDeadLetter(queue: string, deadLetterId: string): Promise<DeadLetter | undefined> {
    const q = parseInput(QueueNameSchema, queue, "queue");
    return withRedis(this.conn.redis, () => this.broker.getDeadLetter(q, deadLetterId));
  }

  /**
   * Sends a dead-lettered task back to its queue for another run: the task returns to PENDING with
   * its retries and delivery allowance reset, and the dead letter is removed.
   */
  async requeueDeadLetter(queue: string, deadLetterId: string): Promise<TaskHandle> {
    const q = parseInput(QueueNameSchema, queue, "queue");
    return withRedis(this.conn.redis, async () => {
      const letter = await this.broker.getDeadLetter(q, deadLetterId);
      if (!letter) throw new FlotillaError(ErrorCodes.TASK_NOT_FOUND, `no dead letter ${deadLetterId} in queue "${q}"`);
      if (!letter.taskId) {
        throw new FlotillaError(ErrorCodes.VALIDATION, `dead letter ${deadLetterId} is a malformed entry with no task to re-queue`);
      }
      const revived = await this.store.requeueDeadLetter({ ...letter, taskId: letter.taskId });
      if (revived.outcome === "gone") throw new FlotillaError(ErrorCodes.TASK_NOT_FOUND, `no dead letter ${deadLetterId} in queue "${q}"`);
      if (revived.outcome === "refused") {
        throw new FlotillaError(ErrorCodes.VALIDATION, `task ${letter.taskId} is ${revived.status ?? "gone"}; only FAILED tasks can be re-queued`);
      }
      return new TaskHandle(this.ctx, letter.taskId);
    });
  }

  /** Waiting, in-flight and delayed entries of a queue. */
  async queueDepth(queue = "default"): Promise<{ waiting: number; inFlight: number; delayed: number }> {
    const q = parseInput(QueueNameSchema, queue, "queue");
    return withRedis(this.conn.redis, () => this.broker.depth(q));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const hub = this.hubPromise;
    this.hubPromise = undefined;
    await this.feed?.close();
    this.feed = undefined;
    if (hub) await (await hub.catch(() => undefined))?.close();
    await closeRedis(this.conn);
  }

  private hub(): Promise<SubscriberHub> {
    this.assertOpen();
    this.hubPromise ??= Promise.resolve(
      new SubscriberHub(openRedis(this.redisOption, "subscriber", { failFast: true, connectTimeoutMs: this.connectTimeoutMs }), {
        readyTimeoutMs: this.connectTimeoutMs,
      }),
    );
    return this.hubPromise;
  }

  private assertOpen(): void {
    if (this.closed) throw new FlotillaError(ErrorCodes.CLOSED, "this FlotillaClient is closed");
  }
}

/** The active trace context as a task carries it, or undefined when nothing is traced. */
function traceOf(): string | undefined {
  const carrier = injectTrace();
  return carrier && JSON.stringify(carrier);
}

/** The task's name in its queue: the caller's `taskId` (a name, or `<queue>/<name>` of this queue), else a new id. */
function nameFor(opts: ResolvedSubmitOptions): string {
  if (opts.taskId === undefined) return newId();
  if (!opts.taskId.includes("/")) return opts.taskId;
  const { queue, name } = splitTaskId(opts.taskId);
  if (queue !== opts.queue) {
    throw new ValidationError("options", [{ path: "taskId", message: `task id "${opts.taskId}" names queue "${queue}", but the task is submitted to "${opts.queue}"` }]);
  }
  return name;
}

function serialise(agent: AgentLike): unknown {
  if (agent && typeof (agent as Serializable).toJSON === "function") return (agent as Serializable).toJSON();
  return agent;
}
