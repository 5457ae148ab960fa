// @cluster: status feeds subscribed per slot
import { createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { openRedis, SubscriberHub } from "@flotilla/core/redis";
import { TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, shardSubscribers, startRedisServer, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { type StatusEvent, StatusFeed } from "../src/status-feed.ts";

const redis = testRedis();
const prefix = testPrefix("status-feed");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const hub = new SubscriberHub(openRedis(testConnection(), "subscriber"));
afterAll(async () => {
  await hub.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

let n = 0;
async function createTask(queue: string) {
  const taskId = `${queue}/f${++n}`;
  await store.create({ taskId, queue, agent: "a", payload: "{}", createdAt: Date.now(), detailed: false, maxRetries: 0, metadata: {} });
  return taskId;
}

const subscribers = async (queue: string) => await shardSubscribers(redis, keys.statusChannel(queue));
/** What a listener heard: the status of each event, or "?" for "look at the record". */
function recorder() {
  const heard: string[] = [];
  return { heard, listener: (e: StatusEvent | undefined) => void heard.push(e ? `${e.taskId}:${e.status}` : "?") };
}
const statusEvent = (taskId: string, status: string) => ({ taskId, seq: 9, attempt: 1, ts: 1, agent: "a", type: "status", status });

describe("StatusFeed", () => {
  it("hands each watcher the status events of its own task, over one subscription per queue", async () => {
    const feed = new StatusFeed(hub, keys);
    const [a, b] = [await createTask("sf1"), await createTask("sf1")];
    const ra = recorder();
    const rb = recorder();
    await feed.watch(a, ra.listener);
    await feed.watch(b, rb.listener);
    expect(await subscribers("sf1")).toBe(1);
    await store.start(a, "w");
    await store.finish(a, { attempt: 1, status: "COMPLETED", agent: "a", result: 1 });
    await waitFor(async () => ra.heard.length === 2, { what: "a's events" });
    expect(ra.heard).toEqual([`${a}:running`, `${a}:completed`]);
    expect(rb.heard).toEqual([]);
    await feed.close();
  });

  it("tells every watcher of the queue to look at its record when a message cannot be read", async () => {
    const feed = new StatusFeed(hub, keys);
    const [a, b] = [await createTask("sf2"), await createTask("sf2")];
    const ra = recorder();
    const rb = recorder();
    await feed.watch(a, ra.listener);
    await feed.watch(b, rb.listener);
    await redis.spublish(keys.statusChannel("sf2"), "not json");
    await redis.spublish(keys.statusChannel("sf2"), JSON.stringify({ not: "a batch" }));
    // In a batch: entries for other tasks or without a task are skipped; a bad one for a watched task says "?".
    const batch = [null, statusEvent("sf2/other", "running"), { taskId: a, type: "status", status: "bogus" }, statusEvent(b, "running")];
    await redis.spublish(keys.statusChannel("sf2"), JSON.stringify(batch));
    await waitFor(async () => rb.heard.length === 3, { what: "the messages" });
    expect(ra.heard).toEqual(["?", "?", "?"]);
    expect(rb.heard).toEqual(["?", "?", `${b}:running`]);
    await feed.close();
  });

  it("stops calling an unwatched listener and keeps the others of the same task", async () => {
    const feed = new StatusFeed(hub, keys);
    const a = await createTask("sf3");
    const gone = recorder();
    const kept = recorder();
    const unwatch = await feed.watch(a, gone.listener);
    await feed.watch(a, kept.listener);
    const both = recorder();
    await feed.watch(a, both.listener); // a third, added while two are there
    unwatch();
    unwatch(); // twice: harmless
    await store.start(a, "w");
    await waitFor(async () => kept.heard.length === 1, { what: "the running event" });
    expect(gone.heard).toEqual([]);
    expect(both.heard).toEqual(kept.heard);
    expect(await subscribers("sf3")).toBe(1);
    await feed.close();
  });

  it("takes an unwatch of a task's only listener twice, and tells a watcher to look at its record for an event that is not a status", async () => {
    const feed = new StatusFeed(hub, keys);
    const a = await createTask("sf9");
    const only = await feed.watch(a, () => {});
    only();
    only(); // its task has no listeners left: still harmless
    const r = recorder();
    await feed.watch(a, r.listener);
    await redis.spublish(keys.statusChannel("sf9"), JSON.stringify([{ ...statusEvent(a, "running"), type: "text", delta: "x" }]));
    await waitFor(async () => r.heard.length === 1, { what: "the message" });
    expect(r.heard).toEqual(["?"]);
    await feed.close();
  });

  it("subscribes anew for a watch after it was closed", async () => {
    const feed = new StatusFeed(hub, keys);
    const a = await createTask("sf10");
    await feed.watch(a, () => {});
    await feed.close();
    expect(await subscribers("sf10")).toBe(0);
    const r = recorder();
    await feed.watch(a, r.listener);
    expect(await subscribers("sf10")).toBe(1);
    await store.start(a, "w");
    await waitFor(async () => r.heard.length === 1, { what: "the running event" });
    await feed.close();
  });

  it("keeps a queue's channel for lingerMs after its last watcher left, and longer if one comes back", async () => {
    const feed = new StatusFeed(hub, keys, { lingerMs: 300 });
    const a = await createTask("sf4");
    const first = await feed.watch(a, () => {});
    first();
    expect(await subscribers("sf4")).toBe(1);
    const again = recorder();
    const second = await feed.watch(a, again.listener); // within the linger: the same subscription
    await new Promise((r) => setTimeout(r, 600));
    expect(await subscribers("sf4")).toBe(1);
    await store.start(a, "w");
    await waitFor(async () => again.heard.length === 1, { what: "the running event" });
    second();
    await waitFor(async () => (await subscribers("sf4")) === 0, { what: "the channel to be left" });
    // A later watch subscribes again.
    const third = recorder();
    await feed.watch(a, third.listener);
    expect(await subscribers("sf4")).toBe(1);
    await feed.close();
  });

  it("lingers 30 s by default", async () => {
    const feed = new StatusFeed(hub, keys);
    const unwatch = await feed.watch(await createTask("sf5"), () => {});
    unwatch();
    await new Promise((r) => setTimeout(r, 300));
    expect(await subscribers("sf5")).toBe(1);
    await feed.close();
  });

  it("leaves every channel when closed, lingering ones too", async () => {
    const feed = new StatusFeed(hub, keys);
    await feed.watch(await createTask("sf6"), () => {});
    const unwatch = await feed.watch(await createTask("sf7"), () => {});
    unwatch();
    await feed.close();
    expect([await subscribers("sf6"), await subscribers("sf7")]).toEqual([0, 0]);
  });

  it("fails a watch whose subscription fails, and subscribes anew on the next", async () => {
    const server = await startRedisServer({ aof: false });
    const own = new SubscriberHub(openRedis(server.url, "subscriber"), { readyTimeoutMs: 500 });
    const client = testRedis(server.url);
    const ownStore = new TestTaskStore(client, keys, DEFAULT_RETENTION);
    try {
      await server.down();
      const feed = new StatusFeed(own, keys);
      await expect(feed.watch("sf8/t", () => {})).rejects.toThrow();
      await server.up();
      // The next watch subscribes anew once the connection is back; under load its reconnect took
      // longer than the hub's 500 ms ready timeout once (pnpm test:long), which is not this test's subject.
      await waitFor(() => own.redis.status === "ready", { what: "the subscriber connection back" });
      await ownStore.create({ taskId: "sf8/t", queue: "sf8", agent: "a", payload: "{}", createdAt: Date.now(), detailed: false, maxRetries: 0, metadata: {} });
      const r = recorder();
      await feed.watch("sf8/t", r.listener);
      await ownStore.start("sf8/t", "w");
      await waitFor(async () => r.heard.length === 1, { what: "the running event" });
      expect(r.heard).toEqual(["sf8/t:running"]);
      await feed.close();
    } finally {
      await own.close();
      client.disconnect();
      await server.stop();
    }
  });
});
