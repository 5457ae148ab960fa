import { Agent } from "@flotilla/agent";
import { attributeKey, FlotillaMetrics, METRICS } from "@flotilla/metrics";
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";

// What a worker counts and times, read from the metrics' own snapshot (no SDK needed).
describe("a worker's metrics", () => {
  const h = useFlotilla("worker-metrics");

  it("counts each outcome by queue and agent, times each attempt by status, and the wait of first attempts only", async () => {
    const metrics = new FlotillaMetrics();
    await h.worker({
      queues: ["wm"],
      metrics,
      backoff: { delayMs: 5, jitter: 0 },
      executor: {
        async execute(ctx) {
          ctx.emit({ type: "text", delta: "a" });
          ctx.emit({ type: "text", delta: "b" });
          ctx.emit({ type: "custom", name: "n", data: 1 });
          if (ctx.input === "fail") throw new Error("no");
          return null;
        },
      },
    });
    const ok = new Agent({ name: "okay", model: "scripted:x" });
    const bad = new Agent({ name: "bad", model: "scripted:x" });
    for (const id of [await h.submit(ok, "x", { queue: "wm" }), await h.submit(ok, "y", { queue: "wm" })]) await h.until(id);
    await h.until(await h.submit(bad, "fail", { queue: "wm", maxRetries: 1 }));
    await waitFor(async () => metrics.total(METRICS.deadLettered) === 1, { what: "the dead letter to be counted" });

    expect(metrics.total(METRICS.completed, { queue: "wm", agent: "okay" })).toBe(2);
    expect(metrics.total(METRICS.retried, { queue: "wm", agent: "bad" })).toBe(1);
    expect(metrics.total(METRICS.failed, { queue: "wm", agent: "bad" })).toBe(1);
    expect(metrics.total(METRICS.cancelled)).toBe(0);
    expect(metrics.total(METRICS.deadLettered, { queue: "wm" })).toBe(1);
    // Every attempt publishes its text and custom events; the failed ones an error event too.
    expect(metrics.total(METRICS.eventsEmitted, { type: "text" })).toBe(4 * 2);
    expect(metrics.total(METRICS.eventsEmitted, { type: "custom" })).toBe(4);
    expect(metrics.total(METRICS.eventsEmitted, { type: "error" })).toBe(2);

    const { histograms } = metrics.snapshot();
    const count = (name: string, attrs: Record<string, string>) => histograms[name]?.[attributeKey(attrs)]?.count ?? 0;
    expect(count(METRICS.duration, { queue: "wm", agent: "okay", status: "COMPLETED" })).toBe(2);
    expect(count(METRICS.duration, { queue: "wm", agent: "bad", status: "RETRYING" })).toBe(1);
    expect(count(METRICS.duration, { queue: "wm", agent: "bad", status: "FAILED" })).toBe(1);
    // Three tasks waited before their first attempt; the retry is not a wait.
    expect(count(METRICS.waitTime, { queue: "wm", agent: "okay" })).toBe(2);
    expect(count(METRICS.waitTime, { queue: "wm", agent: "bad" })).toBe(1);
    expect(histograms[METRICS.publishDuration]?.[""]?.count).toBeGreaterThanOrEqual(4);
  });

  it("times runs and waits in seconds", async () => {
    const metrics = new FlotillaMetrics();
    // One slot and runs of at least 300 ms: the second task waits for the first to end.
    await h.worker({
      queues: ["ws"],
      metrics,
      concurrency: 1,
      executor: { execute: () => new Promise((resolve) => setTimeout(() => resolve(null), 300)) },
    });
    const agent = new Agent({ name: "sleepy", model: "scripted:x" });
    const ids = [await h.submit(agent, "a", { queue: "ws" }), await h.submit(agent, "b", { queue: "ws" })];
    for (const id of ids) await h.until(id);
    const { histograms } = metrics.snapshot();
    const runs = histograms[METRICS.duration]?.[attributeKey({ queue: "ws", agent: "sleepy", status: "COMPLETED" })];
    const waits = histograms[METRICS.waitTime]?.[attributeKey({ queue: "ws", agent: "sleepy" })];
    // Correctness bounds only: each run took 0.3 s or more, and far less than a minute (300 in ms).
    expect(runs).toMatchObject({ count: 2 });
    expect(runs!.min).toBeGreaterThanOrEqual(0.29);
    expect(runs!.max).toBeLessThan(60);
    expect(waits!.max).toBeGreaterThanOrEqual(0.25);
    expect(waits!.max).toBeLessThan(60);
  });

  it("gauges its queues' depth and pending entries and the live workers, on its gauge interval", async () => {
    const metrics = new FlotillaMetrics();
    let release: (() => void) | undefined;
    const w = await h.worker({
      queues: ["gq", "gr"],
      metrics,
      concurrency: 1,
      gaugeIntervalMs: 50,
      executor: {
        execute: () => new Promise((resolve) => (release = () => resolve(null))),
      },
    });
    const running = await h.submit(scripted("x"), "a", { queue: "gq" });
    await waitFor(async () => release !== undefined, { what: "the run to start" });
    await h.submit(scripted("x"), "b", { queue: "gq" });
    await h.submit(scripted("x"), "c", { queue: "gq", delayMs: 60_000 });
    const gauges = () => metrics.snapshot().gauges;
    await waitFor(async () => gauges()[METRICS.queueDepth]?.["queue=gq"] === 2, { what: "the depth gauge" });
    expect(gauges()[METRICS.queuePending]).toEqual({ "queue=gq": 1, "queue=gr": 0 });
    expect(gauges()[METRICS.queueDepth]).toEqual({ "queue=gq": 2, "queue=gr": 0 });
    expect(gauges()[METRICS.workersLive]?.[""]).toBe(1);
    // Redis's memory, as the worker's link last read it (INFO memory): the shared Redis sets no limit.
    const maxmemory = Number((await h.redis.config("GET", "maxmemory"))[1]);
    await waitFor(async () => gauges()[METRICS.redisMemoryUsed] !== undefined, { what: "the memory gauges" });
    expect(gauges()[METRICS.redisMemoryUsed]?.[""]).toBeGreaterThan(0);
    expect(gauges()[METRICS.redisMemoryMax]).toEqual({ "": maxmemory });
    release!();
    await h.until(running);
    // A stopped worker reports no figures any more (the second task, never released, is handed back).
    await w.stop({ drainTimeoutMs: 0 });
    expect(gauges()[METRICS.queueDepth]).toEqual({});
    expect(gauges()[METRICS.workersLive]).toBeUndefined();
    expect(gauges()[METRICS.redisMemoryUsed]).toBeUndefined();
  });
});
