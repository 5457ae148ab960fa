import { Broker, type DeadLetter } from "@flotilla/broker";
import {
  type AgentResult,
  createKeys,
  DuplicateTaskError,
  ErrorCodes,
  type JsonValue,
  type Keys,
  LifecycleError,
  NotReplicatedError,
  parseInput,
  QueueNameSchema,
  type ResultOf,
  type SubmitOptions,
  TaskIdSchema,
  TaskStatusSchema,
  ValidationError,
} from "@flotilla/core";
import { closeRedis, type OwnedRedis, openRedis, ReplicaWaiter, SubscriberHub, withRedis } from "@flotilla/core/redis";
import { StatusFeed } from "@flotilla/events";
import {
  type CompiledGraph,
  type Graph,
  GraphClient,
  type GraphInput,
  type GraphRunHandle,
  type ListRunsOptions,
  type RunPage,
  type StartGraphOptions,
} from "@flotilla/graph";
import type { FleetStatus, FleetStatusOptions } from "@flotilla/health";
import { MemoryStores } from "@flotilla/memory";
import { injectTrace, METRICS, SpanKind, withSpan } from "@flotilla/metrics";
import { type ListTasksOptions, type NewTask, newSubmitId, type TaskPage, TaskStore } from "@flotilla/store";
import { z } from "zod";
import type { ClientContext } from "./context.ts";
import { type Conversation, ConversationsClient } from "./conversations-client.ts";
import { DeadLettersClient } from "./dead-letters-client.ts";
import { FleetClient, type QueueDepth } from "./fleet-client.ts";
import { FleetWatch, type WatchOptions } from "./fleet-watch.ts";
import { type ClientOptions, type ResolvedClientOptions, resolveClientOptions } from "./options.ts";
import { SchedulesClient } from "./schedules-client.ts";
import { type AgentLike, newTaskOf, prepareSubmission, type Submission } from "./submission.ts";
import { TaskHandle } from "./task-handle.ts";

const ListOptionsSchema = z
  .object({
    status: TaskStatusSchema.optional(),
    queue: QueueNameSchema.optional(),
    limit: z.number().int().min(1).max(1000).optional(),
    cursor: z.string().optional(),
  })
  .strict();

/**
 * The application's side of Flotilla: submits agent runs and hands back TaskHandles. A small
 * façade: submitting and listing here, the rest in sub-clients — `deadLetters`, `fleet`,
 * `conversations`, `graphs`. It never loads the agent runtime: agents travel as their JSON.
 */
export class FlotillaClient {
  readonly keys: Keys;
  /** Dead letters: list, inspect and re-queue the entries that could not run. */
  readonly deadLetters: DeadLettersClient;
  /** The fleet: its workers, and the depth of each queue. */
  readonly fleet: FleetClient;
  /** Conversations agents remember across tasks. */
  readonly conversations: ConversationsClient;
  /** Cron and interval schedules, fired by the workers (@flotilla/schedules). */
  readonly schedules: SchedulesClient;
  /** Workflow graphs (@flotilla/graph) on this client's connections: runs, templates. */
  readonly graphs: GraphClient;
  private readonly options: ResolvedClientOptions;
  private readonly conn: OwnedRedis;
  private readonly store: TaskStore;
  private readonly broker: Broker;
  private readonly ctx: ClientContext;
  private hubPromise: Promise<SubscriberHub> | undefined;
  private feed: StatusFeed | undefined;
  /** Queues whose consumer group and registry entry this client has made sure of. */
  private readonly knownQueues = new Set<string>();
  private closed = false;
  /** Confirms durable submits (made on first use). */
  private replicaWaiter: ReplicaWaiter | undefined;
  private readonly durableConns = new Map<unknown, OwnedRedis>();
  /** Open feeds from `watch()`, closed with the client. */
  private readonly watches = new Set<FleetWatch>();

