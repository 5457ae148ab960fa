import { EventEmitter } from "node:events";
import { hostname } from "node:os";
import type { Agent, LanguageModel, OpenAICompatibleEndpoint, ProviderFactory, Swarm, ToolRegistry } from "@flotilla/agent";
import { Broker, type Lane, parseEntry, type RawEntry } from "@flotilla/broker";
import { CancelListener } from "@flotilla/cancel";
import { type Backoff, type BackoffOptions, BackoffSchema, backoffDelay, createKeys, ErrorCodes, FlotillaError, isRetryable, type JsonValue, JsonValueSchema, type Keys, newId, PRIORITIES, type Priority, parseInput, parseJsonOr, parseStored, QueueNameSchema, type Retention, type RetentionOptions, type RunnableSpec, RunnableSpecSchema, resolveRetention, splitTaskId, type TaskError, TaskPayloadSchema, type TokenUsage, toTaskError } from "@flotilla/core";
import { closeRedis, type OwnedRedis, openRedis, type RedisConnection, SubscriberHub, whenReady } from "@flotilla/core/redis";
import { EventPublisher } from "@flotilla/events";
import { getFleetStatus, Heartbeat } from "@flotilla/health";
import { type MemoryStore, MemoryStores } from "@flotilla/memory";
import { defaultMetrics, extractTrace, type FlotillaMetrics, METRICS, type QueueFigures, SpanKind, withSpan } from "@flotilla/metrics";
import { type FinishInput, type StartReply, TaskStore } from "@flotilla/store";
import { SpanStatusCode } from "@opentelemetry/api";
import { z } from "zod";
import { agentExecutor } from "./agent-executor.ts";
import type { Executor } from "./executor.ts";
import { type Logger, silentLogger } from "./logger.ts";
import { Settler } from "./settler.ts";

export interface WorkerOptions {
  /** Redis URL, ioredis options or instance. @default "redis://127.0.0.1:6379" */
  redis?: RedisConnection;
  /** Key prefix shared with the clients. @default "flotilla" */
  prefix?: string;
  /** Queues to claim from. @default ["default"] */
  queues?: string[];
  /** Tasks run at once in this process. @default 4 */
  concurrency?: number;
  /**
   * When given, the only agents this worker runs, matched by name; a task runs the worker's
   * definition, so a payload cannot change an agent's model, instructions or tools.
   * A task naming any other agent fails with UNKNOWN_AGENT.
   */
  agents?: ReadonlyArray<Agent | Swarm | RunnableSpec>;
  /** Tools by name. A task can use only these. */
  tools?: ToolRegistry;
  /**
   * Makes the model for a `provider:model` name; asked first. Then: the built-in `scripted` model,
   * `openAICompatible` endpoints, and installed AI SDK provider packages with their API keys in
   * the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …). Anything else fails the task with
   * UNKNOWN_PROVIDER naming the model.
   */
  providerFactory?: ProviderFactory;
  /** OpenAI-compatible endpoints (vLLM, Ollama, …) by provider name: `{ ollama: { baseURL } }`. */
  openAICompatible?: Record<string, OpenAICompatibleEndpoint>;
  /** One model for every agent, whatever its `model` says (tests, proxies). */
  model?: LanguageModel;
  /** Memory stores by name, for tasks whose metadata names one; `redis` (this worker's connection) is built in. */
  memory?: Record<string, MemoryStore>;
  /** Runs the agents; the default runs them in process. */
  executor?: Executor;
  /** Heartbeat record TTL; beats come every third of it. @default 15_000 */
  heartbeatTtlMs?: number;
  /** How long one claim call blocks waiting for work. @default 5_000 */
  blockMs?: number;
  /**
   * A claimed task is leased to this worker for this long. Leases of all running tasks are renewed
   * together every third of it, so a long run is never taken from a live worker; a task whose lease
   * lapsed (worker killed, frozen, cut off) is reclaimed by another worker. @default 30_000
   */
  leaseMs?: number;
  /** Wait between retries for tasks that do not set their own. @default { delayMs: 1000, maxDelayMs: 60000, jitter: 0.5 } */
  backoff?: BackoffOptions;
  /** How often to look for delayed tasks that fell due (any live worker moves them into the queue). @default 1_000 */
  promoteIntervalMs?: number;
  /**
   * Fairness between priorities: in every this many claim rounds, one round lets the low lane pick
   * first and one lets the normal lane pick first; all other rounds go high → normal → low. @default 10
   */
  fairnessEvery?: number;
  /** @default `${hostname}-${pid}-${random}` */
  workerId?: string;
  /** `start()` fails with a ConnectionError if Redis does not answer within this. @default 10_000 */
  connectTimeoutMs?: number;
  retention?: RetentionOptions;
  logger?: Logger;
  /** Where task counts, durations, queue gauges and event figures go. @default defaultMetrics() */
  metrics?: FlotillaMetrics;
  /** How often the queue-depth and live-worker gauges are read from Redis. @default 5_000 */
  gaugeIntervalMs?: number;
}

