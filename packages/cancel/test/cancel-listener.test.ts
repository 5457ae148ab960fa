// @cluster: the cancel listener's sharded subscriptions, one per slot it hears
import { createKeys, DEFAULT_RETENTION, type Logger, silentLogger } from "@flotilla/core";
import { openRedis, SubscriberHub } from "@flotilla/core/redis";
import { TestTaskStore } from "@flotilla/store/testing";
import { onCluster, purgePrefix, shardSubscribers, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import type { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { CancelListener } from "../src/cancel-listener.ts";
import { requestCancel } from "../src/request-cancel.ts";

const redis = testRedis();
const prefix = testPrefix("cancel-listener");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const hub = new SubscriberHub(openRedis(testConnection(), "subscriber"));
afterEach(() => {
  vi.useRealTimers();
});
afterAll(async () => {
  await hub.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

let n = 0;
async function runningTask() {
  const taskId = `q/l${++n}`;
  await store.create({ taskId, queue: "q", agent: "a", payload: "{}", createdAt: Date.now(), detailed: false, maxRetries: 0, metadata: {} });
  await store.start(taskId, "w");
  return taskId;
}

/** A cancel message as the fleet's channel carries it (what cancel-2.lua publishes). */
const announce = (taskId: string, reason = "stop") => redis.spublish(keys.cancelChannel("q"), JSON.stringify({ taskId, reason }));

/** Every message published before this call has reached the listener once this resolves (one channel, one publisher). */
async function delivered(listener: CancelListener): Promise<void> {
  const sentinel = `q/sentinel-${++n}`;
  const heard = new Promise<void>((resolve) => listener.watch(sentinel, () => resolve()));
  await announce(sentinel);
  await heard;
}

async function started(options: ConstructorParameters<typeof CancelListener>[3] = {}, reads: Redis = redis): Promise<CancelListener> {
  const listener = new CancelListener(reads, hub, keys, options);
  await listener.start(["q"]);
  return listener;
}

describe("CancelListener", () => {
  it("calls a handler once, however often the task is cancelled; a later request is remembered", async () => {
    const listener = await started();
    const heard: string[] = [];
    listener.watch("q/twice", (reason) => heard.push(reason));
    await announce("q/twice", "first");
    await announce("q/twice", "second");
    await delivered(listener);
    expect(heard).toEqual(["first"]);
    expect(await listener.pendingRequests()).toBe(1);
    await listener.stop();
  });

  it("hands a remembered request to the first watch only", async () => {
    const listener = await started();
    await announce("q/early", "too quick");
    await delivered(listener);
    const heard: string[] = [];
    listener.watch("q/early", (reason) => heard.push(`first:${reason}`));
    listener.watch("q/early", (reason) => heard.push(`second:${reason}`));
    expect(heard).toEqual(["first:too quick"]);
    expect(await listener.pendingRequests()).toBe(0);
    await listener.stop();
  });

  it("ignores messages on the channel that are not cancel requests", async () => {
    const listener = await started();
    await redis.spublish(keys.cancelChannel("q"), "not json");
    await redis.spublish(keys.cancelChannel("q"), JSON.stringify({ taskId: "q/x" }));
    await delivered(listener);
    expect(await listener.pendingRequests()).toBe(0);
    await listener.stop();
  });

  it("stops calling a handler once unwatched; an old unwatch leaves a newer handler in place", async () => {
    const listener = await started();
    const heard: string[] = [];
    const unwatch = listener.watch("q/gone", (reason) => heard.push(`gone:${reason}`));
    unwatch();
    await announce("q/gone");
    const stale = listener.watch("q/again", (reason) => heard.push(`old:${reason}`));
    listener.watch("q/again", (reason) => heard.push(`new:${reason}`));
    stale();
    await announce("q/again");
    await delivered(listener);
    expect(heard).toEqual(["new:stop"]);
    expect(await listener.pendingRequests()).toBe(1); // the request for q/gone, no longer watched
    await listener.stop();
  });

  it("remembers an unwatched request for rememberMs, counted from its latest repeat", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const t0 = Date.now();
    const listener = await started({ rememberMs: 100 });
    await announce("q/a");
    await announce("q/b");
    await delivered(listener);
    vi.setSystemTime(t0 + 60);
    await announce("q/a"); // repeated: now the newest
    await delivered(listener);
    vi.setSystemTime(t0 + 100);
    await announce("q/c"); // q/b is exactly rememberMs old: forgotten; q/a (40 ms old) kept
    await delivered(listener);
    expect(await listener.pendingRequests()).toBe(2);
    const heard: string[] = [];
    for (const id of ["q/a", "q/b", "q/c"]) listener.watch(id, () => heard.push(id));
    expect(heard).toEqual(["q/a", "q/c"]);
    await listener.stop();
  });

  it("remembers at most 10,000 unwatched requests, dropping the oldest", async () => {
    const listener = await started();
    const pipeline = redis.pipeline();
    for (let i = 0; i <= 10_000; i++) pipeline.spublish(keys.cancelChannel("q"), JSON.stringify({ taskId: `q/m${i}`, reason: "stop" }));
    await pipeline.exec();
    await delivered(listener);
    expect(await listener.pendingRequests()).toBe(10_000);
    const heard: string[] = [];
    for (const id of ["q/m0", "q/m1", "q/m10000"]) listener.watch(id, () => heard.push(id));
    expect(heard).toEqual(["q/m1", "q/m10000"]);
    await listener.stop();
  });

  it("forgets every watch and request when stopped, and leaves the channel", async () => {
    const listener = await started();
    const id = await runningTask();
    const heard: string[] = [];
    listener.watch(id, (reason) => heard.push(reason));
    await announce("q/unwatched");
    await delivered(listener);
    await listener.stop();
    expect(await listener.pendingRequests()).toBe(0);
    expect(await shardSubscribers(redis, keys.cancelChannel("q"))).toBe(0);
    await requestCancel(redis, keys, DEFAULT_RETENTION, id, "after stop");
    await listener.recheck();
    expect(heard).toEqual([]);
  });

  it("can be stopped without having started", async () => {
    await expect(new CancelListener(redis, hub, keys).stop()).resolves.toBeUndefined();
  });

  it.skipIf(onCluster())("finds a request missed while its connection was down, retrying with a growing pause until Redis answers", async () => {
    const id = await runningTask();
    await requestCancel(redis, keys, DEFAULT_RETENTION, id, "missed");
    // Reads go through a connection that was closed: every look fails at once until it connects again.
    const reads = testRedis();
    await reads.ping();
    reads.disconnect();
    const warnings: Array<{ at: number; tries: unknown }> = [];
    const logger: Logger = { ...silentLogger, warn: (_message, fields) => void warnings.push({ at: performance.now(), tries: fields?.tries }) };
    const listener = await started({ logger }, reads);
    const heard = new Promise<string>((resolve) => listener.watch(id, resolve));
    hub.redis.disconnect(true); // the hub reconnects, re-subscribes, then tells the listener
    await waitFor(async () => warnings.length >= 3, { timeoutMs: 10_000, what: "three failed looks" });
    await reads.connect();
    expect(await heard).toBe("missed");
    expect(warnings.slice(0, 3).map((w) => w.tries)).toEqual([1, 2, 3]);
    // Pauses of 100 ms × 2^tries after each failure (timers never fire early; allow 10 ms of rounding).
    expect(warnings[1]!.at - warnings[0]!.at).toBeGreaterThanOrEqual(190);
    expect(warnings[2]!.at - warnings[1]!.at).toBeGreaterThanOrEqual(390);
    // ...and capped well below the 5 s ceiling this early.
    expect(warnings[2]!.at - warnings[0]!.at).toBeLessThan(4000);
    await listener.stop();
    reads.disconnect();
  });
});
