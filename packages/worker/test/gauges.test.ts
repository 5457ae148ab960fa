// @cluster: gauges read every queue's depth across slots
import { TestBroker } from "@flotilla/broker/testing";
import { createKeys, type LogFields, type Logger } from "@flotilla/core";
import { Heartbeat } from "@flotilla/health";
import { FlotillaMetrics, METRICS } from "@flotilla/metrics";
import { purgePrefix, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { Gauges } from "../src/gauges.ts";

// The gauges on their own, against real Redis: what they hand the metrics, when they read, and that
// stop() really stops both the reads and the reporting.
const redis = testRedis();
const prefix = testPrefix("gauges");
const keys = createKeys(prefix);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

/** A broker that counts depth reads and can be made to fail them. */
class CountingBroker extends TestBroker {
  reads = 0;
  failing = false;
  override async depth(queue: string) {
    this.reads++;
    if (this.failing) throw new Error("depth unavailable");
    return super.depth(queue);
  }
}

function logger() {
  const lines: Array<{ level: string; fields: LogFields | undefined }> = [];
  const log = Object.fromEntries(
    (["debug", "info", "warn", "error"] as const).map((level) => [level, (_m: string, fields?: LogFields) => void lines.push({ level, fields })]),
  ) as unknown as Logger;
  return { log, lines };
}

const refTimers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

describe("Gauges", () => {
  it("report nothing before their first read, then each queue's waiting (delayed included) and held entries, and the live workers", async () => {
    const broker = new CountingBroker(redis, keys);
    await broker.ensureGroup("g-a");
    await broker.ensureGroup("g-b");
    await broker.enqueue("g-a", "one");
    await broker.enqueue("g-a", "two");
    await redis.zadd(keys.delayed("g-a", "normal"), Date.now() + 60_000, "three");
    const blocking = redis.duplicate();
    await broker.claim(blocking, "w1", ["g-a"], 1, 100);
    blocking.disconnect();
    const heartbeat = new Heartbeat(redis, keys, {
      workerId: "w1",
      queues: ["g-a"],
      concurrency: 1,
      ttlMs: 10_000,
      snapshot: () => ({ running: [], completed: 0, failed: 0 }),
    });
    await heartbeat.start();

    const metrics = new FlotillaMetrics();
    const gauges = new Gauges(redis, keys, broker, ["g-a", "g-b"], metrics, 10_000, logger().log);
    const before = refTimers();
    gauges.start(60_000);
    // The interval does not keep the process alive.
    expect(refTimers()).toBe(before);
    // Strict: a figure without a queue would show as a key holding undefined, which toEqual ignores.
    expect(metrics.snapshot().gauges).toStrictEqual({ [METRICS.queueDepth]: {}, [METRICS.queuePending]: {}, [METRICS.queueOldestWait]: {} });
    await waitFor(async () => metrics.snapshot().gauges[METRICS.workersLive] !== undefined, { what: "the first read" });
    expect(metrics.snapshot().gauges).toStrictEqual({
      [METRICS.queueDepth]: { "queue=g-a": 2, "queue=g-b": 0 },
      [METRICS.queuePending]: { "queue=g-a": 1, "queue=g-b": 0 },
      // g-a's waiting entry has waited since it was added (seconds); g-b has none.
      [METRICS.queueOldestWait]: { "queue=g-a": expect.any(Number), "queue=g-b": 0 },
      [METRICS.workersLive]: { "": 1 },
    });
    gauges.stop();
    await heartbeat.stop();
  });

  it("read again on every interval until stopped; stopped, they neither read nor report, and stop twice is harmless", async () => {
    const broker = new CountingBroker(redis, keys);
    await broker.ensureGroup("g-c");
    const metrics = new FlotillaMetrics();
    const gauges = new Gauges(redis, keys, broker, ["g-c"], metrics, 10_000, logger().log);
    gauges.start(20);
    await waitFor(async () => broker.reads >= 3, { what: "three reads" });
    expect(metrics.snapshot().gauges[METRICS.queueDepth]).toEqual({ "queue=g-c": 0 });
    gauges.stop();
    gauges.stop();
    const reads = broker.reads;
    await new Promise((r) => setTimeout(r, 100));
    expect(broker.reads).toBe(reads);
    expect(metrics.snapshot().gauges).toEqual({ [METRICS.queueDepth]: {}, [METRICS.queuePending]: {}, [METRICS.queueOldestWait]: {} });
  });

  it("keep the last figures when a read fails, and log why at debug level", async () => {
    const broker = new CountingBroker(redis, keys);
    await broker.ensureGroup("g-d");
    await broker.enqueue("g-d", "one");
    const metrics = new FlotillaMetrics();
    const { log, lines } = logger();
    const gauges = new Gauges(redis, keys, broker, ["g-d"], metrics, 10_000, log);
    gauges.start(20);
    await waitFor(async () => metrics.snapshot().gauges[METRICS.queueDepth]?.["queue=g-d"] === 1, { what: "the first read" });
    broker.failing = true;
    await waitFor(async () => lines.length >= 2, { what: "two failed reads" });
    expect(metrics.snapshot().gauges[METRICS.queueDepth]).toEqual({ "queue=g-d": 1 });
    gauges.stop();
    expect(lines[0]).toEqual({ level: "debug", fields: { err: expect.objectContaining({ message: "depth unavailable" }) } });
  });

  it("can be stopped before they were started", () => {
    const gauges = new Gauges(redis, keys, new CountingBroker(redis, keys), ["g-e"], new FlotillaMetrics(), 10_000, logger().log);
    expect(() => gauges.stop()).not.toThrow();
  });
});
