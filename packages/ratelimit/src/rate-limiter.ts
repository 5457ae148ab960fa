import { ErrorCodes, FlotillaError, type Keys, type RateLimiter, sleep, WaitForSignal } from "@flotilla/core";
import type { SubscriberHub, Unsubscribe } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import { type RateLimitOptions, type ResolvedRateLimit, resolveRateLimit } from "./options.ts";
import { scripts } from "./scripts.ts";

/** A poll of the sockets this recent (ms) counts as fresh: what arrived before it has been read. */
const FRESH_POLL_MS = 5;
/** Loop turns taken at most to find a fresh poll (a process busy for that long sends late anyway). */
const MAX_TURNS = 3;
const immediate = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Resolves once the event loop has polled its sockets at most FRESH_POLL_MS ago: a pause announced
 * while this process was busy (or not scheduled, on a loaded host) sits unread on the subscriber's
 * socket until a poll, and the work that led to the check began before it. Between two immediates
 * the loop turns once, polling; a turn that took longer (the process was busy) may have polled
 * before the announcement came, so it turns again. Microseconds on an idle loop.
 */
const readWhatArrived = async (): Promise<void> => {
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    await immediate();
    const from = performance.now();
    await immediate();
    if (performance.now() - from <= FRESH_POLL_MS) return;
  }
};

/** The longest wait taken in one grant: a longer one is asked for again after this (the limit may change meanwhile). */
const MAX_GRANTED_WAIT_MS = 10_000;

export interface RedisRateLimiterOptions {
  /**
   * Where the limits' pause announcements are heard: a pause made anywhere in the fleet then holds
   * this limiter's granted requests at once, with no round trip before each one (waitOutPause).
   * @default none: waitOutPause asks Redis
   */
  hub?: SubscriberHub | undefined;
}

/**
 * Fleet-wide rate limits on Redis token buckets, one hash per limit (its own slot): every worker
 * that draws on a limit shares its buckets, so the fleet as a whole stays within it. Grants go in
 * arrival order (see acquire-1.lua); a provider's Retry-After pauses the limit for everyone, and the
 * pause is announced on the limit's channel, so requests granted before it and not yet sent wait too.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private readonly keys: Keys;
  private readonly limits: ReadonlyMap<string, ResolvedRateLimit>;
  private readonly hub: SubscriberHub | undefined;
  /** Each limit's pause channel, subscribed on first use; resolved once live. */
  private readonly listening = new Map<string, Promise<Unsubscribe>>();
  /** Limits whose pause channel is live: their pauses are known here as they are made. */
  private readonly heard = new Set<string>();
  /** When each limit's pause ends, as heard (this process's clock, ms). */
  private readonly pausedUntil = new Map<string, number>();

  constructor(redis: Redis, keys: Keys, limits: readonly RateLimitOptions[], options: RedisRateLimiterOptions = {}) {
    this.redis = redis;
    this.keys = keys;
    this.limits = new Map(limits.map((l) => resolveRateLimit(l)).map((l) => [l.name, l]));
    this.hub = options.hub;
    for (const s of Object.values(scripts)) s.install(redis);
  }

  /** The limits configured here, by name. */
  get names(): string[] {
    return [...this.limits.keys()];
  }

  async acquire(name: string, cost: { requests?: number; tokens?: number }, signal: AbortSignal): Promise<void> {
    const limit = this.limit(name);
    this.listen(name);
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
        await this.waitOutPause(name, signal);
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
    const limit = this.limit(name);
    // This process's own requests hold at once, before Redis has it.
    this.heardPause(name, ms);
    await scripts.pause.run(this.redis, [this.keys.rateLimit(name)], [...this.args(limit), Math.max(0, Math.ceil(ms)), this.channel(name)]);
  }

  /**
   * Holds a granted request while a pause is in force: as heard on the limit's channel when it is
   * live (no round trip: the check is as fresh as the moment the request leaves), else as Redis says.
   */
  async waitOutPause(name: string, signal: AbortSignal): Promise<void> {
    const limit = this.limit(name);
    if (!this.heard.has(name)) {
      const paused = await this.pausedFor(limit);
      if (paused > 0) await sleep(paused, signal);
      return;
    }
    await readWhatArrived();
    // A pause lengthened while this one was waited out holds it longer.
    for (let left = this.pauseLeft(name); left > 0; left = this.pauseLeft(name)) await sleep(left, signal);
  }

  /** Stops hearing the limits' pauses (the hub itself is its owner's to close). */
  async close(): Promise<void> {
    const listening = [...this.listening.values()];
    this.listening.clear();
    this.heard.clear();
    for (const unsubscribe of listening) await unsubscribe.then((u) => u()).catch(() => {});
  }

  /** Subscribes the limit's pause channel, once; until it is live, waitOutPause asks Redis. */
  private listen(name: string): void {
    if (!this.hub || this.listening.has(name)) return;
    const subscribed = this.hub.subscribe(this.channel(name), (message) => this.heardPause(name, Number(message)));
    this.listening.set(name, subscribed);
    subscribed.then(
      () => this.listening.has(name) && this.heard.add(name),
      // Not live (Redis out of reach): the next acquire tries again; meanwhile Redis is asked.
      () => this.listening.delete(name),
    );
  }

  private heardPause(name: string, ms: number): void {
    if (!(ms > 0)) return;
    this.pausedUntil.set(name, Math.max(this.pausedUntil.get(name) ?? 0, Date.now() + ms));
  }

  private pauseLeft(name: string): number {
    const left = (this.pausedUntil.get(name) ?? 0) - Date.now();
    if (left <= 0) this.pausedUntil.delete(name);
    return left;
  }

  /** How long the pause in force on a limit has left (ms). */
  private async pausedFor(limit: ResolvedRateLimit): Promise<number> {
    return (await scripts.pause.run(this.redis, [this.keys.rateLimit(limit.name)], [...this.args(limit), 0, ""])) as number;
  }

  private channel(name: string): string {
    return this.keys.rateLimitPaused(name);
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
