import { EventEmitter } from "node:events";
import { DEFAULTS, ErrorCodes, LifecycleError } from "@flotilla/core";
import type { WorkerEvents } from "./events.ts";
import { type ResolvedWorkerOptions, resolveWorkerOptions, type StopOptions, type WorkerOptions } from "./options.ts";
import type { ReadinessState } from "./readiness.ts";
import { WorkerSession } from "./session.ts";

/**
 * Claims tasks from Redis and runs them, `concurrency` at a time. A small façade: `start()` opens a
 * WorkerSession (connections, scheduler, leases, settler, cancel, heartbeat), `stop()` drains and
 * closes it. Events are typed by WorkerEvents.
 */
export class Worker extends EventEmitter<WorkerEvents> {
  readonly workerId: string;
  readonly queues: readonly string[];
  readonly concurrency: number;
  private readonly options: ResolvedWorkerOptions;
  private session: WorkerSession | undefined;
  private starting: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;
  private readonly createdAt = Date.now();
  private stoppedAt = 0;

  constructor(options: WorkerOptions = {}) {
    super();
    this.options = resolveWorkerOptions(options);
    this.workerId = this.options.workerId;
    this.queues = this.options.queues;
    this.concurrency = this.options.concurrency;
  }

  /** Connects, joins the fleet and starts claiming. Resolves once it is claiming; a ConnectionError if Redis does not answer. */
  start(): Promise<void> {
    if (this.starting) return Promise.reject(new LifecycleError(ErrorCodes.ALREADY_STARTED, `worker ${this.workerId} was started already`));
    this.starting = (async () => {
      this.session = await WorkerSession.open(this.options, {
        started: (taskId, attempt) => this.emit("task:started", { taskId, attempt }),
        ended: (event) => this.emit("task:ended", event),
        deadLettered: (event) => this.emit("entry:dead-lettered", event),
        error: (err) => this.emit("worker:error", err),
        readiness: (state) => this.emit("worker:readiness", state),
      });
      this.options.logger.info("worker started", { workerId: this.workerId, queues: this.queues, concurrency: this.concurrency });
    })();
    // A start that could not connect may be tried again.
    this.starting.catch(() => {
      if (!this.session) this.starting = undefined;
    });
    return this.starting;
  }

  /**
   * Stops claiming, lets running tasks finish for up to `drainTimeoutMs`, hands back (or cancels)
   * what is left, leaves the fleet and closes its connections.
   */
  stop(options: StopOptions = {}): Promise<void> {
    if (!this.stopped) this.stoppedAt = Date.now();
    this.stopped ??= (async () => {
      await this.starting?.catch(() => {});
      const session = this.session;
      if (!session) return;
      await session.close(options.drainTimeoutMs ?? DEFAULTS.drainTimeoutMs, options.onDeadline ?? "release");
      this.options.logger.info("worker stopped", { workerId: this.workerId, ...session.recorder.counts });
    })();
    return this.stopped;
  }

  /**
   * What a readiness probe asks: started, not stopping, connected to Redis, and claiming (false from
   * a claim that failed until one works again).
   */
  get ready(): boolean {
    return this.stopped === undefined && this.session?.ready === true;
  }

  /** `ready`, and each reason it is not: `starting`, `stopping`, `redis` (connection down), `claiming` (claims fail). */
  get readiness(): ReadinessState {
    if (this.stopped) return { ready: false, reasons: [{ reason: "stopping", detail: "stop() was called", since: this.stoppedAt }] };
    if (!this.session) return { ready: false, reasons: [{ reason: "starting", detail: "start() has not finished", since: this.createdAt }] };
    const state = this.session.readiness.state;
    return { ...state, ready: this.ready };
  }

  /** Ids of the tasks running now. */
  get runningTaskIds(): string[] {
    return this.session?.inFlight.taskIds() ?? [];
  }

  get stats(): { running: number; completed: number; failed: number } {
    const counts = this.session?.recorder.counts ?? { completed: 0, failed: 0 };
    return { running: this.session?.inFlight.size ?? 0, ...counts };
  }
}
