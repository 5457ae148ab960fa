import { ErrorCodes } from "@flotilla/core";
import { attributeKey, defaultMetrics, FlotillaMetrics, METRICS } from "@flotilla/metrics";
import { waitFor } from "@flotilla/testing";
import { describe, expect, it } from "vitest";
import { Bus, busWorker, subscribe } from "../src/index.ts";
import { useBus } from "./helpers.ts";

const t = useBus("bus-retention");

describe("bounded topics", () => {
  it("publishing trims a topic toward maxLen but never past an event a subscription has not settled; deleting the subscription lets it go", async () => {
    const small = new Bus({ redis: t.env.connection, prefix: t.env.prefix, maxLen: 100 });
    try {
      // A group made at the start that reads nothing: every event stays unsettled for it.
      await t.env.redis.xgroup("CREATE", t.env.keys.topic("capped"), "laggard", "0", "MKSTREAM");
      for (let i = 0; i < 5; i++) await small.publishMany(Array.from({ length: 100 }, (_, k) => ({ topic: "capped", payload: { n: i * 100 + k } })));
      expect(await t.env.redis.xlen(t.env.keys.topic("capped"))).toBe(500);
      // The laggard reads and settles the first 300: trimming may now drop those, and only those.
      const read = (await t.env.redis.xreadgroup("GROUP", "laggard", "c", "COUNT", 300, "STREAMS", t.env.keys.topic("capped"), ">")) as unknown as Array<
        [string, Array<[string]>]
      >;
      const ids = read[0]![1].map(([id]) => id);
      await t.env.redis.xack(t.env.keys.topic("capped"), "laggard", ...ids);
      // Held back once, a trim is not tried again for a second (the hint): let the next publish try now.
      await t.env.redis.del(`${t.env.keys.topicBase("capped")}trimhint`);
      await small.publishMany(Array.from({ length: 100 }, (_, k) => ({ topic: "capped", payload: { n: 500 + k } })));
      const left = await t.env.redis.xlen(t.env.keys.topic("capped"));
      expect(left).toBeGreaterThanOrEqual(300);
      expect(left).toBeLessThan(600);
      // Unsettled entries (after the 300th) are all still there.
      const after = (await t.env.redis.xrange(t.env.keys.topic("capped"), `(${ids[299]}`, "+")) as unknown[];
      expect(after).toHaveLength(300);
      // Deleting the subscription: nothing holds the stream back any more.
      expect(await small.deleteSubscription("capped", "laggard")).toBe(true);
      expect(await small.deleteSubscription("capped", "laggard")).toBe(false);
      await t.env.redis.del(`${t.env.keys.topicBase("capped")}trimhint`);
      await small.publishMany(Array.from({ length: 20 }, (_, k) => ({ topic: "capped", payload: { n: 600 + k } })));
      expect(await t.env.redis.xlen(t.env.keys.topic("capped"))).toBeLessThanOrEqual(200);
    } finally {
      await small.close();
    }
  });

  it("counts per topic and subscription reach OpenTelemetry instruments; notable deliveries go to the capped metrics stream", async () => {
    const metrics = new FlotillaMetrics();
    await t.env.worker({
      metrics,
      bus: busWorker({
        webhooks: false,
        subscriptions: [
          subscribe(
            "observed",
            (event) => {
              if ((event.payload as { n: number }).n === 0) throw new Error("no");
              return null;
            },
            { name: "obs", maxRetries: 1, backoff: { delayMs: 20, maxDelayMs: 20, jitter: 0 } },
          ),
        ],
      }),
    });
    await t.bus.publishMany([0, 1, 2].map((n) => ({ topic: "observed", payload: { n } })));
    await waitFor(async () => (await t.bus.deadLetters.list("observed", "obs")).length === 1, { timeoutMs: 10_000 });
    const attrs = { topic: "observed", group: "obs" };
    await waitFor(() => metrics.total(METRICS.busAcked, attrs) === 2);
    expect(metrics.total(METRICS.busDelivered, attrs)).toBe(4);
    expect(metrics.total(METRICS.busRetried, attrs)).toBe(1);
    // The retry was taken by the reclaim script too, but from the retries, not from a lapsed holder: no takeover.
    expect(metrics.total(METRICS.busReclaimed, attrs)).toBe(0);
    // Published by the test's Bus, on the shared default metrics.
    expect(defaultMetrics().total(METRICS.busPublished, { topic: "observed" })).toBeGreaterThanOrEqual(3);
    expect(metrics.total(METRICS.busDeadLettered, attrs)).toBe(1);
    const [stats] = await t.bus.stats("observed");
    expect(stats).toMatchObject({
      topic: "observed",
      length: 3,
      published: 3,
      groups: [{ name: "obs", counts: { delivered: 4, acked: 2, retried: 1, dead: 1 } }],
    });
    const notable = (await t.env.redis.xrange(t.env.keys.topicMetrics("observed"), "-", "+")) as Array<[string, string[]]>;
    expect(notable.map(([, f]) => f[1])).toEqual(["retried", "dead"]);
  });

  it("the lag and pending gauges show a subscription's backlog from its worker's start (unread events, in-flight deliveries) and follow it down to 0", async () => {
    const stream = t.env.keys.topic("backlogged");
    await t.env.redis.xgroup("CREATE", stream, "g", "0", "MKSTREAM");
    await t.bus.publishMany(Array.from({ length: 5 }, (_, n) => ({ topic: "backlogged", payload: { n } })));
    // Two in flight at a consumer that then dies (taken over after the lease), three not yet read.
    await t.env.redis.xreadgroup("GROUP", "g", "gone", "COUNT", 2, "STREAMS", stream, ">");
    const metrics = new FlotillaMetrics();
    await t.env.worker({
      metrics,
      bus: busWorker({ webhooks: false, subscriptions: [subscribe("backlogged", t.counting("handled"), { name: "g", reclaimAfterMs: 500 })] }),
    });
    const key = attributeKey({ topic: "backlogged", group: "g" });
    const gauges = () => {
      const { gauges: g } = metrics.snapshot();
      return { lag: g[METRICS.busLag]?.[key], pending: g[METRICS.busPending]?.[key] };
    };
    // As read when the worker started, before its consumer read anything.
    expect(gauges()).toEqual({ lag: 3, pending: 2 });
    await waitFor(async () => Object.keys(await t.counts("handled")).length === 5, { timeoutMs: 10_000 });
    // Read again by the upkeep (every 10 s).
    await waitFor(() => gauges().lag === 0 && gauges().pending === 0, { timeoutMs: 25_000 });
  }, 45_000);

  it("bad names and limits are typed errors", async () => {
    expect(() => subscribe("bad topic", () => null, { name: "x" })).toThrow(expect.objectContaining({ code: ErrorCodes.VALIDATION }));
    expect(() => subscribe("t", () => null, { name: "x", from: "yesterday" })).toThrow(expect.objectContaining({ code: ErrorCodes.VALIDATION }));
    await expect(t.bus.inspect("t", { limit: 0 })).rejects.toMatchObject({ code: ErrorCodes.VALIDATION });
  });
});
