import { EventEmitter } from "node:events";
import { DEFAULTS, ErrorCodes, LifecycleError } from "@flotilla/core";
import type { WorkerEvents } from "./events.ts";
import { type ResolvedWorkerOptions, resolveWorkerOptions, type StopOptions, type WorkerOptions } from "./options.ts";
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
    this.stopped ??= (async () => {
      await this.starting?.catch(() => {});
      const session = this.session;
      if (!session) return;
      await session.close(options.drainTimeoutMs ?? DEFAULTS.drainTimeoutMs, options.onDeadline ?? "release");
      this.options.logger.info("worker stopped", { workerId: this.workerId, ...session.recorder.counts });
    })();
    return this.stopped;
  }

  /** Connected to Redis and claiming: what a readiness probe asks. */
  get ready(): boolean {
    return this.stopped === undefined && this.session?.ready === true;
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