  constructor(options: ClientOptions = {}) {
    this.options = resolveClientOptions(options);
    const o = this.options;
    this.keys = createKeys(o.prefix);
    this.conn = openRedis(o.redis, "command", { failFast: true, connectTimeoutMs: o.connectTimeoutMs });
    this.conn.redis.on("error", () => {}); // surfaced per command as ConnectionError
    this.store = new TaskStore(this.conn.redis, this.keys, o.retention, {}, { signingSecret: o.signingSecret });
    this.broker = new Broker(this.conn.redis, this.keys, { deadLetterMaxLen: o.retention.deadLetterMaxLen });
    this.ctx = {
      redis: this.conn.redis,
      keys: this.keys,
      retention: o.retention,
      store: this.store,
      broker: this.broker,
      hub: () => this.hub(),
      statusFeed: async () => {
        const hub = await this.hub();
        this.feed ??= new StatusFeed(hub, this.keys);
        return this.feed;
      },
    };
    this.deadLetters = new DeadLettersClient(this.ctx);
    this.fleet = new FleetClient(this.ctx);
    this.schedules = new SchedulesClient(this.ctx, o);
    this.conversations = new ConversationsClient(this.ctx, new MemoryStores(o.memory, () => this.conn.redis, this.keys.prefix, "client"));
    this.graphs = new GraphClient(
      {},
      {
        redis: this.conn.redis,
        keys: this.keys,
        blocking: () => openRedis(o.redis, "blocking", { connectTimeoutMs: o.connectTimeoutMs }).redis,
        eventSource: async () => ({ redis: this.conn.redis, hub: await this.hub(), keys: this.keys, statusFeed: await this.ctx.statusFeed() }),
        signingSecret: o.signingSecret,
      },
    );
  }

  /**
   * Starts a workflow graph run (JSON, a GraphBuilder's output, or a stored template's `name` /
   * `name@version`) on `input`: see @flotilla/graph. Its nodes run on workers serving their node types.
   */
  startGraph(graph: GraphInput | Graph | CompiledGraph | string, input: JsonValue, options?: StartGraphOptions): Promise<GraphRunHandle> {
    this.assertOpen();
    return this.graphs.startGraph(graph, input, options);
  }

  /** Graph runs newest first, by status and graph name. */
  listRuns(options?: ListRunsOptions): Promise<RunPage> {
    this.assertOpen();
    return this.graphs.listRuns(options);
  }

  /**
   * A live feed of the fleet from now on: tasks submitted, started and finished, workers joining,
   * leaving and changing state, graph runs starting and finishing (see FleetWatch). `queue` narrows
   * it to one queue's tasks and workers. Read it with `for await`; `close()` it (or the client) to end it.
   *
   * ```ts
   * const watch = client.watch({ queue: "emails" });
   * for await (const event of watch) if (event.type === "task.finished") console.log(event.taskId, event.status);
   * ```
   */
  watch(options: WatchOptions = {}): FleetWatch {
    this.assertOpen();
    const watch = new FleetWatch(
      { redis: this.conn.redis, keys: this.keys, hub: () => this.hub(), graphs: this.graphs, records: (ids) => this.store.getMany(ids) },
      options,
    );
    this.watches.add(watch);
    return watch;
  }

  /**
   * Validates and records the task (PENDING), then enqueues it. Rejects with ValidationError
   * naming the bad field, DuplicateTaskError for a taken `taskId`, ConnectionError when Redis is
   * unreachable. The handle's `result()` is typed by the agent: `AgentResult<O>` for an
   * `Agent<O>` (O from its zod output schema), `AgentResult` for a swarm or a plain spec.
   */
  async submit<A extends AgentLike>(agent: A, input: JsonValue, options: SubmitOptions = {}): Promise<TaskHandle<ResultOf<A>>> {
    this.assertOpen();
    const s = prepareSubmission(agent, input, options, this.options, Date.now());
    const redis = this.conn.redis;
    const attributes = { "flotilla.task_id": s.taskId, "flotilla.queue": s.options.queue, "flotilla.agent": s.agent.name };
    return withSpan("flotilla.submit", { kind: SpanKind.PRODUCER, attributes }, () =>
      withRedis(redis, async () => {
        let idemKey: string | undefined;
        if (s.options.idempotencyKey !== undefined) {
          idemKey = this.keys.idempotency(s.options.idempotencyKey);
          const [[setErr, set] = [], [getErr, firstId] = []] =
            (await redis.pipeline().set(idemKey, s.taskId, "PX", s.options.idempotencyWindowMs, "NX").get(idemKey).exec()) ?? [];
          if (setErr ?? getErr) throw setErr ?? getErr;
          // Taken: the first submit's task. (Null only if the key expired between SET and GET: go on as new.)
          if (set !== "OK" && typeof firstId === "string") return new TaskHandle<ResultOf<A>>(this.ctx, firstId);
        }
        try {
          await this.knowQueue(s.options.queue);
          // Record and entry are written by one script: there is never a record that no worker will see.
          // The submitId makes a resend after a lost reply no duplicate.
          const {
            created: [created],
            lanesMade,
          } = await this.store.createMany(s.options.queue, [{ ...this.newTask(s), submitId: newSubmitId() }]);
          if (lanesMade) await this.queueRemade(s.options.queue);
          if (!created) throw new DuplicateTaskError(s.taskId);
          await this.replicated(s.options.queue, [s.taskId]);
          this.options.metrics.add(METRICS.submitted, 1, { queue: s.options.queue, agent: s.agent.name });
          return new TaskHandle<ResultOf<A>>(this.ctx, s.taskId);
        } catch (err) {
          // The key must not point at a task that was never made.
          if (idemKey) await redis.del(idemKey).catch(() => {});
          throw err;
        }
      }),
    );
  }

