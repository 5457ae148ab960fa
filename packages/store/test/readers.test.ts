// @cluster: queue stats and readers across slots
import { createKeys, DEFAULT_RETENTION, STATS_BUCKET_MS } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { listQueues, readAttempt, readCancelRequests, readRunning } from "../src/readers.ts";
import { readQueueStats } from "../src/stats.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

const redis = testRedis();
const prefix = testPrefix("readers");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const create = (taskId: string) => store.create(newTask(taskId, { maxRetries: 1 }));

describe("readQueueStats", () => {
  it("adds up the outcomes the scripts counted within the window", async () => {
    for (const [id, status] of [
      ["st/a", "COMPLETED"],
      ["st/b", "COMPLETED"],
      ["st/c", "FAILED"],
      ["st/d", "RETRYING"],
    ] as const) {
      await create(id);
      await store.start(id, "w");
      const failed = status !== "COMPLETED";
      await store.finish(id, {
        attempt: 1,
        status,
        agent: "a",
        ...(failed && { error: { message: "x", code: "AGENT_ERROR" } }),
        ...(status === "RETRYING" && { retryAt: 1 }),
      });
    }
    await create("st/e"); // waiting: counts nothing
    expect(await readQueueStats(redis, keys, "st", 60_000)).toMatchObject({ completed: 2, failed: 1, retried: 1, cancelled: 0 });
  });

  it("takes the wait p95 from the bucket bounds in the field names, within the window only", async () => {
    const now = 1_000 * STATS_BUCKET_MS; // a bucket boundary, far in the past: nothing else counts there
    await redis.hset(keys.stats("p95", now), { wait_le_100: 18, wait_le_2000: 2 });
    // Not wait buckets: a prefix before, a suffix after.
    await redis.hset(keys.stats("p95", now), { xwait_le_5000: 1000, wait_le_3000x: 1000 });
    await redis.hset(keys.stats("p95", now - 10 * STATS_BUCKET_MS), { wait_le_9000: 1000, completed: 7 }); // before the window
    const stats = await readQueueStats(redis, keys, "p95", 5 * STATS_BUCKET_MS, now);
    expect(stats).toEqual({ completed: 0, failed: 0, cancelled: 0, retried: 0, waitP95Ms: 2000 });
    await redis.hset(keys.stats("inf", now), { wait_le_10: 1, wait_le_inf: 99 });
    expect((await readQueueStats(redis, keys, "inf", STATS_BUCKET_MS, now)).waitP95Ms).toBe(Number.POSITIVE_INFINITY);
    expect((await readQueueStats(redis, keys, "empty", STATS_BUCKET_MS, now)).waitP95Ms).toBeUndefined();
  });

  it("reads the buckets of the window only: not the one before it, not the one after now", async () => {
    const B = STATS_BUCKET_MS;
    const now = 2_000 * B;
    await redis.hset(keys.stats("edge", now - 4 * B), { completed: 1 }); // the window's first bucket
    await redis.hset(keys.stats("edge", now), { completed: 10 }); // now's bucket
    await redis.hset(keys.stats("edge", now - 5 * B), { completed: 100 }); // just before the window
    await redis.hset(keys.stats("edge", now + B), { completed: 1000 }); // after now
    expect((await readQueueStats(redis, keys, "edge", 5 * B, now)).completed).toBe(11);
  });

  it("takes the p95 bucket in order of its bound, the first to reach 95 %, and none from zero samples", async () => {
    const now = 3_000 * STATS_BUCKET_MS;
    // Written highest bound first: the order the fields come back in must not matter.
    await redis.hset(keys.stats("order", now), { wait_le_2000: 10, wait_le_100: 90 });
    expect((await readQueueStats(redis, keys, "order", STATS_BUCKET_MS, now)).waitP95Ms).toBe(2000);
    await redis.hset(keys.stats("exact", now), { wait_le_100: 95, wait_le_200: 5 });
    expect((await readQueueStats(redis, keys, "exact", STATS_BUCKET_MS, now)).waitP95Ms).toBe(100);
    await redis.hset(keys.stats("zero", now), { wait_le_10: 0 });
    expect((await readQueueStats(redis, keys, "zero", STATS_BUCKET_MS, now)).waitP95Ms).toBeUndefined();
  });

  it("fails with the error Redis gave", async () => {
    const now = 4_000 * STATS_BUCKET_MS;
    await redis.set(keys.stats("str", now), "x");
    await expect(readQueueStats(redis, keys, "str", STATS_BUCKET_MS, now)).rejects.toThrow(/WRONGTYPE/);
  });
});

describe("readers", () => {
  it("read the attempt of a task, 0 when it never started or does not exist", async () => {
    await create("rd/a");
    expect(await readAttempt(redis, keys, "rd/a")).toBe(0);
    await store.start("rd/a", "w");
    expect(await readAttempt(redis, keys, "rd/a")).toBe(1);
    expect(await readAttempt(redis, keys, "rd/none")).toBe(0);
  });

  it("read the attempt, agent and detail of a task together, attempt 0 and nothing else when it does not exist", async () => {
    await create("rd/r");
    expect(await readRunning(redis, keys, "rd/r")).toEqual({ attempt: 0, agent: "a", detailed: false });
    await store.start("rd/r", "w");
    expect(await readRunning(redis, keys, "rd/r")).toEqual({ attempt: 1, agent: "a", detailed: false });
    await store.create(newTask("rd/d", { detailed: true }));
    expect(await readRunning(redis, keys, "rd/d")).toEqual({ attempt: 0, agent: "a", detailed: true });
    expect(await readRunning(redis, keys, "rd/none")).toEqual({ attempt: 0, agent: undefined, detailed: undefined });
  });

  it("read the cancel requests of the tasks that have one", async () => {
    await create("rd/c1");
    await create("rd/c2");
    await store.start("rd/c1", "w");
    await redis.hset(keys.task("rd/c1"), { cancelRequestedAt: 5, cancelReason: "stop" });
    await redis.hset(keys.task("rd/c2"), { cancelRequestedAt: 5 }); // no reason kept
    expect(await readCancelRequests(redis, keys, ["rd/c1", "rd/c2", "rd/a", "rd/none"])).toEqual(
      new Map([
        ["rd/c1", "stop"],
        ["rd/c2", "cancelled"],
      ]),
    );
    expect(await readCancelRequests(redis, keys, [])).toEqual(new Map());
    await redis.set(keys.task("rd/str"), "x");
    await expect(readCancelRequests(redis, keys, ["rd/c1", "rd/str"])).rejects.toThrow(/WRONGTYPE/);
  });

  it("list every registered queue once, sorted", async () => {
    // Registered in reverse order, more than a set keeps in insertion order.
    const names = Array.from({ length: 40 }, (_, i) => `q${String(i).padStart(2, "0")}`);
    for (const q of [...names].reverse()) await store.registerQueue(q);
    await store.registerQueue("q00");
    expect(await listQueues(redis, keys)).toEqual(names);
  });
});
