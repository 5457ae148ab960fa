import { isMissingGroup } from "@flotilla/broker";
import { isRedisFull } from "@flotilla/core";
import { formatBytes, isFull, type RedisMemory, readRedisMemory } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import type { NotReadyReason, Readiness } from "./readiness.ts";

/**
 * Why the worker must take no new work from Redis: the connection closed (ioredis reconnects),
 * Redis stopped answering, or Redis is full (at `maxmemory`: it refuses what grows memory).
 */
export type LinkDownCause = "closed" | "unresponsive" | "full";

/** What an error from Redis means for the worker: Redis lost its consumer groups, is full, or anything else. */
export type RedisTrouble = "nogroup" | "full" | "other";

/** What an error from Redis means, by itself (RedisLink.observe also acts on it). */
export function classifyRedisError(err: unknown): RedisTrouble {
  if (isMissingGroup(err)) return "nogroup";
  return isRedisFull(err) ? "full" : "other";
}

/** The readiness reason each cause raises. */
const REASON: Record<LinkDownCause, NotReadyReason> = { closed: "redis", unresponsive: "redis", full: "redis-full" };

export interface RedisLinkOptions {
  /** How often Redis is asked (`INFO memory`, answered as a PING is) whether it answers, and how full it is. */
  probeIntervalMs: number;
  /** A probe unanswered this long means Redis is out of reach. */
  probeTimeoutMs: number;
  /** Where Redis is, for the readiness detail (e.g. `127.0.0.1:6379`). */
  where: string;
}

/**
 * The worker's connection-state machine: whether it may take new work from Redis now, decided in
 * one place for the parts that must hold back while it may not — the claim loop (claims nothing,
 * settles claim nothing), readiness and the worker's probes — and what an error from Redis means
 * (`observe`). Down while the command connection is closed; while a probe has gone unanswered for
 * `probeTimeoutMs` (a network partition leaves the socket open and silent, so only a question that
 * gets no answer tells); or while Redis is full — its probe (`INFO memory`, answered even then)
 * shows used_memory at maxmemory, or a write was refused with OOM since. Up again once the
 * connection is back and a probe is answered, showing memory below the limit.
 *
 * Leases do not wait for this: the lease keeper fences runs on its own renewals' answers, and
 * renewals, settles and a running task's events are let through a full Redis (their scripts allow
 * it): only new work waits.
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
  /** Probes sent so far: the number of the one `probeSentAt` is about. */
  private probes = 0;
  private lastMemory: RedisMemory | undefined;

  constructor(redis: Redis, readiness: Pick<Readiness, "raise" | "clear">, options: RedisLinkOptions) {
    this.redis = redis;
    this.readiness = readiness;
    this.opts = options;
  }

  /** Redis answered its last probe, the connection is open and Redis is not full: new work may be taken. */
  get up(): boolean {
    return this.down.size === 0;
  }

  /** Redis's memory as its last answered probe gave it. */
  get memory(): RedisMemory | undefined {
    return this.lastMemory;
  }

  /**
   * What an error from Redis means: "nogroup" (Redis lost its consumer groups; the caller makes
   * them again), "full" (the worker takes no new work until a probe shows memory below the limit),
   * or "other".
   */
  observe(err: unknown): RedisTrouble {
    const trouble = classifyRedisError(err);
    if (trouble !== "full") return trouble;
    this.setDown("full", `Redis at ${this.opts.where} is full: it refused a write (maxmemory reached); taking no new work until memory frees`);
    return "full";
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
        if (this.probeSentAt !== sent) return;
        this.setDown("unresponsive", `Redis at ${this.opts.where} has not answered for ${silentMs} ms`);
        // Asked again from the next tick: an answer lost for good (a connection dropped at the wrong
        // moment) must not keep the worker down for ever; a late answer still counts.
        this.probeSentAt = undefined;
      });
      return;
    }
    const probe = ++this.probes;
    this.probeSentAt = now;
    readRedisMemory(this.redis).then(
      (memory) => {
        if (probe === this.probes) this.probeSentAt = undefined;
        this.lastMemory = memory;
        this.setUp("unresponsive");
        if (isFull(memory)) {
          this.setDown(
            "full",
            `Redis at ${this.opts.where} is full: used_memory ${formatBytes(memory.usedBytes)} of maxmemory ${formatBytes(memory.maxBytes)}; taking no new work until memory frees`,
          );
        } else this.setUp("full");
      },
      // Refused at once (connection closed, no offline queue) or failed: the next tick asks again.
      () => {
        if (probe === this.probes) this.probeSentAt = undefined;
      },
    );
  }

  private setDown(cause: LinkDownCause, detail: string): void {
    this.down.set(cause, detail);
    this.readiness.raise(REASON[cause], detail);
  }

  private setUp(cause: LinkDownCause): void {
    if (!this.down.delete(cause)) return;
    const reason = REASON[cause];
    // Another cause behind the same readiness reason keeps it raised, with its own detail.
    const other = [...this.down].find(([c]) => REASON[c] === reason);
    if (other) this.readiness.raise(reason, other[1]);
    else this.readiness.clear(reason);
    if (this.up) this.release();
  }

  private release(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
