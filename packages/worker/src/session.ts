import { Broker } from "@flotilla/broker";
import { CancelListener } from "@flotilla/cancel";
import { AbortReason, createKeys, ErrorCodes } from "@flotilla/core";
import { closeRedis, describeRedis, disconnectRedis, type OwnedRedis, openRedis, SubscriberHub, whenReady } from "@flotilla/core/redis";
import { Heartbeat, type NotReady, type WorkerState } from "@flotilla/health";
import { MemoryStores } from "@flotilla/memory";
import { METRICS } from "@flotilla/metrics";
import { RedisRateLimiter } from "@flotilla/ratelimit";
import { Scheduler } from "@flotilla/schedules";
import { TaskStore } from "@flotilla/store";
import { agentExecutor } from "./agent-executor.ts";
import { AttemptRunner } from "./attempt.ts";
import { ClaimScheduler } from "./claim-scheduler.ts";
import { Dispatcher } from "./dispatcher.ts";
import type { DeadLetteredEvent, TaskEndEvent } from "./events.ts";
import { Gauges } from "./gauges.ts";
import { InFlight } from "./in-flight.ts";
import { LeaseKeeper } from "./lease-keeper.ts";
import type { ResolvedWorkerOptions } from "./options.ts";
import { OutcomeRecorder } from "./outcome-recorder.ts";
import { QueueReach } from "./queue-reach.ts";
import { Readiness, type ReadinessState } from "./readiness.ts";
import { reconnectPromptly } from "./reconnect.ts";
import { RedisLink } from "./redis-link.ts";
import { Settler } from "./settler.ts";
import { WORKER_VERSION } from "./version.ts";

/** How often close() looks whether it is past its drain deadline with Redis still out of reach. */
const CLOSE_CHECK_MS = 250;

/** What the session tells the Worker, which turns it into its events. */
export interface SessionListener {
  started(taskId: string, attempt: number): void;
  ended(event: TaskEndEvent): void;
  deadLettered(event: DeadLetteredEvent): void;
  error(err: unknown): void;
  readiness(state: ReadinessState): void;
}

/**
 * A started worker's live parts, all made by `open()` and all there until `close()`: its three
 * connections (commands, the blocking claim, the subscriber), the store and broker on them, the
 * scheduler, the lease keeper, the settler, the cancel listener, the heartbeat and the gauges.
 */
export class WorkerSession {
  readonly inFlight: InFlight;
  readonly scheduler: ClaimScheduler;
  readonly recorder: OutcomeRecorder;
  readonly readiness: Readiness;
  private readonly options: ResolvedWorkerOptions;
  private readonly conn: OwnedRedis;
  private readonly blocking: OwnedRedis;
  private readonly hub: SubscriberHub;
  private readonly cancels: CancelListener;
  private readonly heartbeat: Heartbeat;
  private readonly leases: LeaseKeeper;
  private readonly link: RedisLink;
  /** On a cluster, which queues' masters answer: the others' queues are served while one fails over. */
  private readonly reach: QueueReach;
  private readonly gauges: Gauges;
  private readonly broker: Broker;
  /** Fires the fleet's due schedules (@flotilla/schedules), when this worker takes part. */
  private readonly schedules: Scheduler | undefined;
  private onDeadline: "release" | "cancel" = "release";
  /** open() finished: the worker claims. */
  private opened = false;
  /** close() was called: the worker drains. */
  private closing = false;
  /** Aborted at the drain deadline: outcomes Redis keeps refusing are no longer sent again. */
  private readonly giveUp = new AbortController();