export interface StopOptions {
  /** Running tasks get this long to finish. @default 30_000 */
  drainTimeoutMs?: number;
  /**
   * What happens to tasks still running at the deadline: `release` hands each back to its queue at
   * once (RETRYING, code SHUTDOWN, no retry used up) for another worker to run; `cancel` ends them
   * CANCELLED (code SHUTDOWN). @default "release"
   */
  onDeadline?: "release" | "cancel";
}

export interface TaskEndEvent {
  taskId: string;
  attempt: number;
  status: FinishInput["status"];
  error?: TaskError | undefined;
  recorded: boolean;
}

interface Running {
  lane: Lane;
  entryId: string;
  /** Empty while an unparseable entry is being dead-lettered. */
  taskId: string;
  controller: AbortController;
  done: Promise<void>;
}

const MetadataSchema = z.record(z.string(), JsonValueSchema);

/** Why a run was aborted: the signal's reason, so the outcome is decided by what happened. */
class AbortReason extends FlotillaError {}

/**
 * Claims tasks from Redis and runs them, `concurrency` at a time.
 *
 * Events: `task:started` ({ taskId, attempt }), `task:ended` (TaskEndEvent),
 * `entry:dead-lettered` ({ queue, entryId, reason }), `worker:error` (Error).
 */
export class Worker extends EventEmitter {
  readonly workerId: string;
  readonly queues: readonly string[];
  readonly concurrency: number;
  private readonly keys: Keys;
  private readonly retention: Retention;
  private readonly log: Logger;
  private readonly executor: Executor;
  private readonly agents: ReadonlyMap<string, RunnableSpec> | undefined;
  private readonly memoryStores: MemoryStores;
  private readonly metrics: FlotillaMetrics;
  private readonly gaugeIntervalMs: number;
  private gaugeTimer: NodeJS.Timeout | undefined;
  private queueFigures: QueueFigures[] = [];
  private liveWorkers: number | undefined;
  private stopObserving: Array<() => void> = [];
  private readonly blockMs: number;
  private readonly heartbeatTtlMs: number;
  private readonly connectTimeoutMs: number;
  private readonly leaseMs: number;
  private leaseTimer: NodeJS.Timeout | undefined;
  private nextReclaimAt = 0;
  private nextPromoteAt = 0;
  private readonly backoff: Backoff;
  private readonly promoteIntervalMs: number;
  private readonly fairnessEvery: number;
  private claimRound = 0;
  private onDeadline: "release" | "cancel" = "release";
  private readonly reclaimCursors = new Map<string, string>();
  private readonly redisOption: RedisConnection | undefined;
  private readonly running = new Map<string, Running>();
  private conn: OwnedRedis | undefined;
  private blocking: OwnedRedis | undefined;
  private blockingClientId: number | undefined;
  private hub: SubscriberHub | undefined;
  private store: TaskStore | undefined;
  private broker: Broker | undefined;
  private settler: Settler | undefined;
  private cancels: CancelListener | undefined;
  private heartbeat: Heartbeat | undefined;
  private loop: Promise<void> | undefined;
  private stopping = false;
  private stopped: Promise<void> | undefined;
  private slotWaiter: (() => void) | undefined;
  /** Slots promised to claims in flight (made by settle calls), not yet filled. */
  private reserved = 0;
  private counts = { completed: 0, failed: 0 };

