import { Broker } from "@flotilla/broker";
import { CorruptRecordError, createKeys, DEFAULT_RETENTION, ValidationError } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import type { NewTask } from "../src/task-store.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

// What the store writes into a record, field by field, and what it reads back.
const redis = testRedis();
const prefix = testPrefix("record-fields");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

/** Created at 1000 with one retry: the record's fields are checked one by one. */
const task = (taskId: string, over: Partial<NewTask> = {}): NewTask => newTask(taskId, { createdAt: 1_000, maxRetries: 1, ...over });

describe("a created record", () => {
  it("holds only what the submit said, with maxDeliveries defaulting to maxRetries + 3", async () => {
    await store.createMany("rf", [task("rf/bare")]);
    expect(await redis.hgetall(keys.task("rf/bare"))).toEqual({
      taskId: "rf/bare",
      queue: "rf",
      agent: "a",
      payload: "{}",
      createdAt: "1000",
      status: "PENDING",
      maxRetries: "1",
      maxDeliveries: "4",
    });
  });

  it("holds every option the submit gave, and reads them back typed", async () => {
    const backoff = { delayMs: 10, maxDelayMs: 20, jitter: 0 };
    await store.create(
      task("rf/full", {
        detailed: true,
        metadata: { tenant: "acme" },
        maxRetries: 2,
        maxDeliveries: 9,
        timeoutMs: 700,
        backoff,
        delayMs: 4_000, // created at 1 000 (fixed): due at 5 000
        priority: "low",
        submitId: "s-1",
        trace: '{"traceparent":"t"}',
      }),
    );
    expect(await redis.hgetall(keys.task("rf/full"))).toMatchObject({
      detailed: "1",
      metadata: '{"tenant":"acme"}',
      maxRetries: "2",
      maxDeliveries: "9",
      timeoutMs: "700",
      backoff: JSON.stringify(backoff),
      runAt: "5000",
      priority: "low",
      submitId: "s-1",
      trace: '{"traceparent":"t"}',
    });
    expect(await store.get("rf/full")).toMatchObject({
      detailed: true,
      metadata: { tenant: "acme" },
      maxRetries: 2,
      maxDeliveries: 9,
      timeoutMs: 700,
      runAt: 5_000,
      priority: "low",
    });
  });

  it("leaves no batch marker behind when every task has its own submit id", async () => {
    await store.createMany("rf-ids", [task("rf-ids/a", { submitId: "a" }), task("rf-ids/b", { submitId: "b" })], "batch-x");
    expect(await redis.exists(keys.submitMarker("rf-ids", "batch-x"))).toBe(0);
    await store.createMany("rf-ids", [task("rf-ids/c")], "batch-y");
    expect(await redis.exists(keys.submitMarker("rf-ids", "batch-y"))).toBe(1);
  });

  it("refuses a task of another queue before writing anything", async () => {
    await expect(store.createMany("rf", [task("elsewhere/x")])).rejects.toThrow(ValidationError);
    await expect(
      store.settle("rf", "w", [{ taskId: "elsewhere/x", priority: "normal", entryId: "", attempt: 1, status: "COMPLETED", agent: "a" }]),
    ).rejects.toThrow(/not in queue rf/);
    expect(await redis.exists(keys.task("elsewhere/x"))).toBe(0);
    expect(await store.createMany("rf", [])).toEqual({ created: [], lanesMade: false });
  });

  it("trims the queue's index to indexMaxSize once in every 1,000 creates", async () => {
    const small = new TestTaskStore(redis, keys, { ...DEFAULT_RETENTION, indexMaxSize: 10 });
    await small.createMany(
      "trim",
      Array.from({ length: 999 }, (_, i) => task(`trim/a${i}`)),
    );
    expect(await redis.zcard(keys.taskIndex("trim"))).toBe(999);
    await small.createMany("trim", [task("trim/b")]);
    expect(await redis.zcard(keys.taskIndex("trim"))).toBe(10);
    // The count starts again: the next creates do not trim.
    await small.createMany("trim", [task("trim/c")]);
    expect(await redis.zcard(keys.taskIndex("trim"))).toBe(11);
  });
});

describe("a settled record", () => {
  it("gets no result, error or usage an outcome did not carry, and a dead letter with no reason and lastError null", async () => {
    await new Broker(redis, keys).ensureGroup("rs");
    await store.createMany("rs", [task("rs/ok"), task("rs/bad")]);
    const runs = (await store.claim("rs", "w", 2)).filter((r) => r.kind === "run");
    expect(runs).toHaveLength(2);
    await store.settle(
      "rs",
      "w",
      runs.map((r) => ({
        taskId: r.taskId,
        priority: r.priority,
        entryId: r.entryId,
        attempt: 1,
        agent: "a",
        status: r.taskId === "rs/ok" ? "COMPLETED" : "FAILED",
      })),
    );
    const ok = await redis.hgetall(keys.task("rs/ok"));
    expect(ok.status).toBe("COMPLETED");
    for (const field of ["result", "error", "usage", "retryAt"]) expect(ok).not.toHaveProperty(field);
    expect(await redis.hget(keys.task("rs/bad"), "error")).toBeNull();
    const [[, letter]] = (await redis.xrange(keys.deadLetters("rs"), "-", "+")) as [[string, string[]]];
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < letter.length; i += 2) fields[letter[i]!] = letter[i + 1]!;
    expect(fields.reason).toBe("");
    expect(JSON.parse(fields.extra!)).toEqual({ attempts: 1, lastError: null, priority: "normal" });
    const record = await store.get("rs/ok");
    expect([record?.status, record?.result, record?.error, record?.usage]).toEqual(["COMPLETED", undefined, undefined, undefined]);
  });
});

describe("reading records", () => {
  it("reads counts, flags and a default lane back from a hand-written record", async () => {
    await store.writeRaw("rr/a", { retries: 1, maxRetries: 2, maxDeliveries: 5, detailed: "1", attempt: 2 });
    expect(await store.get("rr/a")).toMatchObject({ retries: 1, maxRetries: 2, maxDeliveries: 5, detailed: true, attempt: 2, priority: "normal" });
    await store.writeRaw("rr/b", { result: "{not json", status: "COMPLETED" });
    await expect(store.get("rr/b")).rejects.toThrow(CorruptRecordError);
  });

  it("reads many at once, undefined for those that do not exist, and fails with CORRUPT_RECORD on a key that is no hash", async () => {
    await store.writeRaw("rr/c");
    expect(await store.getMany([])).toEqual([]);
    const [c, none] = await store.getMany(["rr/c", "rr/none"]);
    expect(c).toMatchObject({ taskId: "rr/c", status: "PENDING" });
    expect(none).toBeUndefined();
    await redis.set(keys.task("rr/str"), "x");
    await expect(store.getMany(["rr/c", "rr/str"])).rejects.toMatchObject({ code: "CORRUPT_RECORD", message: /not a hash/ });
    await expect(store.get("rr/str")).rejects.toMatchObject({ code: "CORRUPT_RECORD" });
  });
});
