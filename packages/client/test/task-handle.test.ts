// @cluster: every way a wait for a result ends, on the task's sharded status channel
import { ErrorCodes, TaskCancelledError, TaskFailedError, TaskNotFoundError, WaitTimeoutError } from "@flotilla/core";
import { scripted, shardSubscribers, startRedisServer, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { FlotillaClient } from "../src/index.ts";
import { RECHECK_MS } from "../src/task-handle.ts";

// A TaskHandle on records and status messages written by hand: every way a wait for a result ends.
describe("TaskHandle", () => {
  const h = useFlotilla("task-handle");

  /** A waiting task with no worker: its record is PENDING until the test says otherwise. */
  async function waiting(queue: string) {
    const handle = await h.client().submit(scripted("x"), "in", { queue });
    return handle;
  }

  it("names its queue, and says when its task does not exist", async () => {
    const client = h.client();
    const handle = client.handle("some-queue/t1");
    expect(handle.queue).toBe("some-queue");
    await expect(handle.status()).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(handle.cancel()).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it("gives a COMPLETED task's result, and null for one with none", async () => {
    const handle = await waiting("th1");
    await h.redis.hset(h.keys.task(handle.taskId), "status", "COMPLETED");
    expect(await handle.result()).toBeNull();
    await h.redis.hset(h.keys.task(handle.taskId), "result", '{"text":"hi"}');
    expect(await handle.result()).toEqual({ text: "hi" });
  });

  it("throws a FAILED or CANCELLED record's error, or one named after its status when it kept none", async () => {
    const failed = await waiting("th2");
    await h.redis.hset(h.keys.task(failed.taskId), "status", "FAILED");
    const f = await failed.result().catch((err: unknown) => err);
    expect(f).toBeInstanceOf(TaskFailedError);
    expect(f).toMatchObject({ taskError: { message: "failed", code: "FAILED" } });
    const cancelled = await waiting("th2");
    await h.redis.hset(h.keys.task(cancelled.taskId), { status: "CANCELLED", error: '{"message":"stop","code":"CANCELLED"}' });
    const c = await cancelled.result().catch((err: unknown) => err);
    expect(c).toBeInstanceOf(TaskCancelledError);
    expect(c).toMatchObject({ taskError: { message: "stop", code: "CANCELLED" } });
  });

  it("ends a wait on the terminal status message, with its outcome, without reading the record again", async () => {
    const client = h.client();
    const results: unknown[] = [];
    for (const status of ["completed", "failed", "cancelled"]) {
      const handle = await client.submit(scripted("x"), "in", { queue: "th3" });
      const result = handle.result().catch((err: unknown) => err);
      await waitFor(async () => (await shardSubscribers(h.redis, h.keys.statusChannel("th3"))) === 1, { what: "the watch" });
      await new Promise((r) => setTimeout(r, 50));
      // The record stays PENDING: only the message tells the outcome.
      const event = {
        taskId: handle.taskId,
        seq: 9,
        attempt: 1,
        ts: 1,
        agent: "x",
        type: "status",
        status,
        ...(status === "completed" && { result: { n: 1 } }),
      };
      await h.redis.spublish(h.keys.statusChannel("th3"), JSON.stringify([event]));
      results.push(await result);
    }
    expect(results[0]).toEqual({ n: 1 });
    expect(results[1]).toBeInstanceOf(TaskFailedError);
    expect(results[1]).toMatchObject({ taskError: { message: "failed", code: "FAILED" } });
    expect(results[2]).toBeInstanceOf(TaskCancelledError);
    expect(results[2]).toMatchObject({ taskError: { message: "cancelled", code: "CANCELLED" } });
  });

  it("looks at the record again when a status message cannot be read", async () => {
    const handle = await waiting("th4");
    const result = handle.result({ timeoutMs: 10_000 });
    await waitFor(async () => (await shardSubscribers(h.redis, h.keys.statusChannel("th4"))) === 1, { what: "the watch" });
    await new Promise((r) => setTimeout(r, 50));
    // Finished with no message sent, then a garbled one: only a look at the record finds it done.
    await h.redis.hset(h.keys.task(handle.taskId), { status: "COMPLETED", result: "7" });
    await h.redis.spublish(h.keys.statusChannel("th4"), "garbled");
    expect(await result).toBe(7);
  });

  it("looks at the record again after a quiet while: an end whose message never came (no reconnect told of it) is still found", async () => {
    const handle = await waiting("th6");
    const result = handle.result({ timeoutMs: RECHECK_MS * 2 });
    await waitFor(async () => (await shardSubscribers(h.redis, h.keys.statusChannel("th6"))) === 1, { what: "the watch" });
    // Past its first look at the record (right after the watch is in place).
    await new Promise((r) => setTimeout(r, 300));
    // Finished with no message at all.
    await h.redis.hset(h.keys.task(handle.taskId), { status: "COMPLETED", result: "8" });
    expect(await result).toBe(8);
  }, 20_000);

  it("gives up after timeoutMs, and on an abort with the signal's reason, leaving no listener behind", async () => {
    const handle = await waiting("th5");
    const timedOut = await handle.result({ timeoutMs: 100 }).catch((err: unknown) => err);
    expect(timedOut).toBeInstanceOf(WaitTimeoutError);
    const early = AbortSignal.abort(new Error("not now"));
    await expect(handle.result({ signal: early })).rejects.toThrow("not now");
    const controller = new AbortController();
    const waitingResult = handle.result({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error("changed my mind")), 50);
    await expect(waitingResult).rejects.toThrow("changed my mind");
    expect(await shardSubscribers(h.redis, h.keys.statusChannel("th5"))).toBe(1); // the feed lingers, as designed
  });

  it("waits through Redis being down, and times out or aborts there too", async () => {
    const server = await startRedisServer({ aof: true }); // the task outlives the restart
    const client = new FlotillaClient({ redis: server.url, prefix: h.prefix });
    try {
      const handle = await client.submit(scripted("x"), "in", { queue: "down" });
      const result = handle.result({ timeoutMs: 30_000 });
      await new Promise((r) => setTimeout(r, 100));
      await server.down();
      await new Promise((r) => setTimeout(r, 600));
      // While it is down, a wait with a deadline ends at the deadline, and an abort ends it too.
      expect(await handle.result({ timeoutMs: 300 }).catch((err: unknown) => err)).toBeInstanceOf(WaitTimeoutError);
      const controller = new AbortController();
      const aborted = handle.result({ signal: controller.signal });
      setTimeout(() => controller.abort(new Error("enough")), 300);
      await expect(aborted).rejects.toThrow("enough");
      // A wait that starts while Redis is down, with time to spare, rides it out.
      const during = handle.result({ timeoutMs: 30_000 });
      await new Promise((r) => setTimeout(r, 600));
      await server.up();
      const redis = (await import("@flotilla/testing")).testRedis(server.url);
      await redis.hset(h.keys.task(handle.taskId), { status: "COMPLETED", result: '"back"' });
      await redis.quit();
      expect(await result).toBe("back");
      expect(await during).toBe("back");
    } finally {
      await client.close();
      await server.stop();
    }
  });

  it("refuses a task id that is not one", () => {
    expect(() => h.client().handle("no-slash")).toThrow(expect.objectContaining({ code: ErrorCodes.VALIDATION, field: "taskId" }));
  });
});