  private constructor(options: ResolvedWorkerOptions, conn: OwnedRedis, blocking: OwnedRedis, hub: SubscriberHub, listener: SessionListener) {
    this.options = options;
    this.conn = conn;
    this.blocking = blocking;
    this.hub = hub;
    const { workerId, logger: log, metrics } = options;
    const redis = conn.redis;
    const keys = createKeys(options.prefix);
    this.readiness = new Readiness(log, (state) => {
      listener.readiness(state);
      // The fleet sees the change now, not at the next beat.
      this.heartbeat?.beat().catch(() => {});
    });
    const store = new TaskStore(redis, keys, options.retention, options.queueRetention, { signingSecret: options.signingSecrets?.[0] });
    const broker = new Broker(redis, keys, { deadLetterMaxLen: options.retention.deadLetterMaxLen });
    this.broker = broker;
    this.schedules = options.schedules ? new Scheduler({ redis, keys, tasks: store, workerId, logger: log }) : undefined;
    this.cancels = new CancelListener(redis, hub, keys, { logger: log });
    this.inFlight = new InFlight(() => this.scheduler.wake());
    // Redis is asked whether it answers at least every second (a third of a short lease).
    const probeIntervalMs = Math.min(1000, Math.floor(options.leaseMs / 3));
    this.link = new RedisLink(redis, this.readiness, {
      probeIntervalMs,
      probeTimeoutMs: Math.max(1000, 2 * probeIntervalMs),
      where: describeRedis(redis),
    });
    this.leases = new LeaseKeeper(broker, this.inFlight, {
      consumer: workerId,
      leaseMs: options.leaseMs,
      selfFenceMarginMs: options.selfFenceMarginMs,
      log,
      fenced: (run) => metrics.add(METRICS.selfFenced, 1, { queue: run.lane.queue }),
    });
    const settler = new Settler(
      store,
      workerId,
      {
        claim: (queue) => this.scheduler.settleClaim(queue),
        started: (queue, replies, asked, sentAt) => this.scheduler.settleStarted(queue, replies, asked, sentAt),
      },
      // Two batches in flight: one runs here while Redis settles the other.
      Math.min(200, Math.max(1, Math.ceil(options.concurrency / 2))),
    );
    this.recorder = new OutcomeRecorder({
      settler,
      broker,
      store,
      consumer: workerId,
      metrics,
      log,
      ended: (e) => {
        // A node task's end moves its run on (the graph package's hand-off; a sweeper covers a crash here).
        if (e.recorded && options.graph && (e.status === "COMPLETED" || e.status === "FAILED" || e.status === "CANCELLED")) {
          options.graph.ended(e.taskId, { status: e.status, error: e.error });
        }
        listener.ended(e);
      },
      settling: (lane, entryId) => this.inFlight.markSettling(lane, entryId),
      observe: (err) => this.link.observe(err),
      giveUp: this.giveUp.signal,
      deadLettered: (e) => {
        metrics.add(METRICS.deadLettered, 1, { queue: e.queue });
        listener.deadLettered(e);
      },
    });
    const attempts = new AttemptRunner({
      redis,
      keys,
      retentionOf: (queue) => store.retentionOf(queue),
      executor: options.executor ?? this.defaultExecutor(redis, keys.prefix),
      graph: options.graph,
      agents: options.agents,
      cancels: this.cancels,
      metrics,
      backoff: options.backoff,
      maxJsonDepth: options.maxJsonDepth,
      maxPayloadBytes: options.maxPayloadBytes,
      signingSecrets: options.signingSecrets,
      defaultTimeoutOf: (queue) => options.queueTimeouts[queue] ?? options.defaultTimeoutMs,
      onDeadline: () => this.onDeadline,
      started: (taskId, attempt) => listener.started(taskId, attempt),
      log,
    });
    const dispatcher = new Dispatcher(
      this.inFlight,
      attempts,
      this.recorder,
      log,
      (err) => listener.error(err),
      (leaseFrom) => this.leases.lapsed(leaseFrom),
    );
    this.reach = new QueueReach(redis, keys, options.queues, log, () => this.scheduler.wake());
    this.scheduler = new ClaimScheduler(options, {
      store,
      broker,
      blocking,
      command: conn,
      inFlight: this.inFlight,
      settling: () => settler.settling,
      dispatch: (queue, reply, reclaimed, leaseFrom) => dispatcher.dispatch(queue, reply, reclaimed, leaseFrom),
      log,
      onError: (err) => listener.error(err),
      readiness: this.readiness,
      link: this.link,
      reach: this.reach,
    });
    this.heartbeat = new Heartbeat(redis, keys, {
      workerId,
      queues: options.queues,
      concurrency: options.concurrency,
      ...(options.graph && { nodeTypes: options.graph.nodeTypes }),
      ...(options.bus && { subscriptions: options.bus.subscriptions }),
      ttlMs: options.heartbeatTtlMs,
      snapshot: () => ({ running: this.inFlight.taskIds(), ...this.recorder.counts }),
      state: () => this.state,
      version: WORKER_VERSION,
      buildId: options.buildId,
      onError: (err) => log.warn("heartbeat failed", { err }),
    });
    this.gauges = new Gauges(redis, keys, broker, options.queues, metrics, options.heartbeatTtlMs, log);
  }

  private defaultExecutor(redis: OwnedRedis["redis"], prefix: string) {
    const o = this.options;
    return agentExecutor({
      tools: o.tools,
      providerFactory: o.providerFactory,
      openAICompatible: o.openAICompatible,
      model: o.model,
      memory: new MemoryStores(o.memory, () => redis, prefix),
      // The hub: a pause made anywhere in the fleet holds this worker's granted requests as it is made.
      ...(o.rateLimits.length > 0 && { rateLimiter: new RedisRateLimiter(redis, createKeys(prefix), o.rateLimits, { hub: this.hub }) }),
    });
  }

