// @single: a task's stream on its own keys (its scripts run on a cluster in scripts-on-cluster)
import { createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { openRedis, SubscriberHub } from "@flotilla/core/redis";
import { purgePrefix, startRedisServer, testConnection, testPrefix, testRedis } from "@flotilla/testing";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, vi } from "vitest";
import { readTaskLog, readTaskLogPage, subscribeStatus, subscribeTaskEvents, TaskEventLog } from "../src/event-log.ts";
import { readFields } from "../src/readers.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

// The storage half of a task's events; @flotilla/events gives them types and tests the streaming.
const redis = testRedis();
const prefix = testPrefix("event-log");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const hub = new SubscriberHub(openRedis(testConnection(), "subscriber"));
afterAll(async () => {
  await hub.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

async function running(taskId: string): Promise<void> {
  await store.create(newTask(taskId, { detailed: true, maxRetries: 1 }));
  await store.start(taskId, "w");
}

describe("TaskEventLog", () => {
  it("numbers a batch after the record's seq, stores it as one stream entry and sends it live", async () => {
    await running("el/a");
    // A fresh connection: append must define the script on it itself.
    const own = testRedis();
    const log = new TaskEventLog(own, keys, DEFAULT_RETENTION, "el/a");
    const live: string[] = [];
    const unsubscribe = await subscribeTaskEvents(hub, keys, "el/a", (message) => live.push(message));
    const before = Number(await redis.hget(keys.task("el/a"), "seq"));
    const last = await log.append(1, "1:0", ['{"type":"text","text":"a"}', '{"type":"text","text":"b"}']);
    expect(last).toBe(before + 2);
    const entries = await redis.xrange(keys.events("el/a"), "-", "+");
    expect(entries).toHaveLength(1);
    const [id, fields] = entries[0]!;
    expect(id).toBe(`0-${before + 2}`);
    const stored = JSON.parse(fields[1]!);
    expect(stored).toEqual([
      { seq: before + 1, type: "text", text: "a" },
      { seq: before + 2, type: "text", text: "b" },
    ]);
    await vi.waitFor(() => expect(live.map((m) => JSON.parse(m))).toEqual([stored]));
    await unsubscribe();
    // The stream expires after the retention's event TTL.
    // While the task runs, the stream lives runningEventTtlMs after its last event.
    const ttl = await redis.pttl(keys.events("el/a"));
    expect(ttl).toBeGreaterThan(DEFAULT_RETENTION.runningEventTtlMs - 60_000);
    expect(ttl).toBeLessThanOrEqual(DEFAULT_RETENTION.runningEventTtlMs);
    await own.quit();
  });

  it("writes a resent batch once, takes '*' for the running attempt, and refuses any other attempt with -1", async () => {
    await running("el/b");
    const log = new TaskEventLog(redis, keys, DEFAULT_RETENTION, "el/b");
    const first = await log.append(1, "1:0", ['{"type":"text","text":"x"}']);
    expect(await log.append(1, "1:0", ['{"type":"text","text":"x"}'])).toBe(first);
    expect(await log.append("*", "1:1", ['{"type":"text","text":"y"}'])).toBe(first + 1);
    expect(await log.append(2, "2:0", ['{"type":"text","text":"z"}'])).toBe(-1);
    expect(await redis.xlen(keys.events("el/b"))).toBe(2);
  });

  it("keeps about eventMaxLen events, the oldest trimmed", async () => {
    await running("el/c");
    const log = new TaskEventLog(redis, keys, { ...DEFAULT_RETENTION, eventMaxLen: 5 }, "el/c");
    for (let n = 0; n < 300; n++) await log.append(1, `1:${n}`, ['{"type":"text","text":"t"}']);
    const kept = await redis.xlen(keys.events("el/c"));
    expect(kept).toBeLessThan(300);
  });
});

describe("readTaskLog", () => {
  it("reads the record's status, status log and result with the first page of entries after a seq", async () => {
    await running("el/r");
    const log = new TaskEventLog(redis, keys, DEFAULT_RETENTION, "el/r");
    const a = await log.append(1, "1:0", ['{"type":"text","text":"a"}']);
    const b = await log.append(1, "1:1", ['{"type":"text","text":"b"}']);
    const c = await log.append(1, "1:2", ['{"type":"text","text":"c"}']);
    await store.finish("el/r", { attempt: 1, status: "COMPLETED", agent: "a", result: { output: "done" } });

    const page = await readTaskLog(redis, keys, "el/r", a, 1);
    expect(page.status).toBe("COMPLETED");
    const [storedLog, storedResult] = await readFields(redis, keys, "el/r", ["log", "result"]);
    expect(page.statusLog).toBe(storedLog);
    expect(page.statusLog).toContain('"status":"running"');
    expect(page.result).toBe(storedResult);
    expect(page.agent).toBe("a");
    expect(page.result).not.toBeNull();
    expect(page.batches).toEqual([[`0-${b}`, `[{"seq":${b},"type":"text","text":"b"}]`]]);
    expect(page.more).toBe(true);

    const rest = await readTaskLog(redis, keys, "el/r", b, 2);
    expect(rest.batches).toEqual([[`0-${c}`, `[{"seq":${c},"type":"text","text":"c"}]`]]);
    expect(rest.more).toBe(false);

    expect(await readTaskLogPage(redis, keys, "el/r", `0-${a}`, 1)).toEqual([[`0-${b}`, `[{"seq":${b},"type":"text","text":"b"}]`]]);
    expect(await readTaskLogPage(redis, keys, "el/r", `0-${a}`, 10)).toHaveLength(2);
    expect(await readTaskLogPage(redis, keys, "el/r", `0-${c}`, 10)).toEqual([]);
  });

  it("reads nothing of a task that does not exist", async () => {
    expect(await readTaskLog(redis, keys, "el/none", 0, 10)).toEqual({ status: null, statusLog: null, result: null, agent: null, batches: [], more: false });
  });

  it("fails with the error Redis gave", async () => {
    await redis.set(keys.task("el/str"), "not a hash");
    await expect(readTaskLog(redis, keys, "el/str", 0, 10)).rejects.toThrow(/WRONGTYPE/);
  });
});

describe("subscriptions", () => {
  it("hear the status channel of a queue", async () => {
    const heard: string[] = [];
    const unsubscribe = await subscribeStatus(hub, keys, "el-status", (message) => heard.push(message));
    await redis.spublish(keys.statusChannel("el-status"), "[1]");
    await redis.spublish(keys.statusChannel("el-other"), "[2]"); // another queue
    await vi.waitFor(() => expect(heard).toEqual(["[1]"]));
    await unsubscribe();
  });
});

describe("a task's event stream when the task ends", () => {
  const HOUR = 3_600_000;
  const ended = async (taskId: string, batches: number, retention = DEFAULT_RETENTION) => {
    const own = new TestTaskStore(redis, keys, retention);
    await own.create(newTask(taskId, { detailed: true, maxRetries: 1 }));
    await own.start(taskId, "w");
    const log = new TaskEventLog(redis, keys, retention, taskId);
    for (let i = 0; i < batches; i++) await log.append(1, `1:${i}`, [`{"type":"text","delta":"token ${i}"}`]);
    const before = await redis.xrange(keys.events(taskId), "-", "+");
    return { own, before };
  };

  /** The key expires within `ms`, and not a minute sooner: its TTL was set just now. */
  const expectExpiresInAbout = async (key: string, ms: number) => {
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(ms - 60_000);
    expect(ttl).toBeLessThanOrEqual(ms);
  };

  it("is kept eventTtlMs from the end, and a small one is rewritten at its real size, its events unchanged", async () => {
    const { own, before } = await ended("el/end-small", 3, { ...DEFAULT_RETENTION, eventTtlMs: HOUR });
    // Redis gives a new stream node 4 KB up front.
    expect(await redis.memory("USAGE", keys.events("el/end-small"))).toBeGreaterThan(4096);
    await own.finish("el/end-small", { attempt: 1, status: "COMPLETED", agent: "a" });
    expect(await redis.xrange(keys.events("el/end-small"), "-", "+")).toEqual(before);
    expect(await redis.memory("USAGE", keys.events("el/end-small"))).toBeLessThan(1500);
    await expectExpiresInAbout(keys.events("el/end-small"), HOUR);
  });

  it("a larger one (more than 8 entries) keeps its entries as they are and gets eventTtlMs", async () => {
    const { own, before } = await ended("el/end-large", 9, { ...DEFAULT_RETENTION, eventTtlMs: HOUR });
    await own.finish("el/end-large", { attempt: 1, status: "FAILED", agent: "a", error: { code: "X", message: "x" } });
    expect(await redis.xrange(keys.events("el/end-large"), "-", "+")).toEqual(before);
    expect(await redis.memory("USAGE", keys.events("el/end-large"))).toBeGreaterThan(4096);
    await expectExpiresInAbout(keys.events("el/end-large"), HOUR);
  });

  it('events: "until-end" deletes the stream when the task ends, not when an attempt ends in a retry', async () => {
    const retention = { ...DEFAULT_RETENTION, events: "until-end" as const };
    const { own } = await ended("el/until-end", 2, retention);
    await own.finish("el/until-end", { attempt: 1, status: "RETRYING", agent: "a", retryAt: Date.now() + HOUR });
    expect(await redis.exists(keys.events("el/until-end"))).toBe(1);
    await own.start("el/until-end", "w");
    await own.finish("el/until-end", { attempt: 2, status: "COMPLETED", agent: "a", result: "ok" });
    expect(await redis.exists(keys.events("el/until-end"))).toBe(0);
    expect(await own.get("el/until-end")).toMatchObject({ status: "COMPLETED", result: "ok" });
  });

  it("a task that published no event asks nothing of Redis for a stream it has not got (no XLEN on the hot path)", async () => {
    const server = await startRedisServer({ aof: false });
    const own = new Redis(server.url);
    try {
      const store = new TestTaskStore(own, keys, DEFAULT_RETENTION);
      const xlenCalls = async () => Number(/cmdstat_xlen:calls=(\d+)/.exec(await own.info("commandstats"))?.[1] ?? 0);
      await store.create(newTask("el/quiet", { detailed: true }));
      await store.start("el/quiet", "w");
      await store.finish("el/quiet", { attempt: 1, status: "COMPLETED", agent: "a" });
      expect(await xlenCalls()).toBe(0);
      // One that did publish: its stream is looked at (and rewritten).
      await store.create(newTask("el/spoke", { detailed: true }));
      await store.start("el/spoke", "w");
      await new TaskEventLog(own, keys, DEFAULT_RETENTION, "el/spoke").append(1, "1:0", ['{"type":"text","delta":"x"}']);
      await store.finish("el/spoke", { attempt: 1, status: "COMPLETED", agent: "a" });
      expect(await xlenCalls()).toBe(1);
    } finally {
      own.disconnect();
      await server.stop();
    }
  });
});
