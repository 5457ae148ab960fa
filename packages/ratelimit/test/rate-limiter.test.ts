// @cluster: three limiters on three connections share one bucket and its pause channel
import { createKeys, ErrorCodes } from "@flotilla/core";
import { openRedis, SubscriberHub } from "@flotilla/core/redis";
import { purgePrefix, shardSubscribers, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { RedisRateLimiter, resolveRateLimit } from "../src/index.ts";

// Three limiters on three connections stand for three workers sharing one limit.
const prefix = testPrefix("ratelimit");
const keys = createKeys(prefix);
const connections = [testRedis(), testRedis(), testRedis()];
afterAll(async () => {
  await purgePrefix(connections[0]!, prefix);
  await Promise.all(connections.map((c) => c.quit()));
});
const never = new AbortController().signal;
const fleet = (limit: Parameters<typeof resolveRateLimit>[0]) => connections.map((c) => new RedisRateLimiter(c, keys, [limit]));

/** When each of `n` acquires (spread over the fleet, all at once) was granted, ms after the first. */
async function grantTimes(limiters: RedisRateLimiter[], name: string, n: number, cost: { requests?: number; tokens?: number } = {}) {
  const start = performance.now();
  const times = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      await limiters[i % limiters.length]!.acquire(name, cost, never);
      return performance.now() - start;
    }),
  );
  return times.sort((a, b) => a - b);
}

describe("RedisRateLimiter", () => {
  it("across 3 limiters, grants one burst at once and the rest at the rate, never faster", async () => {
    // 600 a minute: 10 a second, a burst of 10.
    const times = await grantTimes(fleet({ name: "fast", requestsPerMinute: 600 }), "fast", 30);
    // The k-th grant (from 0) comes no sooner than (k - burst + 1) / rate, give or take the clocks' 20 ms.
    times.forEach((t, k) => {
      expect(t).toBeGreaterThanOrEqual(Math.max(0, (k - 9) * 100) - 20);
    });
    expect(times[9]).toBeLessThan(500);
    // ...and no later than its turn (loaded machine: generous).
    expect(times[29]).toBeLessThan(2000 + 1500);
  });

  it("spaces calls by their tokens; a call that used more than its estimate delays the next", async () => {
    const [a] = fleet({ name: "tokens", tokensPerMinute: 60_000, tokenBurst: 1000 }); // 1 token per ms
    await a!.acquire("tokens", { tokens: 1000 }, never);
    // It used 500 more than estimated: the bucket owes them too.
    await a!.account("tokens", 500);
    const start = performance.now();
    await a!.acquire("tokens", { tokens: 100 }, never);
    expect(performance.now() - start).toBeGreaterThanOrEqual(550);
  });

  it("a pause (a provider's Retry-After) holds every limiter of the fleet until it ends", async () => {
    const limiters = fleet({ name: "paused", requestsPerMinute: 60_000 });
    await limiters[0]!.pause("paused", 600);
    const times = await grantTimes(limiters, "paused", 6);
    expect(times[0]).toBeGreaterThanOrEqual(550);
  });

  it("holds a request granted before a pause: heard on the limit's channel, or else asked of Redis", async () => {
    const limit = { name: "told", requestsPerMinute: 60_000 };
    const hub = new SubscriberHub(openRedis(testConnection(), "subscriber"));
    // The test listens on a connection of its own: the limiter's subscription is then a second subscriber.
    const listener = new SubscriberHub(openRedis(testConnection(), "subscriber"));
    const announced: number[] = [];
    const channel = keys.rateLimitPaused("told");
    const unsubscribe = await listener.subscribe(channel, (message) => announced.push(Number(message)));
    try {
      const [pauser, asking] = fleet(limit);
      const hearing = new RedisRateLimiter(connections[2]!, keys, [limit], { hub });
      // Granted at once; acquiring subscribes the limit's pause channel.
      await Promise.all([hearing.acquire("told", {}, never), asking!.acquire("told", {}, never)]);
      await waitFor(async () => (await shardSubscribers(connections[0]!, channel)) === 2, { what: "the limiter's pause channel to be live" });
      // The grants are in hand and not sent yet; another worker's provider answers 429. This process
      // is busy meanwhile: the announcement waits unread on its socket when the check begins.
      for (const limiter of [hearing, asking!]) {
        await pauser!.pause("told", 600);
        const busyUntil = performance.now() + 30;
        while (performance.now() < busyUntil) {}
        const start = performance.now();
        await limiter.waitOutPause("told", never);
        expect(performance.now() - start).toBeGreaterThanOrEqual(500);
      }
      // Each pause announced once, with what it had left; a shorter one than the pause in force announces nothing.
      await pauser!.pause("told", 600);
      await pauser!.pause("told", 100);
      await waitFor(() => announced.length >= 3, { what: "the announcements" });
      await pauser!.pause("told", 0);
      expect(announced).toHaveLength(3);
      for (const ms of announced) {
        expect(ms).toBeGreaterThan(500);
        expect(ms).toBeLessThanOrEqual(600);
      }
      await hearing.waitOutPause("told", never);
      // With no pause in force, nothing is held.
      const free = performance.now();
      await Promise.all([hearing.waitOutPause("told", never), asking!.waitOutPause("told", never)]);
      expect(performance.now() - free).toBeLessThan(400);
      await hearing.close();
      await waitFor(async () => (await shardSubscribers(connections[0]!, channel)) === 1, { what: "the limiter's subscription to end" });
    } finally {
      await unsubscribe();
      await Promise.all([hub.close(), listener.close()]);
    }
  });

  it("names an unknown limit (not retryable), stops at an abort, and leaves no key once full again", async () => {
    const [a] = fleet({ name: "known", requestsPerMinute: 60_000 });
    await expect(a!.acquire("unknown", {}, never)).rejects.toMatchObject({ code: ErrorCodes.UNKNOWN_RATE_LIMIT, retryable: false });
    await a!.acquire("known", {}, never);
    const ttl = await connections[0]!.pttl(keys.rateLimit("known"));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1100);
    const aborted = AbortSignal.abort(new Error("stop"));
    await expect(a!.acquire("known", {}, aborted)).rejects.toThrow("stop");
  });

  it("refuses a limit with neither rate, naming the field", () => {
    expect(() => resolveRateLimit({ name: "none" })).toThrow(/requestsPerMinute/);
    expect(resolveRateLimit({ name: "r", requestsPerMinute: 30 })).toMatchObject({ requestBurst: 1, tokensPerMinute: 0 });
  });
});