  /**
   * Submits many tasks in one round trip per queue, however many there are: one script creates
   * their records and enqueues them.
   * Every item is validated first: a bad one rejects the whole call (ValidationError naming
   * `items.<i>.<field>`) before anything is written. Taken ids (caller-chosen `taskId`s) reject with
   * a DuplicateTaskError after the others were enqueued; its `details.handles` lists those.
   * Idempotency keys are not supported here: submit those one by one.
   */
  async submitMany<A extends AgentLike>(items: ReadonlyArray<{ agent: A; input: JsonValue; options?: SubmitOptions }>): Promise<TaskHandle<ResultOf<A>>[]> {
    this.assertOpen();
    const now = Date.now();
    const prepared = items.map((item, i) => {
      try {
        if (item.options?.idempotencyKey !== undefined) throw ValidationError.of("options", "idempotencyKey", "not supported by submitMany");
        return prepareSubmission(item.agent, item.input, item.options ?? {}, this.options, now);
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        throw new ValidationError(
          "items",
          err.issues.map((issue) => ({ ...issue, path: `items.${i}.${issue.path || err.field}` })),
        );
      }
    });
    const redis = this.conn.redis;
    return withSpan("flotilla.submit", { kind: SpanKind.PRODUCER, attributes: { "flotilla.tasks": prepared.length } }, () =>
      withRedis(redis, async () => {
        const byQueue = new Map<string, number[]>();
        for (let i = 0; i < prepared.length; i++) {
          const queue = prepared[i]!.options.queue;
          const indexes = byQueue.get(queue);
          if (indexes) indexes.push(i);
          else byQueue.set(queue, [i]);
        }
        for (const queue of byQueue.keys()) await this.knowQueue(queue);
        const created: boolean[] = new Array(prepared.length).fill(false);
        await Promise.all(
          [...byQueue].map(async ([queue, indexes]) => {
            const tasks = indexes.map((i) => {
              const p = prepared[i]!;
              const task = this.newTask(p);
              return p.options.taskId === undefined ? task : { ...task, submitId: newSubmitId() };
            });
            const replies = await this.store.createMany(queue, tasks);
            if (replies.lanesMade) await this.queueRemade(queue);
            await this.replicated(
              queue,
              indexes.filter((_, j) => replies.created[j] === true).map((i) => prepared[i]!.taskId),
            );
            indexes.forEach((i, j) => {
              created[i] = replies.created[j] === true;
            });
          }),
        );
        const handles: TaskHandle<ResultOf<A>>[] = [];
        const taken: string[] = [];
        prepared.forEach((p, i) => {
          if (created[i]) {
            handles.push(new TaskHandle<ResultOf<A>>(this.ctx, p.taskId));
            this.options.metrics.add(METRICS.submitted, 1, { queue: p.options.queue, agent: p.agent.name });
          } else taken.push(p.taskId);
        });
        if (taken.length) throw new DuplicateTaskError(taken[0]!, { details: { taken, handles } });
        return handles;
      }),
    );
  }

  /**
   * Re-attaches to a task by id (from any process). Say what it resolves with when you know it
   * (`client.handle<AgentResult<Answer>>(id)`); nothing is checked at runtime.
   */
  handle<R = AgentResult>(taskId: string): TaskHandle<R> {
    return new TaskHandle<R>(this.ctx, parseInput(TaskIdSchema, taskId, "taskId"));
  }

  /** Tasks newest first, optionally filtered; pass `nextCursor` back for the next page. */
  async listTasks(options: ListTasksOptions = {}): Promise<TaskPage> {
    const opts = parseInput(ListOptionsSchema, options, "list options");
    return withRedis(this.conn.redis, () => this.store.list(opts));
  }

