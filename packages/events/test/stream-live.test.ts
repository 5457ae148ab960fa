// @cluster: the live half of a stream, message by message, on the task's sharded channel
import { createKeys, DEFAULT_RETENTION, TaskNotFoundError } from "@flotilla/core";
import { openRedis, SubscriberHub } from "@flotilla/core/redis";
import { TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, shardSubscribers, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { type EventSource, streamEvents } from "../src/event-stream.ts";
import type { FlotillaEvent } from "../src/schema.ts";
import { StatusFeed } from "../src/status-feed.ts";

// The live half of streamEvents, driven message by message: events are written to the stream or
// announced on the channels directly, so a test decides what is missed, late or garbled.
const redis = testRedis();
const prefix = testPrefix("stream-live");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const hub = new SubscriberHub(openRedis(testConnection(), "subscriber"));
const source: EventSource = { redis, hub, keys, statusFeed: new StatusFeed(hub, keys, { lingerMs: 0 }) };
afterAll(async () => {
  await source.statusFeed.close();
  await hub.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

let n = 0;
/** A RUNNING task: its `running` status event is seq 1. */
async function runningTask() {
  const taskId = `q/s${++n}`;
  await store.create({ taskId, queue: "q", agent: "a", payload: "{}", createdAt: Date.now(), detailed: true, maxRetries: 0, metadata: {} });
  await store.start(taskId, "w");
  return taskId;
}

const text = (taskId: string, seq: number) => ({ taskId, seq, attempt: 1, ts: 1, agent: "a", type: "text", delta: `d${seq}` });
const completed = (taskId: string, seq: number) => ({ taskId, seq, attempt: 1, ts: 1, agent: "a", type: "status", status: "completed" });
/** Stored but never announced: a message the reader missed. */
const stored = (taskId: string, seqs: number[]) => redis.xadd(keys.events(taskId), `0-${seqs.at(-1)}`, "e", JSON.stringify(seqs.map((s) => text(taskId, s))));
/** Announced on the task's channel only. */
const announced = (taskId: string, seqs: number[]) => redis.spublish(keys.eventsChannel(taskId), JSON.stringify(seqs.map((s) => text(taskId, s))));
const finished = (taskId: string, seq: number) => redis.spublish(keys.statusChannel("q"), JSON.stringify([completed(taskId, seq)]));

async function next(stream: AsyncIterator<FlotillaEvent>, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const r = await stream.next();
    if (r.done) break;
    out.push(r.value.seq);
  }
  return out;
}

describe("streamEvents, live", () => {
  it("fills a gap in the live events from the stream", async () => {
    const taskId = await runningTask();
    const stream = streamEvents(source, taskId);
    expect(await next(stream, 1)).toEqual([1]);
    await stored(taskId, [2, 3]);
    await announced(taskId, [4]);
    expect(await next(stream, 3)).toEqual([2, 3, 4]);
    await finished(taskId, 5);
    expect(await next(stream, 2)).toEqual([5]);
  });

  it("puts events that arrived out of order on its two channels back in seq order", async () => {
    const taskId = await runningTask();
    const stream = streamEvents(source, taskId);
    expect(await next(stream, 1)).toEqual([1]);
    // Both arrive while nobody reads: the text (seq 3) on the task's channel before the status (seq 2)
    // on the queue's channel. Neither is stored, so only their order can make the reader right.
    await redis
      .multi()
      .spublish(keys.eventsChannel(taskId), JSON.stringify([text(taskId, 3)]))
      .spublish(keys.statusChannel("q"), JSON.stringify([{ ...completed(taskId, 2), status: "retrying" }]))
      .exec();
    await new Promise((r) => setTimeout(r, 200)); // both delivered before the reader looks
    expect(await next(stream, 2)).toEqual([2, 3]);
    await finished(taskId, 4);
    expect(await next(stream, 5)).toEqual([4]);
  });

  it("streams the events still stored of a task whose record is gone", async () => {
    const taskId = await runningTask();
    await stored(taskId, [2, 3]);
    await redis.del(keys.task(taskId));
    expect(await next(streamEvents(source, taskId), 5)).toEqual([2, 3]);
  });

  it("moves past a gap nothing can fill (trimmed from the stream)", async () => {
    const taskId = await runningTask();
    const stream = streamEvents(source, taskId);
    expect(await next(stream, 1)).toEqual([1]);
    await announced(taskId, [10]);
    await announced(taskId, [11]);
    expect(await next(stream, 2)).toEqual([10, 11]);
    await finished(taskId, 12);
    expect(await next(stream, 2)).toEqual([12]);
  });

  it("moves past a trimmed gap only as far as the events still stored", async () => {
    const taskId = await runningTask();
    const stream = streamEvents(source, taskId);
    expect(await next(stream, 1)).toEqual([1]);
    await stored(taskId, [3]); // 2 was trimmed away; 3 is still there
    await announced(taskId, [4]);
    expect(await next(stream, 2)).toEqual([3, 4]);
    await finished(taskId, 5);
    expect(await next(stream, 2)).toEqual([5]);
  });

  it("carries on after a catch-up that found nothing new", async () => {
    const taskId = await runningTask();
    const stream = streamEvents(source, taskId);
    expect(await next(stream, 1)).toEqual([1]);
    await redis.spublish(keys.statusChannel("q"), "garbled");
    await announced(taskId, [2]);
    await finished(taskId, 3);
    expect(await next(stream, 3)).toEqual([2, 3]);
  });

  it("catches up from the stream when a status message cannot be read", async () => {
    const taskId = await runningTask();
    const stream = streamEvents(source, taskId);
    expect(await next(stream, 1)).toEqual([1]);
    await stored(taskId, [2]);
    await redis.spublish(keys.statusChannel("q"), "garbled");
    expect(await next(stream, 1)).toEqual([2]);
    await finished(taskId, 3);
    expect(await next(stream, 2)).toEqual([3]);
  });

  it("catches up from the stream after its connection came back", async () => {
    const taskId = await runningTask();
    const stream = streamEvents(source, taskId);
    expect(await next(stream, 1)).toEqual([1]);
    await stored(taskId, [2]);
    hub.redis.disconnect(true);
    expect(await next(stream, 1)).toEqual([2]);
    await finished(taskId, 3);
    expect(await next(stream, 2)).toEqual([3]);
  });

  it("skips what it cannot read on the task's channel and fills from the stream: 1..N, no gap, ends at the terminal event", async () => {
    const taskId = await runningTask();
    const stream = streamEvents(source, taskId);
    expect(await next(stream, 1)).toEqual([1]);
    // Each garbled message stands where a real one was: its event is stored, never announced readably.
    const garbage = [
      "garbled",
      "null",
      "{}",
      "[1]",
      JSON.stringify([{ type: "text", taskId }]),
      JSON.stringify([text(taskId, 0), { ...text(taskId, 0), seq: "x" }]),
    ];
    const seen = [1];
    let seq = 1;
    for (const message of garbage) {
      seq++;
      await stored(taskId, [seq]);
      await redis.spublish(keys.eventsChannel(taskId), message);
      // Nothing follows it: only a catch-up read can bring this event.
      seen.push(...(await next(stream, 1)));
      // A good event after the garbage, announced as usual.
      seq++;
      await stored(taskId, [seq]);
      await announced(taskId, [seq]);
      seen.push(...(await next(stream, 1)));
    }
    // Garbage that replaces nothing: the reader skips it and carries on.
    await redis.spublish(keys.eventsChannel(taskId), "{not json");
    await finished(taskId, seq + 1);
    seen.push(...(await next(stream, 100)));
    expect(seen).toEqual(Array.from({ length: seq + 1 }, (_, i) => i + 1));
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });

  it("ends when the task's record is gone at a catch-up", async () => {
    const taskId = await runningTask();
    const stream = streamEvents(source, taskId);
    expect(await next(stream, 1)).toEqual([1]);
    await redis.del(keys.task(taskId));
    await redis.spublish(keys.statusChannel("q"), "garbled");
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });

  it("ends at once on a finished task whose status events are gone, and fails on a missing one", async () => {
    await store.writeRaw("q/bare", { status: "COMPLETED" });
    expect(await next(streamEvents(source, "q/bare"), 5)).toEqual([]);
    await expect(streamEvents(source, "q/never").next()).rejects.toThrow(TaskNotFoundError);
  });

  it("leaves the task's channel and its status watch when it ends", async () => {
    const taskId = await runningTask();
    const stream = streamEvents(source, taskId);
    expect(await next(stream, 1)).toEqual([1]);
    expect(await shardSubscribers(redis, keys.eventsChannel(taskId))).toBe(1);
    await finished(taskId, 2);
    expect(await next(stream, 2)).toEqual([2]);
    expect(await shardSubscribers(redis, keys.eventsChannel(taskId))).toBe(0);
    await waitFor(async () => (await shardSubscribers(redis, keys.statusChannel("q"))) === 0, { what: "the status watch to end" });
  });
});
