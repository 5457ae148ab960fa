// @cluster: streams read live from a task's slot, with gaps filled
import { createKeys, DEFAULT_RETENTION, TaskNotFoundError } from "@flotilla/core";
import { openRedis, SubscriberHub } from "@flotilla/core/redis";
import { TestTaskStore } from "@flotilla/store/testing";
import { onCluster, purgePrefix, redisUrl, shardSubscribers, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { type EventSource, QUIET_RECHECK_MS, readEvents, streamEvents } from "../src/event-stream.ts";
import { EventPublisher } from "../src/publisher.ts";
import type { FlotillaEvent } from "../src/schema.ts";
import { StatusFeed } from "../src/status-feed.ts";

const redis = testRedis();
const prefix = testPrefix("events");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const hubs: SubscriberHub[] = [];
const source = (hub: SubscriberHub): EventSource => ({ redis, hub, keys, statusFeed: new StatusFeed(hub, keys) });
const newHub = (name?: string) => {
  const url = new URL(redisUrl());
  // A name (to find and kill the connection) only on one Redis; a cluster run skips that test.
  const conn = onCluster() ? testConnection() : { host: url.hostname, port: Number(url.port || 6379), ...(name && { connectionName: name }) };
  const hub = new SubscriberHub(openRedis(conn, "subscriber"));
  hubs.push(hub);
  return hub;
};
afterAll(async () => {
  await Promise.all(hubs.map((h) => h.close()));
  await purgePrefix(redis, prefix);
  await redis.quit();
});

let n = 0;
async function runningTask(detailed = true) {
  const taskId = `q/task${++n}`;
  await store.create({ taskId, queue: "q", agent: "a", payload: "{}", createdAt: Date.now(), detailed, maxRetries: 0, metadata: {} });
  const start = await store.start(taskId, "w");
  if (start.kind !== "run") throw new Error("not started");
  return taskId;
}

async function collect(it: AsyncIterable<FlotillaEvent>): Promise<FlotillaEvent[]> {
  const out: FlotillaEvent[] = [];
  for await (const e of it) out.push(e);
  return out;
}

const seqs = (events: FlotillaEvent[]) => events.map((e) => e.seq);
/** One batch of a task's events through the store's publish script, announced on `channelBase` + its name. */
async function publishRaw(taskId: string, batchId: string, body: string, channelBase = keys.eventsChannelBase("q")): Promise<unknown> {
  const { scripts } = await import("@flotilla/store/testing");
  const name = taskId.slice(taskId.indexOf("/") + 1);
  const reply = (await scripts.publish.run(
    redis,
    [keys.task(taskId)],
    [keys.taskBase("q"), keys.eventsBase("q"), channelBase, name, 1, 1000, 60_000, batchId, 1, body],
  )) as unknown[];
  return reply[0];
}
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("streamEvents", () => {
  it("gives every reader every event exactly once, in order, wherever it joins a live publisher", async () => {
    const taskId = await runningTask();
    const hub = newHub();
    const publisher = new EventPublisher(redis, keys, DEFAULT_RETENTION, { taskId, attempt: 1, agent: "a", detailed: true });
    const total = 3000;
    const readers: Array<Promise<FlotillaEvent[]>> = [];
    const joinAt = new Set([0, 1, 50, 700, 1500, 2999]);
    for (let i = 0; i < total; i++) {
      if (joinAt.has(i)) readers.push(collect(streamEvents(source(hub), taskId)));
      publisher.emit({ type: "text", delta: `t${i} ` });
      if (i % 7 === 0) await new Promise((r) => setImmediate(r));
    }
    await publisher.flush();
    await store.finish(taskId, { attempt: 1, status: "COMPLETED", agent: "a", result: "done" });
    readers.push(collect(streamEvents(source(newHub()), taskId)));
    const last = total + 2; // running + texts + completed
    for (const events of await Promise.all(readers)) {
      expect(seqs(events)).toEqual(range(1, last));
      expect(events.at(-1)).toMatchObject({ type: "status", status: "completed", result: "done" });
      expect(events.filter((e) => e.type === "text").map((e) => (e as { delta: string }).delta)).toEqual(range(0, total - 1).map((i) => `t${i} `));
    }
  });

  it("resumes after a given seq", async () => {
    const taskId = await runningTask();
    const publisher = new EventPublisher(redis, keys, DEFAULT_RETENTION, { taskId, attempt: 1, agent: "a", detailed: true });
    for (let i = 0; i < 20; i++) publisher.emit({ type: "text", delta: String(i) });
    await publisher.flush();
    await store.finish(taskId, { attempt: 1, status: "COMPLETED", agent: "a" });
    const events = await collect(streamEvents(source(newHub()), taskId, { after: 15 }));
    expect(seqs(events)).toEqual(range(16, 22));
  });

  it.skipIf(onCluster())("fills what it missed while its connection was killed", async () => {
    const taskId = await runningTask();
    const name = `flt-kill-${n}`;
    const hub = newHub(name);
    const publisher = new EventPublisher(redis, keys, DEFAULT_RETENTION, { taskId, attempt: 1, agent: "a", detailed: true });
    const reading = collect(streamEvents(source(hub), taskId));
    publisher.emit({ type: "text", delta: "before" });
    await publisher.flush();
    await waitFor(async () => (await shardSubscribers(redis, keys.eventsChannel(taskId))) === 1, { what: "subscription" });
    const list = (await redis.client("LIST")) as string;
    const ids = list
      .split("\n")
      .filter((l) => l.includes(`name=${name} `))
      .map((l) => /id=(\d+)/.exec(l)![1]!);
    expect(ids.length).toBeGreaterThan(0);
    for (const id of ids) await redis.client("KILL", "ID", id);
    for (let i = 0; i < 50; i++) publisher.emit({ type: "text", delta: `during${i}` });
    await publisher.flush();
    await waitFor(async () => (await shardSubscribers(redis, keys.eventsChannel(taskId))) === 1, { what: "resubscription" });
    publisher.emit({ type: "text", delta: "after" });
    await publisher.flush();
    await store.finish(taskId, { attempt: 1, status: "COMPLETED", agent: "a" });
    const events = await reading;
    expect(seqs(events)).toEqual(range(1, 54));
  });

  it("fills a live event that never reached it, with no reconnect, from the stream: every seq once", async () => {
    const taskId = await runningTask();
    const hub = newHub();
    const publisher = new EventPublisher(redis, keys, DEFAULT_RETENTION, { taskId, attempt: 1, agent: "a", detailed: true });
    const reader = streamEvents(source(hub), taskId);
    // The first event comes from the replay, which is over once it is yielded: what follows is live.
    expect((await reader.next()).value).toMatchObject({ seq: 1, status: "running" });
    publisher.emit({ type: "text", delta: "heard" });
    await publisher.flush();
    expect((await reader.next()).value).toMatchObject({ seq: 2, delta: "heard" });
    // Seq 3 is written by the store's own publish script, but announced on a channel nobody reads:
    // a message lost on the way, on a connection that stays up.
    const body = JSON.stringify({ type: "text", delta: "lost", taskId, attempt: 1, ts: Date.now(), agent: "a" });
    expect(await publishRaw(taskId, "lost:1", body, `${keys.eventsChannelBase("q")}nobody-listens:`)).toBe(3);
    publisher.emit({ type: "text", delta: "heard again" });
    await publisher.flush();
    await store.finish(taskId, { attempt: 1, status: "COMPLETED", agent: "a" });
    const rest = await collect(reader);
    expect(seqs(rest)).toEqual([3, 4, 5]);
    expect(rest.slice(0, 2).map((e) => (e as { delta: string }).delta)).toEqual(["lost", "heard again"]);
  });

  it("reads the task again after a quiet while: an end whose messages never came (no reconnect told of it) still ends the stream", async () => {
    const taskId = await runningTask();
    const reader = streamEvents(source(newHub()), taskId);
    expect((await reader.next()).value).toMatchObject({ seq: 1, status: "running" });
    // The end is written as the settle script writes it, but its message goes to a channel nobody reads.
    const body = JSON.stringify({ type: "text", delta: "unheard", taskId, attempt: 1, ts: Date.now(), agent: "a" });
    await publishRaw(taskId, "quiet:1", body, `${keys.eventsChannelBase("q")}nobody-listens:`);
    await redis.hset(keys.task(taskId), {
      status: "COMPLETED",
      seq: "3",
      log: `${(await redis.hget(keys.task(taskId), "log"))!},{"seq":3,"status":"completed","attempt":1,"ts":${Date.now()}}`,
    });
    const started = Date.now();
    const rest = await collect(reader);
    expect(seqs(rest)).toEqual([2, 3]);
    expect(rest.at(-1)).toMatchObject({ type: "status", status: "completed" });
    expect(Date.now() - started).toBeLessThan(QUIET_RECHECK_MS * 3);
  }, 20_000);

  it("ends when the task ended with its end numbered at a seq already told (a failover lost writes): no hang", async () => {
    const taskId = await runningTask();
    const publisher = new EventPublisher(redis, keys, DEFAULT_RETENTION, { taskId, attempt: 1, agent: "a", detailed: true });
    const reader = streamEvents(source(newHub()), taskId);
    publisher.emit({ type: "text", delta: "a" });
    publisher.emit({ type: "text", delta: "b" });
    await publisher.flush();
    const told: FlotillaEvent[] = [];
    for (let next = await reader.next(); !next.done; next = await reader.next()) {
      told.push(next.value);
      if (told.length === 2) break;
    }
    expect(seqs(told)).toEqual([1, 2]);
    // The new master lost the event batch: its record's seq is back at 1, and the run ends from there.
    await redis.hset(keys.task(taskId), "seq", "1");
    await store.finish(taskId, { attempt: 1, status: "COMPLETED", agent: "a", result: "done" });
    const started = Date.now();
    const rest = await collect(reader);
    // Its completed event is seq 2 again, already told: dropped; the stream ends all the same.
    expect(rest.every((e) => e.seq > 2)).toBe(true);
    expect(Date.now() - started).toBeLessThan(QUIET_RECHECK_MS * 3);
  }, 20_000);

  it("throws TaskNotFoundError for a task that does not exist", async () => {
    await expect(collect(streamEvents(source(newHub()), "q/never-was"))).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it("stops when the signal aborts", async () => {
    const taskId = await runningTask();
    const controller = new AbortController();
    const reading = collect(streamEvents(source(newHub()), taskId, { signal: controller.signal }));
    setTimeout(() => controller.abort(), 50);
    expect(seqs(await reading)).toEqual([1]);
  });
});

describe("EventPublisher", () => {
  it("keeps only status and text events when the task is not detailed", async () => {
    const taskId = await runningTask(false);
    const publisher = new EventPublisher(redis, keys, DEFAULT_RETENTION, { taskId, attempt: 1, agent: "a", detailed: false });
    publisher.emit({ type: "tool_call", toolCallId: "1", name: "x", args: {} });
    publisher.emit({ type: "text", delta: "hi" });
    publisher.emit({ type: "usage", inputTokens: 1, outputTokens: 1, totalTokens: 2 });
    await publisher.flush();
    await store.finish(taskId, { attempt: 1, status: "COMPLETED", agent: "a", result: { text: "hi" } });
    const events = await collect(streamEvents(source(newHub()), taskId));
    expect(events.map((e) => e.type)).toEqual(["status", "text", "status"]);
    expect(events.at(-1)).toMatchObject({ result: { text: "hi" } });
  });

  it("is refused once the attempt no longer runs, and says so once", async () => {
    const taskId = await runningTask();
    let stale = 0;
    const publisher = new EventPublisher(redis, keys, DEFAULT_RETENTION, {
      taskId,
      attempt: 1,
      agent: "a",
      detailed: true,
      onStale: () => stale++,
    });
    await store.finish(taskId, { attempt: 1, status: "COMPLETED", agent: "a" });
    publisher.emit({ type: "text", delta: "too late" });
    await publisher.flush();
    publisher.emit({ type: "text", delta: "later still" });
    await publisher.flush();
    expect(publisher.isStale).toBe(true);
    expect(stale).toBe(1);
    const { events } = await readEvents(redis, keys, taskId);
    expect(events.map((e) => [e.type, e.seq])).toEqual([
      ["status", 1],
      ["status", 2],
    ]);
    // Nothing but status events: the task never got an event stream.
    expect(await redis.exists(keys.events(taskId))).toBe(0);
  });
});

describe("the event log's publish script under a resent batch", () => {
  it("does not write the same batch twice", async () => {
    const taskId = await runningTask();
    const body = JSON.stringify({ type: "text", delta: "once", taskId, attempt: 1, ts: 1, agent: "a" });
    expect(await publishRaw(taskId, "1:1", body)).toBe(2);
    expect(await publishRaw(taskId, "1:1", body)).toBe(2);
    expect(await publishRaw(taskId, "1:2", body)).toBe(3);
    // The running event (seq 1) lives in the record; the stream holds the two batches.
    expect(await redis.xlen(keys.events(taskId))).toBe(2);
  });
});
