import type { Logger } from "@flotilla/core";

/**
 * Why a worker is not ready: `starting` (start() has not finished), `stopping` (stop() was called),
 * `redis` (its connection to Redis is down), `redis-full` (Redis is at its maxmemory: the worker
 * takes no new work, finishing what it runs), `claiming` (its claims fail: a missing consumer group
 * it could not make again, an error from Redis).
 */
export type NotReadyReason = "starting" | "stopping" | "redis" | "redis-full" | "claiming";

/** A worker's readiness as a probe reads it: ready, or each reason it is not, with what was seen and since when (ms). */
export interface ReadinessState {
  ready: boolean;
  reasons: Array<{ reason: NotReadyReason; detail: string; since: number }>;
}

/**
 * Whether a worker is ready, decided in one place: each part that can make the worker unready
 * raises its reason when it fails and clears it when it works again. Each change is logged once:
 * a reason raised (not every failure behind it), and the return to ready.
 */
export class Readiness {
  private readonly log: Logger;
  private readonly onChange: (state: ReadinessState) => void;
  private readonly failing = new Map<NotReadyReason, { detail: string; since: number }>();

  constructor(log: Logger, onChange: (state: ReadinessState) => void = () => {}) {
    this.log = log;
    this.onChange = onChange;
  }

  get ready(): boolean {
    return this.failing.size === 0;
  }

  get state(): ReadinessState {
    return { ready: this.ready, reasons: [...this.failing].map(([reason, { detail, since }]) => ({ reason, detail, since })) };
  }

  /** `reason` makes the worker unready (again: the detail is updated, nothing logged). */
  raise(reason: NotReadyReason, detail: string): void {
    const known = this.failing.get(reason);
    if (known) {
      known.detail = detail;
      return;
    }
    this.failing.set(reason, { detail, since: Date.now() });
    this.log.warn("worker not ready", { reason, detail });
    this.onChange(this.state);
  }

  /** `reason` no longer holds; ready once no reason is left. */
  clear(reason: NotReadyReason): void {
    if (!this.failing.delete(reason)) return;
    if (this.ready) this.log.info("worker ready", { after: reason });
    else this.log.info("worker still not ready", { cleared: reason, reasons: [...this.failing.keys()] });
    this.onChange(this.state);
  }
}
