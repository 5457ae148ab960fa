import { hostname } from "node:os";
import { DEFAULTS, type Keys } from "@flotilla/core";
import { redisTime, withRedis } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import type { NotReady, WorkerRecord, WorkerState } from "./schema.ts";
import { scripts } from "./scripts.ts";

export interface HeartbeatOptions {
  workerId: string;
  queues: readonly string[];
  /** The graph node types served, listed in the record. */
  nodeTypes?: readonly string[] | undefined;
  subscriptions?: readonly string[] | undefined;
  concurrency: number;
  /** The record expires this long after the last beat; beats come every third of it. @default DEFAULTS.heartbeatTtlMs (15_000) */
  ttlMs?: number;
  /** Live figures, read on every beat. */
  snapshot: () => { running: string[]; completed: number; failed: number };
  /** The worker's state and, when not ready, why; read on every beat. Absent: not reported. */
  state?: () => { state: WorkerState; reasons: NotReady[] };
  /** The version of the software it runs, and the application's build. */
  version?: string | undefined;
  buildId?: string | undefined;
  /** Told about a beat that could not be written (the next beat retries). */
  onError?: (err: unknown) => void;
}

/** Workers silent this long are dropped from the fleet's list. */
const FORGET_AFTER_MS = 86_400_000;

/** Keeps a worker's record alive in Redis while it runs; removes it on a clean stop. */
export class Heartbeat {
  private readonly redis: Redis;
  private readonly keys: Keys;
  private readonly opts: HeartbeatOptions;
  private readonly ttlMs: number;
  /** Redis's time at the first beat. */
  private startedAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The beat being written, which stop() waits for: a beat landing after the record's removal would bring it back. */
  private beating: Promise<unknown> | undefined;
  private stopped = false;

  constructor(redis: Redis, keys: Keys, options: HeartbeatOptions) {
    this.redis = redis;
    this.keys = keys;
    this.opts = options;
    this.ttlMs = options.ttlMs ?? DEFAULTS.heartbeatTtlMs;
  }

  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(
      () => {
        this.beat().catch((err) => this.opts.onError?.(err));
      },
      Math.max(10, Math.floor(this.ttlMs / 3)),
    );
    this.timer.unref();
  }

  /**
   * Writes the record and the beat's time. The time is Redis's own (TIME), not this process's: a
   * worker whose clock runs ahead or behind is still judged by the readers' one clock.
   */
  beat(): Promise<void> {
    const written = this.write();
    this.beating = written.catch(() => {});
    return written;
  }

  private async write(): Promise<void> {
    if (this.stopped) return;
    const now = await redisTime(this.redis);
    // Stopped while Redis's time was read: the record is being removed; write nothing.
    if (this.stopped) return;
    this.startedAt ??= now;
    const live = this.opts.snapshot();
    const state = this.opts.state?.();
    const record: WorkerRecord = {
      workerId: this.opts.workerId,
      hostname: hostname(),
      pid: process.pid,
      queues: [...this.opts.queues],
      ...(this.opts.nodeTypes && { nodeTypes: [...this.opts.nodeTypes] }),
      ...(this.opts.subscriptions && { subscriptions: [...this.opts.subscriptions] }),
      concurrency: this.opts.concurrency,
      running: live.running,
      completed: live.completed,
      failed: live.failed,
      startedAt: this.startedAt,
      lastBeat: now,
      heartbeatTtlMs: this.ttlMs,
      ...(state && { state: state.state }),
      ...(state && state.reasons.length > 0 && { reasons: state.reasons }),
      ...(this.opts.version && { version: this.opts.version }),
      ...(this.opts.buildId && { buildId: this.opts.buildId }),
    };
    // One script (it runs on a full Redis too); workers silent for a day are forgotten, their
    // records expired long ago.
    await scripts.beat.run(
      this.redis,
      [this.keys.worker(this.opts.workerId), this.keys.workers()],
      [JSON.stringify(record), this.ttlMs, this.opts.workerId, now, now - FORGET_AFTER_MS],
    );
  }

  /** Stops beating and removes the record at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.beating;
    // Redis's failure as Flotilla's error (a ConnectionError when it does not answer), not ioredis's.
    await withRedis(this.redis, async () => {
      const replies = await this.redis.pipeline().del(this.keys.worker(this.opts.workerId)).zrem(this.keys.workers(), this.opts.workerId).exec();
      for (const [err] of replies ?? []) if (err) throw err;
    });
  }
}