  /** @deprecated since 0.1: use `client.conversations.get(conversationId, store)`; removed in the next major. */
  conversation(conversationId: string, store = "redis"): Conversation {
    return this.conversations.get(conversationId, store);
  }

  /** @deprecated since 0.1: use `client.fleet.status()`; removed in the next major. */
  getFleetStatus(options: FleetStatusOptions = {}): Promise<FleetStatus> {
    return this.fleet.status(options);
  }

  /** @deprecated since 0.1: use `client.fleet.queueDepth(queue)`; removed in the next major. */
  queueDepth(queue = "default"): Promise<QueueDepth> {
    return this.fleet.queueDepth(queue);
  }

  /** @deprecated since 0.1: use `client.deadLetters.list(queue, options)`; removed in the next major. */
  listDeadLetters(queue = "default", options: { count?: number; after?: string } = {}): Promise<DeadLetter[]> {
    return this.deadLetters.list(queue, options);
  }

  /** @deprecated since 0.1: use `client.deadLetters.get(queue, id)`; removed in the next major. */
  getDeadLetter(queue: string, deadLetterId: string): Promise<DeadLetter | undefined> {
    return this.deadLetters.get(queue, deadLetterId);
  }

  /** @deprecated since 0.1: use `client.deadLetters.requeue(queue, id)`; removed in the next major. */
  requeueDeadLetter(queue: string, deadLetterId: string): Promise<TaskHandle> {
    return this.deadLetters.requeue(queue, deadLetterId);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const watch of this.watches) await watch.close();
    this.watches.clear();
    const hub = this.hubPromise;
    this.hubPromise = undefined;
    await this.feed?.close();
    this.feed = undefined;
    if (hub) await (await hub.catch(() => undefined))?.close();
    await this.replicaWaiter?.close();
    await closeRedis(this.conn);
  }

  private async knowQueue(queue: string): Promise<void> {
    if (this.knownQueues.has(queue)) return;
    await this.broker.ensureGroup(queue);
    await this.store.registerQueue(queue);
    this.knownQueues.add(queue);
  }

  /**
   * The create script found the queue's lanes missing and made them, with their consumer group:
   * Redis lost its data since knowQueue (restarted without persistence, failed over to an empty
   * replica). The group costs nothing more; the registry entry, on another key, is written again.
   * Only then: a submit to a queue whose lanes exist makes no extra round trip.
   */
  private async queueRemade(queue: string): Promise<void> {
    await this.store.registerQueue(queue);
  }

  /**
   * With `durableSubmit`: resolves once enough replicas have this client's writes to `queue`'s slot,
   * else a NotReplicatedError. The WAIT goes on connections of the waiter's own, shared by the
   * submits of a slot in flight together: it never blocks this client's other calls.
   */
  private async replicated(queue: string, taskIds: readonly string[]): Promise<void> {
    const durable = this.options.durableSubmit;
    if (!durable || taskIds.length === 0) return;
    this.replicaWaiter ??= new ReplicaWaiter(
      () => {
        const owned = openRedis(this.options.redis, "durable", { failFast: true, connectTimeoutMs: this.options.connectTimeoutMs });
        owned.redis.on("error", () => {}); // surfaced per submit as ConnectionError
        this.durableConns.set(owned.redis, owned);
        return owned.redis;
      },
      (redis) => closeRedis(this.durableConns.get(redis) ?? { redis, owned: true }),
    );
    const acked = await this.replicaWaiter.confirm(this.keys.replicaMark(queue), durable.replicas, durable.timeoutMs);
    if (acked < durable.replicas) throw new NotReplicatedError(taskIds, acked, durable.replicas, durable.timeoutMs);
  }

  private newTask(s: Submission): NewTask {
    return { ...newTaskOf(s), trace: traceOf() };
  }

  private hub(): Promise<SubscriberHub> {
    this.assertOpen();
    const o = this.options;
    this.hubPromise ??= Promise.resolve(
      new SubscriberHub(openRedis(o.redis, "subscriber", { failFast: true, connectTimeoutMs: o.connectTimeoutMs }), { readyTimeoutMs: o.connectTimeoutMs }),
    );
    return this.hubPromise;
  }

  private assertOpen(): void {
    if (this.closed) throw new LifecycleError(ErrorCodes.CLOSED, "this FlotillaClient is closed");
  }
}

/** The active trace context as a task carries it, or undefined when nothing is traced. */
function traceOf(): string | undefined {
  const carrier = injectTrace();
  return carrier && JSON.stringify(carrier);
}
