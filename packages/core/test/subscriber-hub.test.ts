// @single: one subscriber connection behind the fault proxy on a Redis of its own; core's cluster paths are cluster.test.ts's own cluster
import { onCluster, purgePrefix, redisUrl, shardSubscribers, startRedisServer, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { openRedis } from "../src/redis/connection.ts";
import { SubscriberHub } from "../src/redis/subscriber-hub.ts";

const redis = testRedis();
const prefix = testPrefix("hub");
const hubs: SubscriberHub[] = [];
afterAll(async () => {
  await Promise.all(hubs.map((h) => h.close()));
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const numsub = async (channel: string) => Number(await shardSubscribers(redis, channel));

describe("SubscriberHub", () => {
  it("keeps a subscription made while the connection is still handshaking", async () => {
    // ioredis writes SUBSCRIBE at once in the `connect` state, ahead of its INFO ready check,
    // which Redis then refuses on a subscribed connection and the connection is dropped.
    const conn = openRedis(testConnection(), "subscriber");
    const hub = new SubscriberHub(conn);
    hubs.push(hub);
    const channel = `${prefix}:handshake`;
    const got: string[] = [];
    await new Promise<void>((resolve, reject) => {
      conn.redis.once("connect", () => {
        hub.subscribe(channel, (m) => got.push(m)).then(() => resolve(), reject);
      });
    });
    await waitFor(async () => conn.redis.status === "ready" && (await numsub(channel)) === 1, { what: "a live subscription" });
    await new Promise((r) => setTimeout(r, 200)); // a dropped connection would show by now
    expect(await numsub(channel)).toBe(1);
    await redis.spublish(channel, "hello");
    await waitFor(() => got.length === 1, { what: "the message" });
    expect(got).toEqual(["hello"]);
  });

  it.skipIf(onCluster())("re-subscribes every channel after its connection is killed, then tells onReconnect listeners", async () => {
    const name = `${prefix.replaceAll(":", "-")}-kill`;
    const url = new URL(redisUrl());
    const hub = new SubscriberHub(openRedis({ host: url.hostname, port: Number(url.port || 6379), connectionName: name }, "subscriber"));
    hubs.push(hub);
    const channels = [`${prefix}:a`, `${prefix}:b`];
    for (const c of channels) await hub.subscribe(c, () => {});
    let reconnected = 0;
    hub.onReconnect(() => reconnected++);
    const list = (await redis.client("LIST")) as string;
    const id = /id=(\d+)/.exec(list.split("\n").find((l) => l.includes(`name=${name} `))!)![1]!;
    await redis.client("KILL", "ID", id);
    await waitFor(() => reconnected === 1, { what: "the reconnect" });
    for (const c of channels) expect(await numsub(c)).toBe(1);
  });

  it.skipIf(onCluster())("keeps retrying a re-subscription Redis refuses after a reconnect, and tells listeners only once it holds", async () => {
    // A private server: the test takes channel permissions away from its default user.
    const server = await startRedisServer({ aof: false });
    const admin = new Redis(server.url);
    try {
      const warnings: unknown[] = [];
      const logger = { debug() {}, info() {}, error() {}, warn: (_msg: string, fields?: Record<string, unknown>) => void warnings.push(fields?.err) };
      const hub = new SubscriberHub(openRedis({ host: "127.0.0.1", port: server.port, connectionName: "refused-hub" }, "subscriber"), { logger });
      hubs.push(hub);
      const got: string[] = [];
      await hub.subscribe("news", (m) => got.push(m));
      let reconnected = 0;
      hub.onReconnect(() => reconnected++);
      // Revoking the channel drops the subscribed connection; SUBSCRIBE is refused (NOPERM) once it is back.
      await admin.acl("SETUSER", "default", "resetchannels");
      await waitFor(() => warnings.length >= 2, { what: "refused re-subscriptions" });
      expect(reconnected).toBe(0);
      expect(String(warnings[0])).toMatch(/NOPERM/);
      await admin.acl("SETUSER", "default", "allchannels");
      await waitFor(() => reconnected === 1, { what: "the re-subscription to hold" });
      await admin.spublish("news", "back");
      await waitFor(() => got.length === 1, { what: "a message after the reconnect" });
    } finally {
      admin.disconnect();
      await server.stop();
    }
  });

  it("fails a subscribe with a ConnectionError when Redis is unreachable", async () => {
    const hub = new SubscriberHub(openRedis("redis://127.0.0.1:1", "subscriber"), { readyTimeoutMs: 300 });
    hubs.push(hub);
    hub.redis.on("error", () => {});
    await expect(hub.subscribe("x", () => {})).rejects.toMatchObject({ code: "REDIS_UNAVAILABLE" });
  });
});

describe("SubscriberHub under many first subscribers", () => {
  it("shares one wait for the connection among subscribes issued before it is ready", async () => {
    const conn = openRedis(testConnection(), "subscriber");
    const hub = new SubscriberHub(conn);
    hubs.push(hub);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on("warning", onWarning);
    await Promise.all(Array.from({ length: 50 }, (_, i) => hub.subscribe(`${prefix}:many:${i}`, () => {})));
    await new Promise((r) => setImmediate(r));
    process.off("warning", onWarning);
    expect(warnings).not.toContain("MaxListenersExceededWarning");
    expect(conn.redis.listenerCount("error")).toBeLessThan(5);
    expect(await numsub(`${prefix}:many:49`)).toBe(1);
  });
});