  /** Connects (a ConnectionError if Redis does not answer within connectTimeoutMs), joins the fleet and starts claiming. */
  static async open(options: ResolvedWorkerOptions, listener: SessionListener): Promise<WorkerSession> {
    const conn = openRedis(options.redis, "command");
    const blocking = openRedis(options.redis, "blocking");
    const subscriber = openRedis(options.redis, "subscriber");
    // Back within a quarter second of Redis: every second of reconnecting is taken from the outage a run rides out.
    for (const c of [conn, blocking, subscriber]) reconnectPromptly(c, options.redis);
    const hub = new SubscriberHub(subscriber, { readyTimeoutMs: options.connectTimeoutMs, logger: options.logger });
    for (const r of [conn.redis, blocking.redis]) r.on("error", (err) => options.logger.debug("redis connection error", { err }));
    try {
      await whenReady(conn.redis, options.connectTimeoutMs);
    } catch (err) {
      await hub.close();
      await closeRedis(blocking);
      await closeRedis(conn);
      throw err;
    }
    const session = new WorkerSession(options, conn, blocking, hub, listener);
    session.link.start();
    session.reach.start();
    for (const queue of options.queues) await session.broker.ensureGroup(queue);
    await session.cancels.start(options.queues);
    const signingSecret = options.signingSecrets?.[0];
    await options.graph?.start({ redis: conn.redis, keys: createKeys(options.prefix), logger: options.logger, metrics: options.metrics, signingSecret });
    await options.bus?.start({
      redis: conn.redis,
      keys: createKeys(options.prefix),
      logger: options.logger,
      metrics: options.metrics,
      workerId: options.workerId,
      blocking: () => {
        const r = openRedis(options.redis, "blocking").redis;
        r.on("error", (err) => options.logger.debug("redis connection error", { err }));
        return r;
      },
      connection: options.redis,
      signingSecret,
    });
    await session.heartbeat.start();
    // Renewals first after a reconnect: they are queued the moment the connection drops.
    session.leases.watch(conn.redis);
    session.leases.start();
    await session.scheduler.start();
    session.gauges.start(options.gaugeIntervalMs, () => session.link.memory);
    session.schedules?.start();
    session.opened = true;
    await session.heartbeat.beat().catch(() => {});
    return session;
  }

  /** What the heartbeat reports: starting until open() is done, draining once close() is called, else running or not ready (with why). */
  private get state(): { state: WorkerState; reasons: NotReady[] } {
    if (this.closing) return { state: "draining", reasons: [] };
    const { reasons } = this.readiness.state;
    if (!this.opened) return { state: "starting", reasons };
    return this.ready ? { state: "running", reasons: [] } : { state: "not-ready", reasons };
  }

  /** Redis within reach, claiming, and the last claim worked. */
  get ready(): boolean {
    return this.scheduler.claiming && this.link.up && this.readiness.ready;
  }

  /**
   * Stops claiming, lets running tasks finish for up to `drainTimeoutMs`, hands back (or cancels)
   * what is left, leaves the fleet and closes the connections.
   */
  async close(drainTimeoutMs: number, onDeadline: "release" | "cancel"): Promise<void> {
    // The worker's connections wait for Redis as long as it takes (they ride out a restart), so a
    // stop while Redis is gone would wait for ever on every write below. Past the drain deadline, a
    // Redis still out of reach gets this session's connections ended: what waits on them fails, and
    // close() returns (a connection lent to the worker is its lender's to end).
    const deadline = Date.now() + drainTimeoutMs;
    const giveUpOnRedis = setInterval(() => {
      if (Date.now() < deadline || this.conn.redis.status === "ready") return;
      clearInterval(giveUpOnRedis);
      this.options.logger.warn("Redis still unreachable at the drain deadline: closing the connections, what waits on them fails");
      disconnectRedis(this.blocking.redis);
      if (this.conn.owned) disconnectRedis(this.conn.redis);
      void this.hub.close();
    }, CLOSE_CHECK_MS);
    try {
      await this.closeNow(drainTimeoutMs, onDeadline);
    } finally {
      clearInterval(giveUpOnRedis);
    }
  }

  private async closeNow(drainTimeoutMs: number, onDeadline: "release" | "cancel"): Promise<void> {
    const log = this.options.logger;
    this.onDeadline = onDeadline;
    this.closing = true;
    void this.heartbeat.beat().catch(() => {});
    this.gauges.stop();
    // A round in flight is recorded before the connection goes; the next due tick is another worker's.
    await this.schedules?.stop();
    await this.scheduler.stop();
    // Subscriptions stop reading and drain beside the tasks (an agent subscription waits on tasks this worker may run).
    const busStopped = this.options.bus?.stop(drainTimeoutMs).catch((err) => log.warn("bus subscriptions did not stop cleanly", { err }));
    // Stopping is no readiness change to report: the connections close on purpose below.
    this.link.stop();
    this.reach.stop();
    if (!(await this.inFlight.settled(drainTimeoutMs))) {
      log.warn(`drain deadline reached: ${onDeadline === "release" ? "handing back" : "cancelling"} running tasks`, { tasks: this.inFlight.taskIds() });
      this.giveUp.abort();
      this.inFlight.abortAll(new AbortReason(ErrorCodes.SHUTDOWN, `worker ${this.options.workerId} shut down before the task finished`));
      await this.inFlight.settled();
    }
    await busStopped;
    // Hand-offs of the node tasks that ended here finish before the connections close.
    await this.options.graph?.stop().catch((err) => log.warn("graph hand-offs did not finish", { err }));
    // Leases are renewed through the drain; only now can they lapse.
    this.leases.stop();
    await this.heartbeat.stop().catch((err) => log.warn("could not remove heartbeat", { err }));
    await this.cancels.stop();
    await this.hub.close();
    await closeRedis(this.blocking);
    await closeRedis(this.conn);
  }
}
