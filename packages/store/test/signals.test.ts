// WAITING tasks at the store's level: an attempt that stops to wait for a signal, the signal script
// that sends it back to its lane, a wait that times out, and a cancel that came first.
import { Broker } from "@flotilla/broker";
import { createKeys, DEFAULT_RETENTION, type WaitRequest } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { newTask, TestTaskStore } from "../src/testing.ts";

const redis = testRedis();
const prefix = testPrefix("store-signals");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const broker = new Broker(redis, keys);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const request: WaitRequest = { name: "approval", kind: "approval", toolCallId: "c1", tool: "send", args: { to: "x" }, onTimeout: "fail" };

/** A task of `queue` started (attempt 1) and stopped to wait for `approval`, with `timeoutMs` if given. */
async function waitingTask(queue: string, name: string, timeoutMs?: number) {
  await broker.ensureGroup(queue);
  const taskId = `${queue}/${name}`;
  await store.create(newTask(taskId));
  const [started] = await store.claim(queue, "w1", 1);
  expect(started).toMatchObject({ kind: "run", taskId, attempt: 1 });
  const entryId = started!.entryId;
  const { outcomes } = await store.settle(queue, "w1", [
    {
      taskId,
      priority: "normal",
      entryId,
      attempt: 1,
      status: "WAITING",
      agent: "a",
      waiting: { ...request, ...(timeoutMs !== undefined && { timeoutMs }) },
      resume: { at: "turn 1" },
      ...(timeoutMs !== undefined && { retryAt: Date.now() + timeoutMs }),
    },
  ]);
  return { taskId, outcome: outcomes[0] };
}

describe("WAITING and signals", () => {
  it("a WAITING task holds no entry; its signal re-queues it, and the next start carries its saved state and the signal", async () => {
    const { taskId, outcome } = await waitingTask("sg1", "t1");
    expect(outcome).toEqual({ ok: true, status: "WAITING", deadLettered: false });
    expect(await store.get(taskId)).toMatchObject({ status: "WAITING", waiting: request });
    expect(((await redis.xpending(keys.queue("sg1"), "flotilla")) as [number])[0]).toBe(0);
    expect(await store.claim("sg1", "w2", 5)).toEqual([]);

    expect(await store.signal(taskId, "other", "1")).toEqual({ outcome: "not-waiting", status: "WAITING", waitingFor: "approval" });
    expect(await store.signal(taskId, "approval", '{"approved":true}')).toEqual({ outcome: "ok", status: undefined, waitingFor: undefined });
    expect((await store.get(taskId))?.status).toBe("PENDING");
    expect(await store.signal(taskId, "approval", "true")).toMatchObject({ outcome: "not-waiting", status: "PENDING" });

    const [resumed] = await store.claim("sg1", "w2", 5);
    expect(resumed).toMatchObject({ kind: "run", taskId, attempt: 2 });
    if (resumed?.kind !== "run") throw new Error("not started");
    expect(JSON.parse(resumed.resume!)).toEqual({ at: "turn 1" });
    expect(JSON.parse(resumed.signal!)).toMatchObject({ name: "approval", payload: { approved: true } });
    // It ends: the saved state and the signal go with the wait.
    await store.finish(taskId, { attempt: 2, status: "COMPLETED", agent: "a", result: "done" });
    expect(await redis.hmget(keys.task(taskId), "resume", "signal", "waiting")).toEqual([null, null, null]);
  });

  it("a wait with a timeout comes back by itself when it is due, without a signal; a signal after that is refused", async () => {
    const { taskId } = await waitingTask("sg2", "t1", 50);
    expect((await store.get(taskId))?.waiting?.timeoutAt).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 80));
    await broker.promote("sg2");
    const [resumed] = await store.claim("sg2", "w2", 5);
    expect(resumed).toMatchObject({ kind: "run", taskId, attempt: 2, signal: undefined });
    await expect(store.signal(taskId, "approval", "true")).resolves.toMatchObject({ outcome: "not-waiting", status: "RUNNING" });
  });

  it("a signal before the timeout takes the entry out of the delayed set: the task runs once", async () => {
    const { taskId } = await waitingTask("sg3", "t1", 60_000);
    expect(await redis.zcard(keys.delayed("sg3", "normal"))).toBe(1);
    await store.signal(taskId, "approval", "true");
    expect(await redis.zcard(keys.delayed("sg3", "normal"))).toBe(0);
    expect(await store.claim("sg3", "w2", 5)).toMatchObject([{ kind: "run", taskId, attempt: 2 }]);
  });

  it("an attempt that stops to wait after its task's cancel was requested ends it CANCELLED", async () => {
    await broker.ensureGroup("sg4");
    const taskId = "sg4/t1";
    await store.create(newTask(taskId));
    const [started] = await store.claim("sg4", "w1", 1);
    await redis.hset(keys.task(taskId), { cancelRequestedAt: Date.now(), cancelReason: "stop" });
    const { outcomes } = await store.settle("sg4", "w1", [
      { taskId, priority: "normal", entryId: started!.entryId, attempt: 1, status: "WAITING", agent: "a", waiting: request, resume: {} },
    ]);
    expect(outcomes[0]).toMatchObject({ ok: true, status: "CANCELLED" });
    expect(await store.get(taskId)).toMatchObject({ status: "CANCELLED", error: { code: "CANCELLED", message: "stop" } });
  });
});
