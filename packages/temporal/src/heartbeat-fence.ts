// Self-fencing in Temporal mode: an activity whose heartbeats cannot reach the server stops itself
// before the server may have timed it out and handed a retry to another worker.
import { ErrorCodes } from "@flotilla/core";
import { AbortReason, fenceCheckMs } from "@flotilla/worker";

export interface HeartbeatFenceOptions {
  /**
   * Sends one heartbeat: true once the server has recorded it (a reply, not a queued send); false
   * when the server answers that it no longer holds the activity (timed out, its workflow closed).
   */
  beat: () => Promise<boolean>;
  /** How often to beat. */
  intervalMs: number;
  /** The activity's heartbeat timeout. */
  timeoutMs: number;
  /** How long before its heartbeat timeout could pass an activity is stopped. */
  marginMs: number;
  /** Told once, when the heartbeat timeout may pass within the margin: abort the work with `reason`. */
  lapsed: (reason: AbortReason, beatMsAgo: number) => void;
  /** Told once, when the server answered that it no longer holds the activity: abort the work. */
  gone: () => void;
}

/**
 * Keeps one activity's heartbeat, and knows when it was last acknowledged. The server restarts an
 * activity's heartbeat timer when it records a heartbeat, no earlier than when the request was
 * sent; so without an answer since `beatFrom` (monotonic ms: the send time of the last answered
 * beat, or the activity's start), the server may time the activity out at `beatFrom + timeoutMs`
 * and schedule its retry. At `beatFrom + timeoutMs - marginMs` the activity is told to stop.
 *
 * The Temporal SDK's own `heartbeat()` answers nothing (the worker sends it later, throttled), so
 * the beats here are requests of their own (RecordActivityTaskHeartbeat), one at a time.
 *
 * The first beat goes out at `start()`, and the activity's work waits for its answer (`ready`): a
 * task that reached the worker late — handed to a poll whose connection was cut, delivered when it
 * healed, long after the server timed it out — is answered "gone" and never runs.
 */
export class HeartbeatFence {
  private readonly opts: HeartbeatFenceOptions;
  private beatFrom: number;
  private beating = false;
  private done = false;
  private beatTimer: NodeJS.Timeout | undefined;
  private checkTimer: NodeJS.Timeout | undefined;
  private answered!: () => void;
  /** Resolves at the first answered beat: the server still holds the activity, its work may start. */
  readonly ready: Promise<void> = new Promise((resolve) => {
    this.answered = resolve;
  });

  /** `startedAt`: when the activity started (monotonic ms), the lease's first start. */
  constructor(options: HeartbeatFenceOptions, startedAt: number = performance.now()) {
    this.opts = options;
    this.beatFrom = startedAt;
  }

  start(): void {
    this.beatTimer ??= setInterval(() => void this.beatOnce(), this.opts.intervalMs);
    this.checkTimer ??= setInterval(() => this.check(), fenceCheckMs(this.opts.timeoutMs));
    void this.beatOnce();
  }

  stop(): void {
    clearInterval(this.beatTimer);
    clearInterval(this.checkTimer);
    this.beatTimer = undefined;
    this.checkTimer = undefined;
  }

  /** One beat, unless one is still out (the server unreachable): a failed beat counts for nothing. */
  async beatOnce(): Promise<void> {
    if (this.beating || this.done) return;
    this.beating = true;
    const sentAt = performance.now();
    try {
      if (await this.opts.beat()) {
        this.beatFrom = Math.max(this.beatFrom, sentAt);
        this.answered();
      } else if (!this.done) {
        this.done = true;
        this.stop();
        this.opts.gone();
      }
    } catch {
      // Retried on the next tick; the fence decides when it is too late.
    } finally {
      this.beating = false;
    }
  }

  /** Tells `lapsed` once the heartbeat timeout may pass within the margin (`now`: monotonic ms). */
  check(now: number = performance.now()): void {
    const { timeoutMs, marginMs } = this.opts;
    if (this.done || now < this.beatFrom + timeoutMs - marginMs) return;
    this.done = true;
    this.stop();
    const beatMsAgo = Math.round(now - this.beatFrom);
    this.opts.lapsed(
      new AbortReason(
        ErrorCodes.LEASE_EXPIRED,
        `no heartbeat reached Temporal for ${beatMsAgo} ms of the ${timeoutMs} ms heartbeat timeout: it may retry the activity elsewhere`,
      ),
      beatMsAgo,
    );
  }
}

/**
 * The fence's timing for an activity with heartbeat timeout `timeoutMs`: beats every
 * `intervalMs`, at most a third of the timeout; the margin is `marginMs` (a tenth of the timeout
 * when unset), at most a third of the timeout, so a beat answered within a third keeps it alive.
 */
export function fenceTiming(timeoutMs: number, intervalMs: number, marginMs: number | undefined): { intervalMs: number; marginMs: number } {
  const third = Math.floor(timeoutMs / 3);
  return { intervalMs: Math.max(1, Math.min(intervalMs, third)), marginMs: Math.min(marginMs ?? Math.floor(timeoutMs / 10), third) };
}
