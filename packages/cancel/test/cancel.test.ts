// @cluster: a running task's cancel announced on its slot's sharded channel
import { createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { openRedis, SubscriberHub } from "@flotilla/core/redis";
import { TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, shardSubscribers, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { CancelListener } from "../src/cancel-listener.ts";
import { requestCancel } from "../src/request-cancel.ts";

const redis = testRedis();
const prefix = testPrefix("cancel");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const hub = new SubscriberHub(openRedis(testConnection(), "subscriber"));
/** The status events a task's record keeps. */
const statusLog = async (taskId: string) => JSON.parse(`[${(await redis.hget(keys.task(taskId), "log")) ?? ""}]`) as Array<Record<string, unknown>>;
afterAll(async () => {
  await hub.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

let n = 0;
async function task() {
  const taskId = `q/c${++n}`;
  await store.create({ taskId, queue: "q", agent: "a", payload: "{}", createdAt: Date.now(), detailed: false, maxRetries: 0, metadata: {} });
  return taskId;
}

describe("cancel", () => {
  it("ends a waiting task at once, stored, with its terminal event; a later claim skips it", async () => {
    const id = await task();
    expect(await requestCancel(redis, keys, DEFAULT_RETENTION, id, "not needed")).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    expect(await store.get(id)).toMatchObject({ status: "CANCELLED", cancelReason: "not needed", error: { code: "CANCELLED" } });
    expect(await store.start(id, "w")).toMatchObject({ kind: "skip", reason: "terminal" });
    expect(await statusLog(id)).toMatchObject([{ seq: 1, status: "cancelled" }]);
    // Finished, so kept for the record's retention only (a waiting record has no TTL).
    const ttl = await redis.pttl(keys.task(id));
    expect(ttl).toBeGreaterThan(DEFAULT_RETENTION.recordTtlMs - 60_000);
    expect(ttl).toBeLessThanOrEqual(DEFAULT_RETENTION.recordTtlMs);
  });

  it("records a default reason when none is given", async () => {
    const id = await task();
    expect((await requestCancel(redis, keys, DEFAULT_RETENTION, id)).outcome).toBe("cancelled");
    expect(await store.get(id)).toMatchObject({ status: "CANCELLED", cancelReason: "cancelled by request" });
  });

  it("tells the worker running the task, through one shared subscription", async () => {
    const listener = new CancelListener(redis, hub, keys);
    await listener.start(["q"]);
    const id = await task();
    const other = await task();
    await store.start(id, "w");
    await store.start(other, "w");
    const heard: string[] = [];
    listener.watch(id, (reason) => heard.push(`${id}:${reason}`));
    listener.watch(other, (reason) => heard.push(`${other}:${reason}`));
    const got = new Promise<void>((resolve) => listener.watch(id, (reason) => resolve(void heard.push(`${id}:${reason}`))));
    expect(await requestCancel(redis, keys, DEFAULT_RETENTION, id, "user pressed stop")).toEqual({ outcome: "requested", status: "RUNNING" });
    await got;
    expect(heard).toEqual([`${id}:user pressed stop`]);
    // Stored too: a worker that missed the message finds it on recheck.
    const late: string[] = [];
    listener.watch(id, (r) => late.push(r));
    await listener.recheck();
    expect(late).toEqual(["user pressed stop"]);
    expect(await shardSubscribers(redis, keys.cancelChannel("q"))).toBe(1);
    await listener.stop();
  });

  it("remembers a request that arrives before the worker watches the task", async () => {
    const listener = new CancelListener(redis, hub, keys);
    await listener.start(["q"]);
    const id = await task();
    await store.start(id, "w");
    // The worker started the task in a batch and has not read the reply yet when the request comes.
    expect((await requestCancel(redis, keys, DEFAULT_RETENTION, id, "too quick")).outcome).toBe("requested");
    await waitFor(async () => (await listener.pendingRequests()) > 0, { what: "the request to arrive" });
    const heard: string[] = [];
    listener.watch(id, (reason) => heard.push(reason));
    expect(heard).toEqual(["too quick"]);
    await listener.stop();
  });

  it("ends a running task at once when its attempt would retry, instead of retrying it", async () => {
    const id = await task();
    await store.start(id, "w");
    expect((await requestCancel(redis, keys, DEFAULT_RETENTION, id, "stop after this attempt")).outcome).toBe("requested");
    // The attempt fails with retries left, before its worker heard the cancel:
    expect(await store.finish(id, { attempt: 1, status: "RETRYING", agent: "a", error: { message: "flaky", code: "AGENT_ERROR" }, retryAt: 1 })).toEqual({
      ok: true,
      status: "CANCELLED",
      deadLettered: false,
    });
    expect(await store.get(id)).toMatchObject({ status: "CANCELLED", attempt: 1, retries: 0, error: { message: "stop after this attempt" } });
    expect((await statusLog(id)).map((e) => e.status)).toEqual(["running", "cancelled"]);
  });

  it("ends a cancelled task whose worker died when another worker reclaims it, instead of running it", async () => {
    const id = await task();
    await store.start(id, "dead-worker");
    expect((await requestCancel(redis, keys, DEFAULT_RETENTION, id, "nobody heard me")).outcome).toBe("requested");
    expect(await store.start(id, "w2", { reclaimed: true })).toMatchObject({ kind: "skip", reason: "cancelled", status: "CANCELLED" });
    expect(await store.get(id)).toMatchObject({ status: "CANCELLED", attempt: 1, error: { message: "nobody heard me" } });
  });

  it("is a no-op on a finished task, and says so", async () => {
    const id = await task();
    await store.start(id, "w");
    await store.finish(id, { attempt: 1, status: "COMPLETED", agent: "a", result: 1 });
    expect(await requestCancel(redis, keys, DEFAULT_RETENTION, id)).toEqual({ outcome: "finished", status: "COMPLETED" });
    expect(await store.get(id)).toMatchObject({ status: "COMPLETED", result: 1 });
    expect((await store.get(id))?.cancelRequestedAt).toBeUndefined();
    expect(await requestCancel(redis, keys, DEFAULT_RETENTION, "q/ghost")).toEqual({ outcome: "missing", status: undefined });
  });
});

describe("cancel of a corrupt record", () => {
  const cases: Array<[string, (key: string) => Promise<unknown>, RegExp]> = [
    ["seq not a number", (key) => redis.hset(key, "seq", "x"), /seq is not a number/],
    ["taskId unsafe", (key) => redis.hset(key, "taskId", 'q/"x'), /taskId is not a task id/],
    ["garbage log", (key) => redis.hset(key, "log", "garbage"), /log is not a list of events/],
    ["unknown status", (key) => redis.hset(key, "status", "LIMBO"), /status is unknown/],
    ["key not a hash", (key) => redis.multi().del(key).set(key, "x").exec(), /not a hash/],
  ];
  for (const [what, spoil, reason] of cases) {
    it(`${what}: refused with CORRUPT_RECORD, nothing written`, async () => {
      const taskId = `q/corrupt${++n}`;
      await store.writeRaw(taskId);
      await spoil(keys.task(taskId));
      const before = (await redis.type(keys.task(taskId))) === "hash" ? await redis.hgetall(keys.task(taskId)) : await redis.get(keys.task(taskId));
      await expect(requestCancel(redis, keys, DEFAULT_RETENTION, taskId)).rejects.toMatchObject({ code: "CORRUPT_RECORD", message: reason });
      const after = (await redis.type(keys.task(taskId))) === "hash" ? await redis.hgetall(keys.task(taskId)) : await redis.get(keys.task(taskId));
      expect(after).toEqual(before);
    });
  }
});
