import type { Broker } from "@flotilla/broker";
import { AbortReason, ErrorCodes, type Logger } from "@flotilla/core";
import type { InFlight, Running } from "./in-flight.ts";

export interface LeaseKeeperOptions {
  /** This worker's consumer name (its id). */
  consumer: string;
  leaseMs: number;
  /** How long before its lease could lapse a run that could not be renewed is stopped. */
  selfFenceMarginMs: number;
  log: Logger;
  /** Told of each run stopped because its lease could not be renewed in time. */
  fenced?: (run: Running) => void;
}

/**
 * Keeps the leases of every entry a worker holds, on one timer however many tasks it runs: every
 * third of the lease, each lane's entries are renewed in one script call. A run whose entry another
 * worker took over, or whose entry Redis lost with its data, is aborted (STALE_ATTEMPT), so it stops
 * and writes nothing more. (BullMQ's lock manager plays the same part.)
 *
 * Self-fencing: a run whose lease could not be renewed — Redis unreachable — is aborted by this
 * worker itself (LEASE_EXPIRED) before another worker may take it over. Another worker takes an
 * entry only once Redis has seen it idle for the holder's lease, and Redis reset its idle time no
 * earlier than when the request that claimed or last renewed it was sent (Running.leaseFrom). So a
 * run is stopped at `leaseFrom + leaseMs - selfFenceMarginMs` on this process's monotonic clock,
 * checked every thirtieth of the lease.
 */
export class LeaseKeeper {
  private readonly broker: Broker;
  private readonly inFlight: InFlight;
  private readonly opts: LeaseKeeperOptions;
  private renewTimer: NodeJS.Timeout | undefined;
  private fenceTimer: NodeJS.Timeout | undefined;
  /** A renewal pass is out: the next tick does not queue another behind it (Redis unreachable). */
  private renewing = false;

  constructor(broker: Broker, inFlight: InFlight, options: LeaseKeeperOptions) {
    this.broker = broker;
    this.inFlight = inFlight;
    this.opts = options;
  }

  start(): void {
    this.renewTimer ??= setInterval(() => void this.renewOnce(), Math.floor(this.opts.leaseMs / 3));
    this.renewTimer.unref();
    this.fenceTimer ??= setInterval(() => this.fence(), fenceCheckMs(this.opts.leaseMs));
    this.fenceTimer.unref();
  }

  stop(): void {
    clearInterval(this.renewTimer);
    clearInterval(this.fenceTimer);
    this.renewTimer = undefined;
    this.fenceTimer = undefined;
  }

  private async renewOnce(): Promise<void> {
    if (this.renewing) return;
    this.renewing = true;
    try {
      await this.renew();
    } finally {
      this.renewing = false;
    }
  }

  /** Renews every lease held now; a failed renewal is retried on the next tick (the lease has two more). */
  async renew(): Promise<void> {
    const { consumer, log } = this.opts;
    for (const { lane, entryIds } of this.inFlight.byLane()) {
      let lost: string[];
      const sentAt = performance.now();
      try {
        lost = await this.broker.renew(lane, consumer, entryIds);
      } catch (err) {
        log.warn("lease renewal failed; will retry", { err, queue: lane.queue });
        continue;
      }
      const gone = new Set(lost);
      this.inFlight.renewed(
        lane,
        entryIds.filter((id) => !gone.has(id)),
        sentAt,
      );
      for (const entryId of lost) {
        const run = this.inFlight.get(lane, entryId);
        // Finished, or its outcome is being written: that write acknowledged the entry between the
        // snapshot above and the renewal (no loss). Were it taken over meanwhile, the write is fenced
        // on its attempt and the recorder says so; the run has nothing left to abort.
        if (!run || run.settling) continue;
        // Another worker took the task over; or Redis lost its data (the entry went with its group).
        log.warn("lease lost: the entry is no longer ours", { queue: lane.queue, entryId, taskId: run.taskId });
        run.controller.abort(new AbortReason(ErrorCodes.STALE_ATTEMPT, "lease lost: another worker took the task over, or Redis lost it"));
      }
    }
  }

  /** Whether a lease given or renewed at `leaseFrom` (monotonic ms) is within the margin of lapsing, or past it. */
  lapsed(leaseFrom: number, now: number = performance.now()): boolean {
    return now >= leaseFrom + this.opts.leaseMs - this.opts.selfFenceMarginMs;
  }

  /**
   * Aborts every run whose lease could lapse within the margin (`now`: monotonic ms). A run whose
   * outcome is being written runs no code of its own any more; its write is fenced on its attempt.
   */
  fence(now: number = performance.now()): void {
    const { leaseMs, log } = this.opts;
    for (const run of this.inFlight.all()) {
      if (run.settling || run.controller.signal.aborted || !this.lapsed(run.leaseFrom, now)) continue;
      const renewedMsAgo = Math.round(now - run.leaseFrom);
      log.warn("lease not renewed in time (Redis unreachable?): stopping the run before another worker may take it over", {
        queue: run.lane.queue,
        entryId: run.entryId,
        taskId: run.taskId,
        renewedMsAgo,
        leaseMs,
      });
      run.controller.abort(
        new AbortReason(ErrorCodes.LEASE_EXPIRED, `the lease could not be renewed for ${renewedMsAgo} ms of ${leaseMs}: another worker may take the task over`),
      );
      this.opts.fenced?.(run);
    }
  }
}

/** How often runs are checked against their lease: a thirtieth of it, between 10 ms and 1 s. */
export function fenceCheckMs(leaseMs: number): number {
  return Math.min(1000, Math.max(10, Math.floor(leaseMs / 30)));
}
