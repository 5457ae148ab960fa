// A completed task's record is packed (lua/includes/packRecord.lua): status, attempt and one JSON
// field. These check that nothing a reader shows is lost, that the layout is what it claims, and that
// every script still reading a completed record (a resent create, a stale entry's start, a cancel, a
// late settle) behaves as with the fields it used to find.
import { createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { readTaskLog, TaskEventLog } from "../src/event-log.ts";
import { readFields, readRunning } from "../src/readers.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

const redis = testRedis();
const prefix = testPrefix("packed");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

/** A task run to its end: created with `over`, started by w1, one event published, then `finish`. */
async function ran(taskId: string, over: Parameters<typeof newTask>[1] = {}) {
  await store.create(
    newTask(taskId, { maxRetries: 2, timeoutMs: 5000, metadata: { user: 'ü "q"' }, priority: "high", detailed: true, inputPreview: 'ask "why" ü', ...over }),
  );
  await store.start(taskId, "w1");
  await new TaskEventLog(redis, keys, DEFAULT_RETENTION, taskId).append(1, "1:0", ['{"type":"text","delta":"hi"}']);
  return store.get(taskId);
}

describe("a completed task's packed record", () => {
  it("is status, attempt and one JSON field, and reads back as every field it had", async () => {
    const running = await ran("pk/a");
    await store.finish("pk/a", {
      attempt: 1,
      status: "COMPLETED",
      agent: "a",
      result: { text: "done", n: 1.5 },
      usage: { inputTokens: 2, outputTokens: 3, totalTokens: 5 },
    });
    expect(Object.keys(await redis.hgetall(keys.task("pk/a"))).sort()).toEqual(["attempt", "status", "z"]);
    expect(await redis.pttl(keys.task("pk/a"))).toBeGreaterThan(0);
    const done = await store.get("pk/a");
    // What it showed while it ran is all still there.
    expect(done).toMatchObject({ ...running, status: "COMPLETED", seq: 3 });
    expect(done).toMatchObject({
      taskId: "pk/a",
      queue: "pk",
      agent: "a",
      workerId: "w1",
      maxRetries: 2,
      timeoutMs: 5000,
      priority: "high",
      detailed: true,
      metadata: { user: 'ü "q"' },
      inputPreview: 'ask "why" ü',
      result: { text: "done", n: 1.5 },
      usage: { inputTokens: 2, outputTokens: 3, totalTokens: 5 },
    });
    // Left out of the packing and told again by the rest: the completed event's ts, less startedAt.
    expect(done!.completedAt).toBeGreaterThanOrEqual(done!.startedAt!);
    expect(done!.durationMs).toBe(done!.completedAt! - done!.startedAt!);
    expect(await readFields(redis, keys, "pk/a", ["payload", "entryId", "completedAt"])).toEqual([null, null, String(done!.completedAt)]);
    expect(await readRunning(redis, keys, "pk/a")).toEqual({ attempt: 1, agent: "a", detailed: true });
    expect((await store.getMany(["pk/a"]))[0]).toEqual(done);
  });

  it("replays its status events whole: type, task id and agent put back", async () => {
    await ran("pk/log", { agent: "writer" });
    await store.finish("pk/log", { attempt: 1, status: "COMPLETED", agent: "writer", result: "ok" });
    const log = await readTaskLog(redis, keys, "pk/log", 0, 10);
    expect(log.agent).toBe("writer");
    expect(JSON.parse(`[${log.statusLog}]`)).toMatchObject([
      { seq: 1, status: "running", attempt: 1, workerId: "w1" },
      { seq: 3, status: "completed", attempt: 1 },
    ]);
    expect(log.batches).toHaveLength(1);
  });

  it("a resent create of it is a resend (its submitId is in the packing); another create of its name a duplicate", async () => {
    await store.create(newTask("pk/sub", { submitId: "s-1" }));
    await store.start("pk/sub", "w1");
    await store.finish("pk/sub", { attempt: 1, status: "COMPLETED", agent: "a", result: 1 });
    const packed = await redis.hget(keys.task("pk/sub"), "z");
    expect(await store.createMany("pk", [newTask("pk/sub", { submitId: "s-1" })])).toMatchObject({ created: [true] });
    expect(await store.createMany("pk", [newTask("pk/sub", { submitId: "s-2" })])).toMatchObject({ created: [false] });
    // Neither wrote anything.
    expect(await redis.hget(keys.task("pk/sub"), "z")).toBe(packed);
    expect(await store.get("pk/sub")).toMatchObject({ status: "COMPLETED", result: 1 });
  });

  it("a stale entry's start skips it and a late outcome is refused: neither takes it for corrupt (a cancel: @flotilla/cancel's tests)", async () => {
    await ran("pk/late");
    await store.finish("pk/late", { attempt: 1, status: "COMPLETED", agent: "a", result: 7 });
    expect(await store.start("pk/late", "w2")).toMatchObject({ kind: "skip", reason: "terminal", status: "COMPLETED" });
    expect(await store.finish("pk/late", { attempt: 1, status: "FAILED", agent: "a", error: { message: "late", code: "X" } })).toEqual({
      ok: false,
      reason: "terminal",
      status: "COMPLETED",
    });
    // The same outcome again (a resend after a lost reply) is accepted and changes nothing.
    const packed = await redis.hget(keys.task("pk/late"), "z");
    expect(await store.finish("pk/late", { attempt: 1, status: "COMPLETED", agent: "a", result: 7 })).toMatchObject({ ok: true, status: "COMPLETED" });
    expect(await redis.hget(keys.task("pk/late"), "z")).toBe(packed);
    expect(await store.get("pk/late")).toMatchObject({ status: "COMPLETED", result: 7 });
  });

  it("FAILED and CANCELLED records are kept unpacked (a failed one may be re-queued: it needs its payload)", async () => {
    await ran("pk/failed", { payload: '{"input":"x"}' });
    await store.finish("pk/failed", { attempt: 1, status: "FAILED", agent: "a", error: { message: "no", code: "X" } });
    expect(await redis.hget(keys.task("pk/failed"), "z")).toBeNull();
    expect(await redis.hget(keys.task("pk/failed"), "payload")).toBe('{"input":"x"}');
  });
});
