import type { Broker, Lane } from "@flotilla/broker";
import { ErrorCodes, type Logger } from "@flotilla/core";
import { type FlotillaMetrics, METRICS } from "@flotilla/metrics";
import type { FinishInput, TaskStore } from "@flotilla/store";
import type { DeadLetteredEvent, TaskEndEvent } from "./events.ts";
import { persist } from "./persist.ts";
import type { Settler } from "./settler.ts";

export interface RecorderDeps {
  settler: Settler;
  broker: Broker;
  store: TaskStore;
  consumer: string;
  metrics: FlotillaMetrics;
  log: Logger;
  ended: (event: TaskEndEvent) => void;
  deadLettered: (event: DeadLetteredEvent) => void;
  /**
   * Called before an entry's outcome or dead letter is sent, as either may acknowledge it: the
   * lease keeper then knows a renewal that finds the entry gone is no loss.
   */
  settling?: ((lane: Lane, entryId: string) => void) | undefined;
  /** Told of each write Redis refused for being full or out of reach (the worker's link). */
  observe?: ((err: unknown) => void) | undefined;
  /** Aborted when the worker stops sending refused writes again (its drain deadline passed). */
  giveUp?: AbortSignal | undefined;
}

const COUNTERS = { COMPLETED: METRICS.completed, FAILED: METRICS.failed, CANCELLED: METRICS.cancelled, RETRYING: METRICS.retried } as const;

/**
 * Records what became of each claimed entry: an attempt's outcome (batched with the other outcomes
 * of the tick by the Settler: the record written, the entry acknowledged, delayed for a retry or
 * dead-lettered), or an entry that could not run, dead-lettered with the reason. Counts, metrics,
 * the task's log line and the worker's events follow from what Redis accepted.
 */
export class OutcomeRecorder {
  private readonly deps: RecorderDeps;
  readonly counts = { completed: 0, failed: 0 };

  constructor(deps: RecorderDeps) {
    this.deps = deps;
  }

  async record(lane: Lane, entryId: string, taskId: string, outcome: FinishInput, traceId?: string): Promise<void> {
    const { queue } = lane;
    const error = outcome.error ?? { message: "failed", code: ErrorCodes.AGENT_ERROR };
    const deadReason =
      outcome.status === "FAILED" ? `failed after ${outcome.attempt} attempt${outcome.attempt === 1 ? "" : "s"}: [${error.code}] ${error.message}` : undefined;
    this.deps.settling?.(lane, entryId);
    const finished = await this.persist("outcome", { taskId, entryId, status: outcome.status }, () =>
      this.deps.settler.settle(queue, { ...outcome, taskId, priority: lane.priority, entryId, deadReason }),
    );
    if (!finished.ok && finished.reason === "corrupt") {
      // The record went bad while the attempt ran: nothing was written, the entry is still ours.
      if (entryId) await this.failCorrupt(lane, entryId, taskId, finished.detail);
      else this.deps.log.warn("outcome not recorded: corrupt task record", { taskId, reason: finished.detail });
      return;
    }
    if (finished.ok && finished.deadLettered) {
      this.deps.deadLettered({ queue, entryId, reason: `[${error.code}] ${error.message}`, taskId });
    }
    const status = finished.ok ? (finished.status as FinishInput["status"]) : outcome.status;
    if (finished.ok) {
      if (status === "COMPLETED") this.counts.completed++;
      else if (status === "FAILED") this.counts.failed++;
      if (status !== "WAITING") this.deps.metrics.add(COUNTERS[status], 1, { queue, agent: outcome.agent });
    } else {
      this.deps.log.warn("outcome not recorded", { taskId, reason: finished.reason, status: finished.status });
    }
    this.deps.log.info(status === "WAITING" ? "task waits for a signal" : "task ended", {
      taskId,
      attempt: outcome.attempt,
      status,
      error: outcome.error,
      retryAt: outcome.retryAt,
      ...(outcome.waiting && { signal: outcome.waiting.name }),
      recorded: finished.ok,
      ...(traceId && { traceId }),
    });
    this.deps.ended({ taskId, attempt: outcome.attempt, status, error: outcome.error, recorded: finished.ok });
  }

  /** `write`, sent again while Redis refuses it for being full or out of reach (see persist). */
  private persist<T>(what: string, fields: Record<string, unknown>, write: () => Promise<T>): Promise<T> {
    const { log, observe, giveUp } = this.deps;
    return persist(write, { log, what, fields, observe, giveUp });
  }

  /**
   * Takes a task whose record cannot be trusted out of its queue: its entry dead-lettered with the
   * reason (the bad values kept in the letter) and, when it can be, the record ended FAILED with code
   * CORRUPT_RECORD and its waiters told. One script call: the rest of the batch is not held up.
   */
  async failCorrupt(lane: Lane, entryId: string, taskId: string, fault: string): Promise<void> {
    const { queue } = lane;
    const reason = `corrupt task record: ${fault}`;
    const { moved, failed } = await this.persist("dead letter", { taskId, entryId }, () =>
      this.deps.store.failCorrupt(lane, entryId, this.deps.consumer, taskId, reason),
    );
    if (!moved) {
      this.deps.log.warn("entry not dead-lettered: another worker holds it now", { queue, entryId, taskId });
      return;
    }
    this.deps.log.warn("entry dead-lettered", { queue, entryId, reason, taskId, recordFailed: failed });
    if (failed) this.counts.failed++;
    this.deps.deadLettered({ queue, entryId, reason, taskId });
  }

  /** Reports an entry a script dead-lettered already (a task past its delivery limit, failed in the same call). */
  deadLettered(lane: Lane, entryId: string, reason: string, taskId: string): void {
    this.deps.log.warn("entry dead-lettered", { queue: lane.queue, entryId, reason, taskId });
    this.deps.deadLettered({ queue: lane.queue, entryId, reason, taskId });
  }

  /** Moves an entry that cannot run to its queue's dead letters, if this worker still holds it. */
  async deadLetter(
    lane: Lane,
    entryId: string,
    reason: string,
    fields: Record<string, string> | null,
    taskId: string | undefined,
    extra?: Record<string, unknown>,
  ): Promise<void> {
    const { queue } = lane;
    this.deps.settling?.(lane, entryId);
    const moved = await this.persist("dead letter", { taskId, entryId }, () =>
      this.deps.broker.deadLetter(lane, entryId, this.deps.consumer, { reason, fields, taskId, ...(extra && { extra }) }),
    );
    if (!moved) {
      this.deps.log.warn("entry not dead-lettered: another worker holds it now", { queue, entryId, taskId });
      return;
    }
    this.deps.log.warn("entry dead-lettered", { queue, entryId, reason, taskId });
    this.deps.deadLettered({ queue, entryId, reason, taskId });
  }
}
