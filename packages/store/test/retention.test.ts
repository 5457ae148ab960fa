import { createKeys, DEFAULT_RETENTION, resolveRetention } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { TaskEventLog } from "../src/event-log.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

// Retention of finished tasks: by age (each kind its own) and by count (the latest N of each kind per queue).
const redis = testRedis();
const prefix = testPrefix("retention");
const keys = createKeys(prefix);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const DAY = 86_400_000;

/** Runs a task to its end (with one event, so it has a stream); `now` is its end time (ms). */
async function end(store: TestTaskStore, taskId: string, status: "COMPLETED" | "FAILED" | "CANCELLED", now: number): Promise<void> {
  await store.create(newTask(taskId));
  await store.start(taskId, "w");
  await new TaskEventLog(redis, keys, DEFAULT_RETENTION, taskId).append(1, "1:0", ['{"type":"text","delta":"x"}']);
  const error = status === "FAILED" ? { code: "X", message: "x" } : undefined;
  await store.finish(taskId, { attempt: 1, status, agent: "a", ...(error && { error }) }, now);
}

const exists = async (taskId: string) => ({ record: await redis.exists(keys.task(taskId)), stream: await redis.exists(keys.events(taskId)) });

describe("retention of finished tasks", () => {
  it("keeps the latest `count` completed (or cancelled) tasks of a queue, records and streams, and deletes older ones as new ones end", async () => {
    const store = new TestTaskStore(redis, keys, resolveRetention({ keepCompleted: { count: 3 } }));
    const t0 = Date.now();
    const ids = ["a", "b", "c", "d", "e"].map((n) => `kc/${n}`);
    for (const [i, id] of ids.entries()) await end(store, id, i === 2 ? "CANCELLED" : "COMPLETED", t0 + i);
    for (const id of ids.slice(0, 2)) expect({ id, ...(await exists(id)) }).toEqual({ id, record: 0, stream: 0 });
    for (const id of ids.slice(2)) expect({ id, ...(await exists(id)) }).toEqual({ id, record: 1, stream: 1 });
    expect(await redis.zrange(keys.kept("kc", "completed"), "0", "-1")).toEqual(["c", "d", "e"]);
    // Gone from the index too, so listing does not find names without records.
    expect(await redis.zscore(keys.taskIndex("kc"), "a")).toBeNull();
    expect(await redis.zscore(keys.taskIndex("kc"), "e")).not.toBeNull();
  });

  it("counts failed tasks apart, by their own rule, and keeps them a week by default", async () => {
    const store = new TestTaskStore(redis, keys, resolveRetention({ keepCompleted: { count: 1 }, keepFailed: { count: 2 } }));
    const t0 = Date.now();
    await end(store, "kf/f1", "FAILED", t0);
    await end(store, "kf/c1", "COMPLETED", t0 + 1);
    await end(store, "kf/f2", "FAILED", t0 + 2);
    await end(store, "kf/c2", "COMPLETED", t0 + 3);
    await end(store, "kf/f3", "FAILED", t0 + 4);
    expect(await redis.zrange(keys.kept("kf", "failed"), "0", "-1")).toEqual(["f2", "f3"]);
    expect(await redis.zrange(keys.kept("kf", "completed"), "0", "-1")).toEqual(["c2"]);
    expect((await exists("kf/f1")).record).toBe(0);
    expect((await exists("kf/c1")).record).toBe(0);
    const failedTtl = await redis.pttl(keys.task("kf/f3"));
    expect(failedTtl).toBeGreaterThan(7 * DAY - 60_000);
    expect(failedTtl).toBeLessThanOrEqual(7 * DAY);
    const completedTtl = await redis.pttl(keys.task("kf/c2"));
    expect(completedTtl).toBeGreaterThan(DAY - 60_000);
    expect(completedTtl).toBeLessThanOrEqual(DAY);
  });

  it("deletes at most a few per settle when the count is lowered, and catches up over the next settles", async () => {
    const many = new TestTaskStore(redis, keys, resolveRetention({ keepCompleted: { count: 20 } }));
    const t0 = Date.now();
    for (let i = 0; i < 20; i++) await end(many, `kl/t${String(i).padStart(2, "0")}`, "COMPLETED", t0 + i);
    const few = new TestTaskStore(redis, keys, resolveRetention({ keepCompleted: { count: 5 } }));
    await end(few, "kl/t20", "COMPLETED", t0 + 20);
    // 21 in the set, 5 wanted: 4 go now.
    expect(await redis.zcard(keys.kept("kl", "completed"))).toBe(17);
    for (let i = 21; i < 25; i++) await end(few, `kl/t${i}`, "COMPLETED", t0 + i);
    expect(await redis.zcard(keys.kept("kl", "completed"))).toBe(5);
    expect(await redis.zrange(keys.kept("kl", "completed"), "0", "-1")).toEqual(["t20", "t21", "t22", "t23", "t24"]);
  });

  it("never deletes a task that runs again: a name in the set whose record is no longer finished is only dropped from it", async () => {
    const store = new TestTaskStore(redis, keys, resolveRetention({ keepCompleted: { count: 1 } }));
    const t0 = Date.now();
    await end(store, "kr/old", "COMPLETED", t0);
    // The same name running again (as a requeued task would): its record is RUNNING.
    await redis.hset(keys.task("kr/old"), "status", "RUNNING");
    await end(store, "kr/new", "COMPLETED", t0 + 1);
    expect((await exists("kr/old")).record).toBe(1);
    expect(await redis.zrange(keys.kept("kr", "completed"), "0", "-1")).toEqual(["new"]);
  });

  it("drops names whose records expired by age from the set, so it holds no dangling names", async () => {
    const store = new TestTaskStore(redis, keys, resolveRetention({ keepCompleted: { count: 10 } }));
    await end(store, "ka/old", "COMPLETED", Date.now() - 2 * DAY);
    await end(store, "ka/new", "COMPLETED", Date.now());
    expect(await redis.zrange(keys.kept("ka", "completed"), "0", "-1")).toEqual(["new"]);
  });

  it("without a count writes no set at all (no cost per task), and records expire by age", async () => {
    const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
    await end(store, "kn/a", "COMPLETED", Date.now());
    expect(await redis.exists(keys.kept("kn", "completed"))).toBe(0);
    expect(await redis.pttl(keys.task("kn/a"))).toBeGreaterThan(0);
  });
});
