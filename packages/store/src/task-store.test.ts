import { createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { cleanupPrefix, testPrefix, testRedis } from "@flotilla/tooling/test-utils";
import { afterAll, describe, expect, it } from "vitest";
import { type NewTask, TaskStore } from "./task-store.ts";

const redis = testRedis();
const prefix = testPrefix("store");
const keys = createKeys(prefix);
const store = new TaskStore(redis, keys, DEFAULT_RETENTION);
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  await redis.quit();
});

let n = 0;
const task = (over: Partial<NewTask> = {}): NewTask => ({
  taskId: `t${++n}`,
  queue: "q",
  agent: "a",
  payload: "{}",
  createdAt: Date.now() + n,
  detailed: false,
  maxRetries: 0,
  metadata: {},
  ...over,
});

describe("TaskStore", () => {
  it("creates PENDING records and refuses a taken id", async () => {
    const t = task();
    expect(await store.create(t)).toBe(true);
    expect(await store.create(t)).toBe(false);
    expect(await store.get(t.taskId)).toMatchObject({ status: "PENDING", attempt: 0, queue: "q" });
    expect(await redis.pttl(keys.task(t.taskId))).toBeGreaterThan(0);
  });

  it("never lets a late writer overwrite a terminal status or resurrect the task", async () => {
    const t = task();
    await store.create(t);
    const start = await store.start(t.taskId, "w1");
    expect(start).toMatchObject({ kind: "run", attempt: 1 });
    expect(await store.finish(t.taskId, { attempt: 1, status: "COMPLETED", agent: "a", result: 42 })).toEqual({
      ok: true,
      status: "COMPLETED",
    });
    // The same worker, a second time, with another outcome:
    expect(await store.finish(t.taskId, { attempt: 1, status: "FAILED", agent: "a", error: { message: "late", code: "X" } })).toEqual({
      ok: false,
      reason: "terminal",
      status: "COMPLETED",
    });
    // Another worker claiming it again:
    expect(await store.start(t.taskId, "w2")).toMatchObject({ kind: "skip", reason: "terminal", status: "COMPLETED" });
    const record = await store.get(t.taskId);
    expect(record).toMatchObject({ status: "COMPLETED", result: 42, attempt: 1, workerId: "w1" });
    expect(record?.error).toBeUndefined();
    // Finished records expire after the record TTL, not the pending one.
    const ttl = await redis.pttl(keys.task(t.taskId));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(DEFAULT_RETENTION.recordTtlMs);
  });

  it("rejects a stale attempt while another attempt runs", async () => {
    const t = task();
    await store.create(t);
    await store.start(t.taskId, "w1");
    expect(await store.finish(t.taskId, { attempt: 2, status: "COMPLETED", agent: "a" })).toMatchObject({ ok: false, reason: "stale" });
    expect(await store.start(t.taskId, "w2")).toMatchObject({ kind: "skip", reason: "running" });
  });

  it("writes the terminal status event last, with the result", async () => {
    const t = task();
    await store.create(t);
    await store.start(t.taskId, "w1");
    await store.finish(t.taskId, { attempt: 1, status: "FAILED", agent: "a", error: { message: "boom", code: "AGENT_ERROR" } });
    const rows = await redis.xrange(keys.events(t.taskId), "-", "+");
    const events = rows.map(([, f]) => JSON.parse(f[1]!));
    expect(events.map((e) => [e.seq, e.status])).toEqual([
      [1, "running"],
      [2, "failed"],
    ]);
    expect(events[1].error).toEqual({ message: "boom", code: "AGENT_ERROR" });
    expect(await redis.pttl(keys.events(t.taskId))).toBeGreaterThan(0);
  });

  it("says missing for unknown ids", async () => {
    expect(await store.start("nope", "w")).toMatchObject({ kind: "skip", reason: "missing" });
    expect(await store.finish("nope", { attempt: 1, status: "COMPLETED", agent: "a" })).toMatchObject({ ok: false, reason: "missing" });
    expect(await store.get("nope")).toBeUndefined();
  });

  it("lists newest first with filters and cursors, dropping expired ids", async () => {
    const p2 = testPrefix("store-list");
    const k2 = createKeys(p2);
    const s2 = new TaskStore(redis, k2, DEFAULT_RETENTION);
    const base = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      const t = task({ createdAt: base + Math.floor(i / 5), queue: i % 2 ? "odd" : "even" });
      ids.push(t.taskId);
      await s2.create(t);
    }
    await redis.del(k2.task(ids[24]!)); // expired
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await s2.list({ limit: 7, cursor });
      seen.push(...page.tasks.map((t) => t.taskId));
      cursor = page.nextCursor;
    } while (cursor);
    const expected = ids
      .slice(0, 24)
      .map((id, i) => ({ id, at: base + Math.floor(i / 5) }))
      .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1))
      .map((x) => x.id);
    expect(seen).toEqual(expected);
    expect(await redis.zscore(k2.taskIndex(), ids[24]!)).toBeNull();
    const odd = await s2.list({ queue: "odd", limit: 100 });
    expect(odd.tasks.every((t) => t.queue === "odd")).toBe(true);
    expect(odd.tasks).toHaveLength(12);
    const running = await s2.list({ status: "RUNNING" });
    expect(running.tasks).toHaveLength(0);
    await cleanupPrefix(redis, p2);
  });
});

describe("TaskStore under resent commands (a reply lost to a dropped connection)", () => {
  it("gives a worker resending its start the same attempt, not a second one", async () => {
    const t = task();
    await store.create(t);
    const first = await store.start(t.taskId, "w1", { entryId: "1-1" });
    expect(first).toMatchObject({ kind: "run", attempt: 1 });
    expect(await store.start(t.taskId, "w1", { entryId: "1-1" })).toMatchObject({ kind: "run", attempt: 1 });
    // Anyone else, or another entry, still sees a running task.
    expect(await store.start(t.taskId, "w2", { entryId: "1-1" })).toMatchObject({ kind: "skip", reason: "running" });
    expect(await store.start(t.taskId, "w1", { entryId: "2-1" })).toMatchObject({ kind: "skip", reason: "running" });
    const events = await redis.xrange(keys.events(t.taskId), "-", "+");
    expect(events).toHaveLength(1);
  });

  it("accepts the same outcome of the same attempt twice, and only that", async () => {
    const t = task();
    await store.create(t);
    await store.start(t.taskId, "w1", { entryId: "1-1" });
    const done = { attempt: 1, status: "COMPLETED" as const, agent: "a", result: 1 };
    expect(await store.finish(t.taskId, done)).toMatchObject({ ok: true });
    expect(await store.finish(t.taskId, done)).toMatchObject({ ok: true, status: "COMPLETED" });
    expect(await store.finish(t.taskId, { ...done, status: "FAILED" })).toMatchObject({ ok: false, reason: "terminal" });
    expect((await redis.xrange(keys.events(t.taskId), "-", "+")).map(([, f]) => JSON.parse(f[1]!).status)).toEqual(["running", "completed"]);
  });

  it("treats a resent create of the same submit as created, and another submit of the id as a duplicate", async () => {
    const t = task({ submitId: "submit-1" });
    expect(await store.create(t)).toBe(true);
    expect(await store.create(t)).toBe(true);
    expect(await store.create({ ...t, submitId: "submit-2" })).toBe(false);
  });
});
