import type { Redis } from "ioredis";
import type { Readiness } from "./readiness.ts";

/** Why Redis is out of reach: the connection closed (ioredis reconnects), or Redis stopped answering. */
export type LinkDownCause = "closed" | "unresponsive";

export interface RedisLinkOptions {
  /** How often Redis is asked (PING) whether it answers. */
  probeIntervalMs: number;
  /** A probe unanswered this long means Redis is out of reach. */
  probeTimeoutMs: number;
  /** Where Redis is, for the readiness detail (e.g. `127.0.0.1:6379`). */
  where: string;
}

/**
 * Whether this worker can reach Redis now, decided in one place for the parts that must hold back
 * while it cannot: the claim loop (claims nothing), readiness (`redis`) and the worker's probes.
 * Down while the command connection is closed, or while a probe has gone unanswered for
 * `probeTimeoutMs` — a network partition leaves the socket open and silent, so only a question that
 * gets no answer tells. Up again once the connection is back and a probe is answered.
 *
 * Leases do not wait for this: the lease keeper fences runs on its own renewals' answers.
 */
export class RedisLink {
  private readonly redis: Redis;
  private readonly readiness: Pick<Readiness, "raise" | "clear">;
  private readonly opts: RedisLinkOptions;
  private readonly down = new Map<LinkDownCause, string>();
  private waiters: Array<() => void> = [];
  private timer: NodeJS.Timeout | undefined;
  /** When the probe that has not been answered yet was sent (monotonic ms). */
  private probeSentAt: number | undefined;

  constructor(redis: Redis, readiness: Pick<Readiness, "raise" | "clear">, options: RedisLinkOptions) {
    this.redis = redis;
    this.readiness = readiness;
    this.opts = options;
  }

  /** Redis answered its last probe and the connection is open. */
  get up(): boolean {
    return this.down.size === 0;
  }

  /** Resolves once Redis can be reached (at once when it can). */
  whenUp(): Promise<void> {
    if (this.up) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  start(): void {
    this.redis.on("close", this.closed);
    this.redis.on("ready", this.reopened);
    if (this.redis.status !== "ready") this.closed();
    this.timer ??= setInterval(() => this.probe(), this.opts.probeIntervalMs);
    this.timer.unref();
  }

  /** Stops probing and listening (the connection is closed on purpose next); wakes whoever waits. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.redis.off("close", this.closed);
    this.redis.off("ready", this.reopened);
    this.release();
  }

  private readonly closed = () => this.setDown("closed", `the connection to Redis at ${this.opts.where} is down`);
  private readonly reopened = () => this.setUp("closed");

  private probe(now: number = performance.now()): void {
    const sent = this.probeSentAt;
    if (sent !== undefined) {
      const silentMs = Math.round(now - sent);
      if (silentMs < this.opts.probeTimeoutMs) return;
      // Judged after the I/O already waiting is read: a stalled event loop runs timers first, and the
      // answer may be sitting in the socket.
      setImmediate(() => {
        if (this.probeSentAt === sent) this.setDown("unresponsive", `Redis at ${this.opts.where} has not answered for ${silentMs} ms`);
      });
      return;
    }
    this.probeSentAt = now;
    this.redis.ping().then(
      () => {
        this.probeSentAt = undefined;
        this.setUp("unresponsive");
      },
      // Refused at once (connection closed, no offline queue) or failed: the next tick asks again.
      () => {
        this.probeSentAt = undefined;
      },
    );
  }

  private setDown(cause: LinkDownCause, detail: string): void {
    this.down.set(cause, detail);
    this.readiness.raise("redis", detail);
  }

  private setUp(cause: LinkDownCause): void {
    if (!this.down.delete(cause)) return;
    const other = [...this.down.values()][0];
    if (other !== undefined) {
      this.readiness.raise("redis", other);
      return;
    }
    this.readiness.clear("redis");
    this.release();
  }

  private release(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
