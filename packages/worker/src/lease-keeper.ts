import type { Broker } from "@flotilla/broker";
import { ErrorCodes, type Logger } from "@flotilla/core";
import { AbortReason } from "./abort-reason.ts";
import type { InFlight } from "./in-flight.ts";

/**
 * Keeps the leases of every entry a worker holds, on one timer however many tasks it runs: every
 * third of the lease, each lane's entries are renewed in one script call. A run whose entry another
 * worker took over (its lease lapsed here: frozen, cut off), or whose entry Redis lost with its data,
 * is aborted, so it stops and writes nothing more. (BullMQ's lock manager plays the same part.)
 */
export class LeaseKeeper {
  private readonly broker: Broker;
  private readonly inFlight: InFlight;
  private readonly consumer: string;
  private readonly leaseMs: number;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | undefined;

  constructor(broker: Broker, inFlight: InFlight, consumer: string, leaseMs: number, log: Logger) {
    this.broker = broker;
    this.inFlight = inFlight;
    this.consumer = consumer;
    this.leaseMs = leaseMs;
    this.log = log;
  }

  start(): void {
    this.timer ??= setInterval(() => void this.renew(), Math.floor(this.leaseMs / 3));
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Renews every lease held now; a failed renewal is retried on the next tick (the lease has two more). */
  async renew(): Promise<void> {
    for (const { lane, entryIds } of this.inFlight.byLane()) {
      let lost: string[];
      try {
        lost = await this.broker.renew(lane, this.consumer, entryIds);
      } catch (err) {
        this.log.warn("lease renewal failed; will retry", { err, queue: lane.queue });
        continue;
      }
      for (const entryId of lost) {
        const run = this.inFlight.get(lane, entryId);
        // Finished, or its outcome is being written: that write acknowledged the entry between the
        // snapshot above and the renewal (no loss). Were it taken over meanwhile, the write is fenced
        // on its attempt and the recorder says so; the run has nothing left to abort.
        if (!run || run.settling) continue;
        // Another worker took the task over; or Redis lost its data (the entry went with its group).
        this.log.warn("lease lost: the entry is no longer ours", { queue: lane.queue, entryId, taskId: run.taskId });
        run.controller.abort(new AbortReason(ErrorCodes.STALE_ATTEMPT, "lease lost: another worker took the task over, or Redis lost it"));
      }
    }
  }
}
