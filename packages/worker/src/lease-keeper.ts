import type { Broker } from "@flotilla/broker";
import { AbortReason, ErrorCodes, type Logger } from "@flotilla/core";
import { isCluster } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import type { InFlight, Running } from "./in-flight.ts";

/**
 * Leases are renewed this many times per lease. Often, so that an outage (Redis restarted, paused or
 * out of reach) costs a run only the time since its last renewal: a run is stopped once its lease
 * could not be renewed for the lease less the margin (see LeaseKeeper), so with renewals every sixth
 * of it an outage of up to about 0.73 of the lease less the reconnect stops nothing.
 */
export const RENEWALS_PER_LEASE = 6;

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
 * sixth of the lease, each lane's entries are renewed in one script call, the lanes at once (a lane
 * whose Redis node does not answer — a cluster master failing over — holds up no other). A run whose
 * entry another worker took over, or whose entry Redis lost with its data, is aborted (STALE_ATTEMPT),
 * so it stops and writes nothing more. (BullMQ's lock manager plays the same part.)
 *
 * Self-fencing: a run whose lease could not be renewed — Redis unreachable — is aborted by this
 * worker itself (LEASE_EXPIRED) before another worker may take it over. Another worker takes an
 * entry only once Redis has seen it idle for the holder's lease, and Redis reset its idle time no
 * earlier than when the request that claimed or last renewed it was sent (Running.leaseFrom). So a
 * run is stopped at `leaseFrom + leaseMs - selfFenceMarginMs` on this process's monotonic clock,
 * checked every thirtieth of the lease. A run that has finished (Running.finished: only its events
 * and outcome are left to write, both fenced on its attempt) is renewed but never stopped.
 *
 * After a reconnect the leases are renewed before anything else: the moment the connection drops a
 * renewal of every lease is queued, so it is the first command the new connection sends after
 * those that were in flight; its lease counts from the moment the new connection opened (a command
 * answered on a connection was written on it, after it opened). See `watch`.
 */
export class LeaseKeeper {
  private readonly broker: Broker;
  private readonly inFlight: InFlight;
  private readonly opts: LeaseKeeperOptions;
  private renewTimer: NodeJS.Timeout | undefined;
  private fenceTimer: NodeJS.Timeout | undefined;
  /** A renewal pass of the timer is out: the next tick does not queue another behind it (Redis unreachable). */
  private renewing = false;
  /** A renewal pass is queued for when the connection is back: another drop queues no second one. */
  private renewingOnReconnect = false;
  /** When the command connection last opened (monotonic ms; see `watch`). */
  private connectedAt = Number.NEGATIVE_INFINITY;
  private watched: { redis: Redis; off: () => void } | undefined;

  constructor(broker: Broker, inFlight: InFlight, options: LeaseKeeperOptions) {
    this.broker = broker;
    this.inFlight = inFlight;
    this.opts = options;
  }

  start(): void {
    this.renewTimer ??= setInterval(() => void this.renewOnce(), renewIntervalMs(this.opts.leaseMs));
    this.renewTimer.unref();
    this.fenceTimer ??= setInterval(() => this.fence(), fenceCheckMs(this.opts.leaseMs));
    this.fenceTimer.unref();
  }

  stop(): void {
    clearInterval(this.renewTimer);
    clearInterval(this.fenceTimer);
    this.renewTimer = undefined;
    this.fenceTimer = undefined;
    this.watched?.off();
    this.watched = undefined;
  }

  /**
   * Follows the connection the renewals go out on (a single Redis: a cluster's node connections are
   * its own affair), so that a drop queues a renewal of every lease at once — the first command the
   * new connection sends, after what was in flight — and renewals answered on a connection count
   * from when it opened, if that is later than when they were sent.
   */
  watch(redis: Redis): void {
    if (this.watched || isCluster(redis) || typeof redis.on !== "function") return;
    const opened = () => {
      this.connectedAt = performance.now();
    };
    const dropped = () => {
      if (this.renewingOnReconnect || this.inFlight.size === 0) return;
      this.renewingOnReconnect = true;
      void this.renew().finally(() => {
        this.renewingOnReconnect = false;
      });
    };
    redis.on("connect", opened);
    redis.on("close", dropped);
    this.watched = {
      redis,
      off: () => {
        redis.off("connect", opened);
        redis.off("close", dropped);
      },
    };
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

  /**
   * Renews every lease held now, each lane in its own call, all at once; a failed renewal is retried
   * on the next tick (the lease has five more).
   */
  async renew(): Promise<void> {
    await Promise.all(this.inFlight.byLane().map(({ lane, entryIds }) => this.renewLane(lane, entryIds)));
  }

  private async renewLane(lane: Running["lane"], entryIds: string[]): Promise<void> {
    const { consumer, log } = this.opts;
    let lost: string[];
    const sentAt = performance.now();
    try {
      lost = await this.broker.renew(lane, consumer, entryIds);
    } catch (err) {
      log.warn("lease renewal failed; will retry", { err, queue: lane.queue });
      return;
    }
    const gone = new Set(lost);
    // Answered on the connection opened last: written on it, so no earlier than it opened.
    this.inFlight.renewed(
      lane,
      entryIds.filter((id) => !gone.has(id)),
      Math.max(sentAt, this.connectedAt),
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

  /** Whether a lease given or renewed at `leaseFrom` (monotonic ms) is within the margin of lapsing, or past it. */
  lapsed(leaseFrom: number, now: number = performance.now()): boolean {
    return now >= leaseFrom + this.opts.leaseMs - this.opts.selfFenceMarginMs;
  }

  /**
   * Aborts every run whose lease could lapse within the margin (`now`: monotonic ms). A run that has
   * finished runs no code of its own any more; its events and outcome are fenced on its attempt, and
   * its lease is still renewed until they land.
   */
  fence(now: number = performance.now()): void {
    const { leaseMs, log } = this.opts;
    for (const run of this.inFlight.all()) {
      if (run.finished || run.controller.signal.aborted || !this.lapsed(run.leaseFrom, now)) continue;
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

/** How often every lease is renewed: a sixth of it (RENEWALS_PER_LEASE). */
export function renewIntervalMs(leaseMs: number): number {
  return Math.max(1, Math.floor(leaseMs / RENEWALS_PER_LEASE));
}

/** How often runs are checked against their lease: a thirtieth of it, between 10 ms and 1 s. */
export function fenceCheckMs(leaseMs: number): number {
  return Math.min(1000, Math.max(10, Math.floor(leaseMs / 30)));
}
