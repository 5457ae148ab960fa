import { ErrorCodes, FlotillaError, type Keys, type RateLimiter, sleep, WaitForSignal } from "@flotilla/core";
import type { Redis } from "ioredis";
import { type RateLimitOptions, type ResolvedRateLimit, resolveRateLimit } from "./options.ts";
import { scripts } from "./scripts.ts";

/** The longest wait taken in one grant: a longer one is asked for again after this (the limit may change meanwhile). */
const MAX_GRANTED_WAIT_MS = 10_000;

/**
 * Fleet-wide rate limits on Redis token buckets, one hash per limit (its own slot): every worker
 * that draws on a limit shares its buckets, so the fleet as a whole stays within it. Grants go in
 * arrival order (see acquire-1.lua); a provider's Retry-After pauses the limit for everyone.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private readonly keys: Keys;
  private readonly limits: ReadonlyMap<string, ResolvedRateLimit>;

  constructor(redis: Redis, keys: Keys, limits: readonly RateLimitOptions[]) {
    this.redis = redis;
    this.keys = keys;
    this.limits = new Map(limits.map((l) => resolveRateLimit(l)).map((l) => [l.name, l]));
    for (const s of Object.values(scripts)) s.install(redis);
  }

  /** The limits configured here, by name. */
  get names(): string[] {
    return [...this.limits.keys()];
  }

  async acquire(name: string, cost: { requests?: number; tokens?: number }, signal: AbortSignal): Promise<void> {
    const limit = this.limit(name);
    const release = limit.releaseSlotAfterMs;
    const longestWait = release === undefined ? MAX_GRANTED_WAIT_MS : Math.min(release, MAX_GRANTED_WAIT_MS);
    for (;;) {
      signal.throwIfAborted();
      const [granted, wait] = (await scripts.acquire.run(
        this.redis,
        [this.keys.rateLimit(name)],
        [...this.args(limit), cost.requests ?? 1, Math.max(0, Math.ceil(cost.tokens ?? 0)), longestWait],
      )) as [number, number];
      if (granted === 1) {
        if (wait === 0) return;
        await sleep(wait, signal);
        // Granted ahead of time: a pause that came meanwhile (a 429 to another worker) holds it too.
        const paused = await this.pausedFor(limit);
        if (paused > 0) await sleep(paused, signal);
        return;
      }
      // Nothing was taken: the task waits off the worker, and asks again when the limit may grant.
      if (release !== undefined && wait > release)
        throw new WaitForSignal(`rate-limit:${name}`, "rate-limit", { timeoutMs: Math.max(1, Math.ceil(wait)), onTimeout: "continue" });
      await sleep(MAX_GRANTED_WAIT_MS, signal);
    }
  }

  async account(name: string, tokens: number): Promise<void> {
    const limit = this.limit(name);
    if (limit.tokensPerMinute === 0 || tokens === 0) return;
    await scripts.account.run(this.redis, [this.keys.rateLimit(name)], [...this.args(limit), Math.round(tokens)]);
  }

  async pause(name: string, ms: number): Promise<void> {
    await scripts.pause.run(this.redis, [this.keys.rateLimit(name)], [...this.args(this.limit(name)), Math.max(0, Math.ceil(ms))]);
  }

  /** How long the pause in force on a limit has left (ms). */
  private async pausedFor(limit: ResolvedRateLimit): Promise<number> {
    return (await scripts.pause.run(this.redis, [this.keys.rateLimit(limit.name)], [...this.args(limit), 0])) as number;
  }

  private limit(name: string): ResolvedRateLimit {
    const limit = this.limits.get(name);
    if (!limit) {
      throw new FlotillaError(
        ErrorCodes.UNKNOWN_RATE_LIMIT,
        `rate limit "${name}" is not configured on this worker (it has: ${this.names.join(", ") || "none"})`,
        {
          retryable: false,
        },
      );
    }
    return limit;
  }

  /** ARGV[1..5] of every script: now (Redis's clock) and the limit. */
  private args(l: ResolvedRateLimit): Array<string | number> {
    return ["", l.requestsPerMinute, l.tokensPerMinute, l.requestBurst, l.tokenBurst];
  }
}
