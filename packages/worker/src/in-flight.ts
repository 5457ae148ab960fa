import type { Lane } from "@flotilla/broker";

/** One claimed entry being worked on: an attempt running, or an unrunnable entry being dead-lettered. */
export interface Running {
  lane: Lane;
  entryId: string;
  /** Empty while an unparseable entry is being dead-lettered. */
  taskId: string;
  controller: AbortController;
  done: Promise<void>;
  /**
   * Its run has finished (the executor returned, threw, or was let go): no code of the run is left
   * to stop, and what remains — flushing its events, writing its outcome — is fenced on its attempt.
   * The lease keeper keeps renewing its lease but never fences it (LEASE_EXPIRED), so a Redis that is
   * slow or briefly out of reach delays its outcome instead of throwing the finished work away.
   */
  finished: boolean;
  /**
   * Its outcome (or dead letter) has been handed over to be written: from then on the entry may be
   * acknowledged at any moment, so a renewal that finds it gone has not lost it.
   */
  settling: boolean;
  /**
   * The latest moment (this process's monotonic clock, `performance.now()`) its lease is known to
   * have been given or renewed from: when the request that claimed or renewed the entry was sent.
   * Redis reset the entry's idle time at that moment or later, so no other worker can take the
   * entry over before `leaseFrom + lease` (see LeaseKeeper).
   */
  leaseFrom: number;
}

export const laneKey = (lane: Lane): string => `${lane.queue}/${lane.priority}`;
const runKey = (lane: Lane, entryId: string) => `${laneKey(lane)}/${entryId}`;

/**
 * The entries a worker holds, by lane and entry id. The lease keeper renews them, the scheduler
 * counts them against `concurrency`, and stop() waits for them.
 */
export class InFlight {
  private readonly runs = new Map<string, Running>();
  private readonly onFreed: () => void;
  /** Set by abortAll: work tracked from then on (a claim answered as the worker stops) starts aborted. */
  private abortedWith: { reason: unknown } | undefined;

  /** @param onFreed called each time an entry's work is over and its slot is free */
  constructor(onFreed: () => void) {
    this.onFreed = onFreed;
  }

  get size(): number {
    return this.runs.size;
  }

  has(lane: Lane, entryId: string): boolean {
    return this.runs.has(runKey(lane, entryId));
  }

  get(lane: Lane, entryId: string): Running | undefined {
    return this.runs.get(runKey(lane, entryId));
  }

  /**
   * Tracks `work` for the entry until it settles; its failure goes to `onError`, never further.
   * `leaseFrom`: when the request that claimed the entry was sent (see Running.leaseFrom).
   */
  track(
    lane: Lane,
    entryId: string,
    taskId: string,
    leaseFrom: number,
    work: (controller: AbortController) => Promise<void>,
    onError: (err: unknown) => void,
  ): void {
    const key = runKey(lane, entryId);
    const controller = new AbortController();
    if (this.abortedWith) controller.abort(this.abortedWith.reason);
    const running: Running = { lane, entryId, taskId, controller, done: Promise.resolve(), finished: false, settling: false, leaseFrom };
    this.runs.set(key, running);
    running.done = work(controller)
      .catch(onError)
      .finally(() => {
        this.runs.delete(key);
        this.onFreed();
      });
  }

  /** The entry's run has finished (see Running.finished). */
  markFinished(lane: Lane, entryId: string): void {
    const run = this.runs.get(runKey(lane, entryId));
    if (run) run.finished = true;
  }

  /** The entry's outcome is being written (see Running.settling); called before the write is sent. */
  markSettling(lane: Lane, entryId: string): void {
    const run = this.runs.get(runKey(lane, entryId));
    if (run) {
      run.finished = true;
      run.settling = true;
    }
  }

  /** The entries' leases were renewed by a request sent at `sentAt` (monotonic ms). */
  renewed(lane: Lane, entryIds: readonly string[], sentAt: number): void {
    for (const entryId of entryIds) {
      const run = this.runs.get(runKey(lane, entryId));
      if (run && run.leaseFrom < sentAt) run.leaseFrom = sentAt;
    }
  }

  /** Everything held now. */
  all(): Running[] {
    return [...this.runs.values()];
  }

  /** Ids of the tasks being run. */
  taskIds(): string[] {
    return [...this.runs.values()].flatMap((r) => (r.taskId ? [r.taskId] : []));
  }

  /** The entries held, grouped by lane. */
  byLane(): Array<{ lane: Lane; entryIds: string[] }> {
    const groups = new Map<string, { lane: Lane; entryIds: string[] }>();
    for (const r of this.runs.values()) {
      const key = laneKey(r.lane);
      const group = groups.get(key) ?? { lane: r.lane, entryIds: [] };
      group.entryIds.push(r.entryId);
      groups.set(key, group);
    }
    return [...groups.values()];
  }

  /** Aborts everything held, and everything tracked from now on as soon as it is (the worker is stopping). */
  abortAll(reason: unknown): void {
    this.abortedWith = { reason };
    for (const r of this.runs.values()) r.controller.abort(reason);
  }

  /**
   * Resolves true once nothing is held — what is held now, and what is tracked before it is done (a
   * claim or a settle's claim answered while the worker stops starts tasks it must wait for or hand
   * back, never leave to a lapsing lease) — or false after `timeoutMs`.
   */
  async settled(timeoutMs: number = Number.POSITIVE_INFINITY): Promise<boolean> {
    const all = (async () => {
      while (this.runs.size > 0) await Promise.all([...this.runs.values()].map((r) => r.done));
      return true as const;
    })();
    if (!Number.isFinite(timeoutMs)) return all;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const done = await Promise.race([all, timeout]);
    clearTimeout(timer);
    return done;
  }
}