  constructor(options: WorkerOptions = {}) {
    super();
    this.queues = (options.queues ?? ["default"]).map((q) => parseInput(QueueNameSchema, q, "queue name"));
    if (this.queues.length === 0) throw new FlotillaError(ErrorCodes.VALIDATION, "a worker needs at least one queue");
    this.concurrency = options.concurrency ?? 4;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) {
      throw new FlotillaError(ErrorCodes.VALIDATION, `concurrency must be a positive integer, got ${options.concurrency}`);
    }
    this.keys = createKeys(options.prefix);
    this.retention = resolveRetention(options.retention);
    this.log = options.logger ?? silentLogger;
    this.blockMs = options.blockMs ?? 5000;
    this.heartbeatTtlMs = options.heartbeatTtlMs ?? 15_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.backoff = parseInput(BackoffSchema, options.backoff ?? {}, "backoff");
    this.promoteIntervalMs = options.promoteIntervalMs ?? 1000;
    this.fairnessEvery = Math.max(2, options.fairnessEvery ?? 10);
    if (this.leaseMs < 300) throw new FlotillaError(ErrorCodes.VALIDATION, `leaseMs must be at least 300, got ${this.leaseMs}`);
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}-${newId().slice(-6)}`;
    this.redisOption = options.redis;
    // The executor runs tasks only once the worker has started, so its connection exists by then.
    this.memoryStores = new MemoryStores(options.memory, () => this.conn!.redis, this.keys.prefix);
    this.metrics = options.metrics ?? defaultMetrics();
    this.gaugeIntervalMs = options.gaugeIntervalMs ?? 5000;
    this.executor =
      options.executor ??
      agentExecutor({
        tools: options.tools,
        providerFactory: options.providerFactory,
        openAICompatible: options.openAICompatible,
        model: options.model,
        memory: this.memoryStores,
      });
    if (options.agents) {
      this.agents = new Map(
        options.agents.map((a) => {
          const spec = parseInput(RunnableSpecSchema, "toJSON" in a ? a.toJSON() : a, "agent");
          return [spec.name, spec] as const;
        }),
      );
    }
  }

  /** Ids of the tasks running now. */
  get runningTaskIds(): string[] {
    return [...this.running.values()].flatMap((r) => (r.taskId ? [r.taskId] : []));
  }

  get stats(): { running: number; completed: number; failed: number } {
    return { running: this.running.size, ...this.counts };
  }

  /** Connects, joins the fleet and starts claiming. Resolves once it is claiming. */
  async start(): Promise<void> {
    if (this.conn) throw new FlotillaError(ErrorCodes.VALIDATION, "worker already started");
    this.conn = openRedis(this.redisOption, "command");
    this.blocking = openRedis(this.redisOption, "blocking");
    this.hub = new SubscriberHub(openRedis(this.redisOption, "subscriber"), { readyTimeoutMs: this.connectTimeoutMs });
    const redis = this.conn.redis;
    for (const r of [redis, this.blocking.redis]) r.on("error", (err) => this.log.debug("redis connection error", { err }));
    try {
      await whenReady(redis, this.connectTimeoutMs);
    } catch (err) {
      await this.hub.close();
      await closeRedis(this.blocking);
      await closeRedis(this.conn);
      throw err;
    }
    this.store = new TaskStore(redis, this.keys, this.retention);
    this.broker = new Broker(redis, this.keys);
    this.settler = new Settler(
      this.store,
      this.workerId,
      {
        // A busy single-queue worker claims its next batch in the call that settles the last one
        // (unless reclaiming is due: that needs free slots of its own).
        claim: () => {
          if (this.stopping || this.queues.length !== 1 || Date.now() >= this.nextReclaimAt) return undefined;
          const free = this.freeSlots();
          if (free <= 0) return undefined;
          this.reserved += free;
          return { count: free, order: this.laneOrder() };
        },
        started: (queue, replies, asked) => {
          this.reserved -= asked;
          for (const reply of replies) this.dispatch(queue, reply, false);
          this.slotWaiter?.();
        },
      },
      // Two batches in flight: one runs here while Redis settles the other.
      Math.min(200, Math.max(1, Math.ceil(this.concurrency / 2))),
    );
    this.cancels = new CancelListener(redis, this.hub, this.keys);
    this.heartbeat = new Heartbeat(redis, this.keys, {
      workerId: this.workerId,
      queues: this.queues,
      concurrency: this.concurrency,
      ttlMs: this.heartbeatTtlMs,
      snapshot: () => ({ running: this.runningTaskIds, ...this.counts }),
      onError: (err) => this.log.warn("heartbeat failed", { err }),
    });
    for (const q of this.queues) await this.broker.ensureGroup(q);
    await this.cancels.start();
    await this.trackBlockingClientId();
    this.blocking.redis.on("ready", () => void this.trackBlockingClientId());
    await this.heartbeat.start();
    // One timer renews every lease this worker holds, however many tasks it runs.
    this.leaseTimer = setInterval(() => void this.renewLeases(), Math.floor(this.leaseMs / 3));
    this.leaseTimer.unref();
    this.loop = this.claimLoop();
    this.stopObserving = [this.metrics.observeQueues(() => this.queueFigures), this.metrics.observeWorkers(() => this.liveWorkers)];
    void this.readGauges();
    this.gaugeTimer = setInterval(() => void this.readGauges(), this.gaugeIntervalMs);
    this.gaugeTimer.unref();
    this.on("entry:dead-lettered", (e: { queue: string }) => this.metrics.add(METRICS.deadLettered, 1, { queue: e.queue }));
    this.log.info("worker started", { workerId: this.workerId, queues: this.queues, concurrency: this.concurrency });
  }

  /**
   * Stops claiming, lets running tasks finish for up to `drainTimeoutMs`, hands back (or cancels)
   * what is left, leaves the fleet and closes its connections.
   */
  stop(options: StopOptions = {}): Promise<void> {
    this.onDeadline = options.onDeadline ?? "release";
    this.stopped ??= this.shutdown(options.drainTimeoutMs ?? 30_000);
    return this.stopped;
  }

  /** Connected to Redis and claiming: what a readiness probe asks. */
  get ready(): boolean {
    return this.loop !== undefined && !this.stopping && this.conn?.redis.status === "ready";
  }

  /** Reads the queue-depth and live-worker gauges (kept for the metrics' observable callbacks). */
  private async readGauges(): Promise<void> {
    try {
      const figures: QueueFigures[] = [];
      for (const queue of this.queues) {
        const d = await this.broker!.depth(queue);
        figures.push({ queue, waiting: d.waiting + d.delayed, inFlight: d.inFlight });
      }
      this.queueFigures = figures;
      this.liveWorkers = (await getFleetStatus(this.conn!.redis, this.keys)).workers.filter((w) => w.alive).length;
    } catch (err) {
      this.log.debug("could not read the gauges", { err });
    }
  }

  private async shutdown(drainTimeoutMs: number): Promise<void> {
    this.stopping = true;
    clearInterval(this.gaugeTimer);
    for (const stop of this.stopObserving) stop();
    this.slotWaiter?.();
    // The claim may not have reached Redis yet when the first UNBLOCK does: repeat until the loop ends.
    const unblock = () => {
      if (this.blockingClientId !== undefined) void this.conn?.redis.client("UNBLOCK", this.blockingClientId).catch(() => {});
    };
    unblock();
    const unblocking = setInterval(unblock, 50);
    await this.loop;
    clearInterval(unblocking);
    const drained = await waitAll([...this.running.values()].map((r) => r.done), drainTimeoutMs);
    if (!drained) {
      this.log.warn(`drain deadline reached: ${this.onDeadline === "release" ? "handing back" : "cancelling"} running tasks`, {
        tasks: this.runningTaskIds,
      });
      for (const r of this.running.values()) {
        r.controller.abort(new AbortReason(ErrorCodes.SHUTDOWN, `worker ${this.workerId} shut down before the task finished`));
      }
      await Promise.all([...this.running.values()].map((r) => r.done));
    }
    // Leases are renewed through the drain; only now can they lapse.
    clearInterval(this.leaseTimer);
    await this.heartbeat?.stop().catch((err) => this.log.warn("could not remove heartbeat", { err }));
    await this.cancels?.stop();
    await this.hub?.close();
    await closeRedis(this.blocking);
    await closeRedis(this.conn);
    this.log.info("worker stopped", { workerId: this.workerId, ...this.counts });
  }

  private async trackBlockingClientId(): Promise<void> {
    try {
      this.blockingClientId = Number(await this.blocking!.redis.client("ID"));
    } catch {
      this.blockingClientId = undefined;
    }
  }

  private async claimLoop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      // Promotion needs no slot: it runs on time however busy the worker is.
      if (Date.now() >= this.nextPromoteAt) {
        try {
          await this.promoteDue();
        } catch (err) {
          this.nextPromoteAt = Date.now() + this.promoteIntervalMs;
          this.log.warn("promotion failed; will retry", { err });
        }
      }
      if (this.freeSlots() <= 0) {
        // Woken by a free slot, or when promotion or reclaiming falls due (settles then stop
        // claiming, so slots free up for them).
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          this.slotWaiter = resolve;
          timer = setTimeout(resolve, Math.max(1, Math.min(this.nextPromoteAt, this.nextReclaimAt) - Date.now()));
        });
        clearTimeout(timer);
        this.slotWaiter = undefined;
        // Outcomes settle in batches: let the rest of this batch free its slots, then claim for all.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      try {
        // Reclaim first, from the same budget of free slots, so reclaimed and new work never
        // together exceed `concurrency`.
        if (Date.now() >= this.nextReclaimAt) await this.reclaimLapsed();
        const free = this.freeSlots();
        if (free <= 0) continue;
        // Held while the claim is out, so a settle's claim cannot take the same slots.
        this.reserved += free;
        try {
          // First without blocking: one script per queue claims and starts a whole batch.
          const order = this.laneOrder();
          let started = 0;
          for (const queue of this.queues) {
            if (free - started <= 0) break;
            const replies = await this.store!.claim(queue, this.workerId, free - started, order);
            started += replies.length;
            for (const reply of replies) this.dispatch(queue, reply, false);
          }
          if (started === 0) {
            const untilReclaim = Math.max(1, Math.min(this.nextReclaimAt, this.nextPromoteAt) - Date.now());
            const entries = await this.broker!.block(this.blocking!.redis, this.workerId, this.queues, free, Math.min(this.blockMs, untilReclaim));
            await this.startClaimed(entries, false);
          }
        } finally {
          this.reserved -= free;
        }
        failures = 0;
      } catch (err) {
        if (this.stopping) break;
        failures++;
        this.log.warn("claim failed; retrying", { err, failures });
        this.emit("worker:error", err);
        await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** failures, 5000)));
      }
    }
  }

  /**
   * Slots a claim may fill: `concurrency` less the runs still going (a run whose outcome was handed
   * to the settler is done) and the slots promised to claims in flight.
   */
  private freeSlots(): number {
    return this.concurrency - (this.running.size - this.settler!.settling) - this.reserved;
  }

  /** Strict priority, except that low, then normal, get the first pick once every `fairnessEvery` rounds. */
  private laneOrder(): Priority[] {
    const round = this.claimRound++ % this.fairnessEvery;
    if (round === this.fairnessEvery - 1) return ["low", "normal", "high"];
    if (round === Math.floor(this.fairnessEvery / 2) - 1) return ["normal", "high", "low"];
    return ["high", "normal", "low"];
  }

  /** Moves delayed tasks that fell due into their queues; schedules the next look. */
  private async promoteDue(): Promise<void> {
    let next = Date.now() + this.promoteIntervalMs;
    for (const queue of this.queues) {
      const { nextDueAt } = await this.broker!.promote(queue);
      if (nextDueAt !== undefined) next = Math.min(next, nextDueAt);
    }
    this.nextPromoteAt = next;
  }

  /** Takes over entries whose lease lapsed with their holder, scanning each lane's whole pending list over time. */
  private async reclaimLapsed(): Promise<void> {
    // Every half lease, with jitter so a fleet does not scan in step.
    this.nextReclaimAt = Date.now() + Math.floor((this.leaseMs / 2) * (0.75 + Math.random() * 0.5));
    for (const priority of PRIORITIES) {
      for (const queue of this.queues) {
        const free = this.freeSlots();
        if (free <= 0 || this.stopping) return;
        const lane: Lane = { queue, priority };
        const { cursor, entries } = await this.broker!.reclaim(lane, this.workerId, this.leaseMs, free, this.reclaimCursors.get(laneKey(lane)) ?? "0-0");
        this.reclaimCursors.set(laneKey(lane), cursor);
        // Our own entries, idle because renewals could not reach Redis: those runs are still ours.
        const taken = entries.filter((raw) => !this.running.has(runningKey(raw, raw.entryId)));
        for (const raw of taken) {
          this.log.info("reclaimed a task whose lease lapsed", { queue, priority, entryId: raw.entryId, task: raw.fields?.task });
        }
        await this.startClaimed(taken, true);
      }
    }
  }

  /** Renews the lease of every entry this worker holds; runs whose entry another worker took over are stopped. */
  private async renewLeases(): Promise<void> {
    const byLane = new Map<string, { lane: Lane; ids: string[] }>();
    for (const r of this.running.values()) {
      const group = byLane.get(laneKey(r.lane)) ?? { lane: r.lane, ids: [] };
      group.ids.push(r.entryId);
      byLane.set(laneKey(r.lane), group);
    }
    for (const { lane, ids } of byLane.values()) {
      let lost: string[];
      try {
        lost = await this.broker!.renew(lane, this.workerId, ids);
      } catch (err) {
        this.log.warn("lease renewal failed; will retry", { err, queue: lane.queue });
        continue;
      }
      for (const entryId of lost) {
        const r = this.running.get(runningKey(lane, entryId));
        if (!r) continue;
        this.log.warn("lease lost: another worker took the task over", { queue: lane.queue, entryId, taskId: r.taskId });
        r.controller.abort(new AbortReason(ErrorCodes.STALE_ATTEMPT, "lease lost: another worker took the task over"));
      }
    }
  }

  /** Starts the tasks of entries this worker holds; malformed entries are dead-lettered. */
  private async startClaimed(entries: readonly RawEntry[], reclaimed: boolean): Promise<void> {
    const byQueue = new Map<string, Array<{ priority: Priority; entryId: string; name: string }>>();
    for (const raw of entries) {
      const entry = parseEntry(raw);
      if (!entry.ok) {
        this.dispatch(raw.queue, { kind: "malformed", priority: raw.priority, entryId: raw.entryId, fields: raw.fields }, reclaimed);
        continue;
      }
      byQueue.set(entry.queue, [...(byQueue.get(entry.queue) ?? []), { priority: entry.priority, entryId: entry.entryId, name: entry.name }]);
    }
    for (const [queue, list] of byQueue) {
      for (const reply of await this.store!.startEntries(queue, this.workerId, list, reclaimed)) this.dispatch(queue, reply, reclaimed);
    }
  }

  /** Takes up one claimed entry: runs its task, or dead-letters it with the reason. */
  private dispatch(queue: string, reply: StartReply, reclaimed: boolean): void {
    const lane: Lane = { queue, priority: reply.priority };
    const { entryId } = reply;
    if (reply.kind === "skip") {
      // Cancelled while waiting, already finished, or run by another entry: the script settled it.
      this.log.debug("entry skipped", { queue, entryId, taskId: reply.taskId, reason: reply.reason, reclaimed });
      return;
    }
    const key = runningKey(lane, entryId);
    const controller = new AbortController();
    const running: Running = {
      lane,
      entryId,
      taskId: reply.kind === "malformed" ? "" : reply.taskId,
      controller,
      done: Promise.resolve(),
    };
    this.running.set(key, running);
    // Dead-lettering is in-flight work too: stop() waits for it before closing the connection.
    let work: Promise<void>;
    switch (reply.kind) {
      case "run":
        work = this.runTask(lane, reply, controller);
        break;
      case "missing":
        work = this.deadLetter(lane, entryId, "task record not found (expired or never written)", { task: splitTaskId(reply.taskId).name }, reply.taskId);
        break;
      case "dead": {
        const { attempts, lastError } = reply;
        const reason = `delivery limit reached after ${attempts} attempts${lastError ? `; last error: [${lastError.code}] ${lastError.message}` : ""}`;
        work = this.deadLetter(lane, entryId, reason, { task: splitTaskId(reply.taskId).name }, reply.taskId, { attempts, lastError });
        break;
      }
      default: {
        const parsed = parseEntry({ ...lane, entryId, fields: reply.fields });
        const reason = parsed.ok ? "malformed queue entry" : parsed.reason;
        work = this.deadLetter(lane, entryId, reason, reply.fields, undefined);
      }
    }
    running.done = work
      .catch((err) => {
        this.log.error("task handling failed", { entry: key, err });
        this.emit("worker:error", err);
      })
      .finally(() => {
        this.running.delete(key);
        this.slotWaiter?.();
      });
  }

  private async deadLetter(
    lane: Lane,
    entryId: string,
    reason: string,
    fields: Record<string, string> | null,
    taskId: string | undefined,
    extra?: Record<string, unknown>,
  ): Promise<void> {
    try {
      const { queue } = lane;
      const moved = await this.broker!.deadLetter(lane, entryId, this.workerId, { reason, fields, taskId, ...(extra && { extra }) });
      if (!moved) {
        this.log.warn("entry not dead-lettered: another worker holds it now", { queue, entryId, taskId });
        return;
      }
      this.log.warn("entry dead-lettered", { queue, entryId, reason, taskId });
      this.emit("entry:dead-lettered", { queue, entryId, reason, taskId });
    } catch (err) {
      this.log.error("could not dead-letter entry", { queue: lane.queue, entryId, err });
      this.emit("worker:error", err);
    }
  }

  private async runTask(lane: Lane, start: Extract<StartReply, { kind: "run" }>, controller: AbortController): Promise<void> {
    const redis = this.conn!.redis;
    const { entryId, taskId } = start;
    // A cancel that reached this worker before the start reply did is remembered by the listener.
    const unwatch = this.cancels!.watch(taskId, (reason) => controller.abort(new AbortReason(ErrorCodes.CANCELLED, reason)));
    try {
      const { attempt } = start;
      this.emit("task:started", { taskId, attempt });

      let payload: { agent: RunnableSpec; input: JsonValue };
      let metadata: Record<string, JsonValue>;
      try {
        payload = parseStored(TaskPayloadSchema, JSON.parse(start.payload), `payload of task ${taskId}`);
        metadata = parseStored(MetadataSchema, parseJsonOr(start.metadata, null), `metadata of task ${taskId}`);
      } catch (err) {
        const error: TaskError = { code: ErrorCodes.INVALID_PAYLOAD, message: toTaskError(err).message };
        await this.record(lane, entryId, taskId, { attempt, status: "FAILED", agent: start.agent, error });
        return;
      }
      const agentName = payload.agent.name;
      const agent = this.agents ? this.agents.get(agentName) : payload.agent;
      if (!agent) {
        const error = { code: ErrorCodes.UNKNOWN_AGENT, message: `this worker does not run agent "${agentName}"` };
        await this.record(lane, entryId, taskId, { attempt, status: "FAILED", agent: agentName, error });
        return;
      }

      const publisher = new EventPublisher(redis, this.keys, this.retention, {
        taskId,
        attempt,
        agent: agentName,
        detailed: start.detailed,
        onStale: () => controller.abort(new AbortReason(ErrorCodes.STALE_ATTEMPT, "the task is no longer ours")),
        onPublished: (types, ms) => {
          for (const [type, n] of Object.entries(types)) this.metrics.add(METRICS.eventsEmitted, n, { type });
          this.metrics.record(METRICS.publishDuration, ms);
        },
      });
      const timer =
        start.timeoutMs === undefined
          ? undefined
          : setTimeout(
              () => controller.abort(new AbortReason(ErrorCodes.TIMEOUT, `timed out after ${start.timeoutMs} ms`)),
              start.timeoutMs,
            );
      const aborted = new Promise<never>((_, reject) => {
        const onAbort = () => reject(controller.signal.reason);
        if (controller.signal.aborted) onAbort();
        else controller.signal.addEventListener("abort", onAbort, { once: true });
      });
      aborted.catch(() => {});

      let usage: TokenUsage | undefined;
      const attrs = { queue: lane.queue, agent: agentName };
      if (attempt === 1) this.metrics.record(METRICS.waitTime, start.waitedMs, attrs);
      const runStarted = performance.now();
      let traceId: string | undefined;
      // The worker's span continues the submit's trace (carried by the task) and is the parent of
      // the run's model-turn and tool spans.
      const spanAttributes = { "flotilla.task_id": taskId, "flotilla.queue": lane.queue, "flotilla.agent": agentName, "flotilla.attempt": attempt };
      const outcome = await withSpan("flotilla.execute", { kind: SpanKind.CONSUMER, parent: extractTrace(parseCarrier(start.trace)), attributes: spanAttributes }, async (span) => {
      const id = span.spanContext().traceId;
      if (!/^0*$/.test(id)) traceId = id;
      let outcome: FinishInput;
      try {
        const execution = this.executor.execute({
          taskId,
          attempt,
          queue: lane.queue,
          priority: lane.priority,
          agent,
          input: payload.input,
          metadata,
          signal: controller.signal,
          emit: (event) => publisher.emit(event),
          reportUsage: (u) => {
            usage = u;
          },
        });
        execution.catch(() => {}); // it may settle after an abort we already acted on
        // An executor that ignores its signal must not hold the task's outcome hostage.
        const result = await Promise.race([execution, aborted]);
        await publisher.flush();
        outcome = { attempt, status: "COMPLETED", agent: agentName, result: result ?? null };
      } catch (err) {
        outcome = this.failure(attempt, agentName, controller.signal, err);
        if (outcome.status === "FAILED" && start.retries < start.maxRetries && isRetryable(controller.signal.reason ?? err)) {
          const delay = backoffDelay(start.backoff ?? this.backoff, start.retries);
          outcome = { ...outcome, status: "RETRYING", retryAt: Date.now() + delay };
        }
        if (outcome.status !== "CANCELLED" && !publisher.isStale) {
          publisher.emit({ type: "error", message: outcome.error!.message, code: outcome.error!.code });
        }
        await publisher.flush().catch(() => {});
      } finally {
        if (timer) clearTimeout(timer);
      }
      if (outcome.status !== "COMPLETED") {
        span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error?.message ?? outcome.status });
        span.recordException({ name: outcome.error?.code ?? outcome.status, message: outcome.error?.message ?? outcome.status });
      }
      return outcome;
      });
      this.metrics.record(METRICS.duration, performance.now() - runStarted, { ...attrs, status: outcome.status });
      const reason: unknown = controller.signal.reason;
      if (reason instanceof AbortReason && reason.code === ErrorCodes.STALE_ATTEMPT) {
        this.log.warn("attempt lost its claim; leaving the outcome to its owner", { taskId, attempt });
        return;
      }
      await this.record(lane, entryId, taskId, usage ? { ...outcome, usage } : outcome, traceId);
    } finally {
      unwatch();
    }
  }

  /** Decides how a failed or aborted attempt ends; a FAILED one may still become a retry. */
  protected failure(attempt: number, agent: string, signal: AbortSignal, err: unknown): FinishInput {
    const reason = signal.aborted ? signal.reason : err;
    const error = toTaskError(reason);
    if (reason instanceof AbortReason && reason.code === ErrorCodes.SHUTDOWN && this.onDeadline === "release") {
      return { attempt, status: "RETRYING", agent, error, retryAt: Date.now(), release: true };
    }
    if (reason instanceof AbortReason && (reason.code === ErrorCodes.CANCELLED || reason.code === ErrorCodes.SHUTDOWN)) {
      return { attempt, status: "CANCELLED", agent, error };
    }
    return { attempt, status: "FAILED", agent, error };
  }

  /**
   * Writes the outcome and settles the entry (batched with other outcomes of this tick): acknowledged
   * when the task completed or was cancelled, moved to the delayed set for a retry, dead-lettered
   * when it failed.
   */
  private async record(lane: Lane, entryId: string, taskId: string, outcome: FinishInput, traceId?: string): Promise<void> {
    const { queue } = lane;
    const error = outcome.error ?? { message: "failed", code: ErrorCodes.AGENT_ERROR };
    const finished = await this.settler!.settle(queue, {
      ...outcome,
      taskId,
      priority: lane.priority,
      entryId,
      deadReason:
        outcome.status === "FAILED"
          ? `failed after ${outcome.attempt} attempt${outcome.attempt === 1 ? "" : "s"}: [${error.code}] ${error.message}`
          : undefined,
    });
    if (finished.ok && finished.deadLettered) {
      this.emit("entry:dead-lettered", { queue, entryId, reason: `[${outcome.error?.code}] ${outcome.error?.message}`, taskId });
    }
    const status = finished.ok ? (finished.status as FinishInput["status"]) : outcome.status;
    if (finished.ok) {
      if (status === "COMPLETED") this.counts.completed++;
      else if (status === "FAILED") this.counts.failed++;
      const counter = { COMPLETED: METRICS.completed, FAILED: METRICS.failed, CANCELLED: METRICS.cancelled, RETRYING: METRICS.retried }[status];
      this.metrics.add(counter, 1, { queue, agent: outcome.agent });
    } else {
      this.log.warn("outcome not recorded", { taskId, reason: finished.reason, status: finished.status });
    }
    this.log.info("task ended", {
      taskId,
      attempt: outcome.attempt,
      status,
      error: outcome.error,
      retryAt: outcome.retryAt,
      recorded: finished.ok,
      ...(traceId && { traceId }),
    });
    const end: TaskEndEvent = { taskId, attempt: outcome.attempt, status, error: outcome.error, recorded: finished.ok };
    this.emit("task:ended", end);
  }
}

/** A task's trace carrier as stored (JSON), or undefined when it has none or it is unreadable. */
function parseCarrier(text: string | undefined): Record<string, string> | undefined {
  const parsed = z.record(z.string(), z.string()).safeParse(parseJsonOr(text, undefined));
  return parsed.success ? parsed.data : undefined;
}

const laneKey = (lane: Lane) => `${lane.queue}/${lane.priority}`;
const runningKey = (lane: Lane, entryId: string) => `${laneKey(lane)}/${entryId}`;

async function waitAll(promises: Promise<unknown>[], timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  const all = Promise.all(promises).then(() => true as const);
  const done = await Promise.race([all, timeout]);
  clearTimeout(timer);
  return done;
}
