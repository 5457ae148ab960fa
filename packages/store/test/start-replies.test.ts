import { Broker } from "@flotilla/broker";
import { createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import type { NewTask } from "../src/task-store.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

// What a worker gets back when it starts a task: everything the submit recorded, or why not to run it.
const redis = testRedis();
const prefix = testPrefix("start-replies");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const base = (taskId: string, over: Partial<NewTask> = {}): NewTask =>
  newTask(taskId, { agent: "writer", payload: '{"agent":"writer","input":"hi"}', ...over });

describe("a started task", () => {
  it("carries everything its submit recorded, and its retries so far", async () => {
    const createdAt = 1_700_000_000_000;
    const trace = '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}';
    const backoff = { delayMs: 250, maxDelayMs: 4000, jitter: 0 };
    await store.create(base("sr/full", { createdAt, detailed: true, metadata: { tenant: "acme", n: 1 }, maxRetries: 2, timeoutMs: 5000, backoff, trace }));
    const first = await store.start("sr/full", "w", { now: createdAt + 1500 });
    expect(first).toEqual({
      kind: "run",
      attempt: 1,
      payload: '{"agent":"writer","input":"hi"}',
      timeoutMs: 5000,
      detailed: true,
      metadata: '{"tenant":"acme","n":1}',
      agent: "writer",
      retries: 0,
      maxRetries: 2,
      backoff: expect.objectContaining({ delayMs: 250, maxDelayMs: 4000 }),
      waitedMs: 1500,
      trace,
      messagesWaiting: 0,
    });
    await store.finish("sr/full", { attempt: 1, status: "RETRYING", agent: "writer", retryAt: 1, error: { message: "x", code: "AGENT_ERROR" } });
    expect(await store.start("sr/full", "w", { now: createdAt + 3000 })).toMatchObject({ kind: "run", attempt: 2, retries: 1, waitedMs: 3000 });
  });

  it("says plainly what was left unsaid: no timeout, backoff or trace, not detailed, no metadata", async () => {
    await store.create(base("sr/bare"));
    expect(await store.start("sr/bare", "w")).toMatchObject({
      kind: "run",
      timeoutMs: undefined,
      detailed: false,
      metadata: "{}",
      backoff: undefined,
      trace: undefined,
    });
    // A record with no retry counts (written by hand) starts with zeros, not NaN.
    await store.writeRaw("sr/raw", { maxRetries: "" });
    await redis.hdel(keys.task("sr/raw"), "maxRetries");
    expect(await store.start("sr/raw", "w")).toMatchObject({ kind: "run", retries: 0, maxRetries: 0, metadata: "{}", agent: "fine" });
  });

  it("ignores a stored backoff that does not parse", async () => {
    await store.writeRaw("sr/bad-backoff", { backoff: "{not json" });
    expect(await store.start("sr/bad-backoff", "w")).toMatchObject({ kind: "run", backoff: undefined });
    await store.writeRaw("sr/wrong-backoff", { backoff: '{"delayMs":-5}' });
    expect(await store.start("sr/wrong-backoff", "w")).toMatchObject({ kind: "run", backoff: undefined });
  });
});

describe("entries that must not run", () => {
  it("come back named, with their lane and entry: missing, terminal, and past the delivery limit with the last error", async () => {
    const lastError = { message: "tool crashed", code: "TOOL_ERROR" };
    await store.writeRaw("sr/done", { status: "COMPLETED" });
    await store.writeRaw("sr/dead", { status: "RETRYING", attempt: 3, maxDeliveries: 3, error: JSON.stringify(lastError) });
    await store.writeRaw("sr/dead-bare", { status: "RETRYING", attempt: 2, maxDeliveries: 2 });
    const replies = await store.startEntries(
      "sr",
      "w",
      [
        { priority: "high", entryId: "1-1", name: "gone" },
        { priority: "low", entryId: "1-2", name: "done" },
        { priority: "normal", entryId: "1-3", name: "dead" },
        { priority: "normal", entryId: "1-4", name: "dead-bare" },
      ],
      false,
    );
    expect(replies).toEqual([
      { kind: "missing", priority: "high", entryId: "1-1", taskId: "sr/gone" },
      { kind: "skip", priority: "low", entryId: "1-2", taskId: "sr/done", reason: "terminal", status: "COMPLETED" },
      {
        kind: "dead",
        priority: "normal",
        entryId: "1-3",
        taskId: "sr/dead",
        attempts: 3,
        lastError,
        reason: "delivery limit reached after 3 attempts; last error: [TOOL_ERROR] tool crashed",
      },
      {
        kind: "dead",
        priority: "normal",
        entryId: "1-4",
        taskId: "sr/dead-bare",
        attempts: 2,
        lastError: undefined,
        reason: "delivery limit reached after 2 attempts",
      },
    ]);
  });

  it("come back with the fields of an entry that names no task, for its dead letter", async () => {
    await new Broker(redis, keys).ensureGroup("srm");
    const junk = (await redis.xadd(keys.lane("srm", "low"), "*", "junk", "1", "more", "2")) as string;
    expect(await store.claim("srm", "w", 10)).toEqual([{ kind: "malformed", priority: "low", entryId: junk, fields: { junk: "1", more: "2" } }]);
  });

  it("start nothing when given no entries", async () => {
    expect(await store.startEntries("sr", "w", [], false)).toEqual([]);
  });
});
