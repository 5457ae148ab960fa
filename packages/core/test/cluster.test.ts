// Redis Cluster as a connection option, on a cluster of real redis-server processes this file starts
// (whichever Redis the rest of the suite runs on): slots as Redis computes them, seed nodes from
// options and from REDIS_CLUSTER_NODES, reads across slots, memory over every master, sharded Pub/Sub.
import { onCluster, redisUrl, startRedisCluster, type TestRedisCluster, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ValidationError } from "../src/errors.ts";
import { CLUSTER_NODES_ENV, everyMaster, isCluster, keySlot, parseNodeList, pipelineBySlot } from "../src/redis/cluster.ts";
import { closeRedis, type OwnedRedis, openRedis } from "../src/redis/connection.ts";
import { readRedisMemory } from "../src/redis/memory.ts";
import { SubscriberHub } from "../src/redis/subscriber-hub.ts";

let cluster: TestRedisCluster;
const opened: OwnedRedis[] = [];
const hubs: SubscriberHub[] = [];
const open = (role: "command" | "subscriber") => {
  const owned = openRedis({ cluster: [cluster.nodes[0]!] }, role);
  opened.push(owned);
  return owned.redis;
};
/** Keys whose hash tags land in different slots (and so, with 3 masters, mostly on different nodes). */
const spread = Array.from({ length: 12 }, (_, i) => `cl:{q${i}}:k`);

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 });
}, 60_000);
afterAll(async () => {
  await Promise.all(hubs.map((h) => h.close()));
  await Promise.all(opened.map((c) => closeRedis(c)));
  await cluster?.stop();
});

describe("keySlot", () => {
  it("is the slot Redis computes (CLUSTER KEYSLOT): of the hash tag when there is one, else of the whole key", async () => {
    const node = new Redis(cluster.nodes[0]!.port, "127.0.0.1");
    try {
      for (const key of ["plain", "flotilla:task:{reports}:t1", "a{b}c", "{}x", "x{}", "{a}{b}", "{a", "tâche:{émoji✓}", "", "a}b{c}d"]) {
        expect({ key, slot: keySlot(key) }).toEqual({ key, slot: Number(await node.cluster("KEYSLOT", key)) });
      }
    } finally {
      node.disconnect();
    }
  });
});

describe("parseNodeList", () => {
  it("reads host:port lists, IPv6 in brackets, and refuses what is not host:port with a ValidationError", () => {
    expect(parseNodeList(" 127.0.0.1:7000, redis-1:7001 ,[::1]:7002")).toEqual([
      { host: "127.0.0.1", port: 7000 },
      { host: "redis-1", port: 7001 },
      { host: "::1", port: 7002 },
    ]);
    for (const bad of ["", " , ", "127.0.0.1", "host:0", "host:70000", "host:port"]) expect(() => parseNodeList(bad)).toThrow(ValidationError);
  });
});

describe("a cluster connection", () => {
  it("from { cluster } or from REDIS_CLUSTER_NODES, runs commands on keys of every slot", async () => {
    const redis = open("command");
    expect(isCluster(redis)).toBe(true);
    await Promise.all(spread.map((k, i) => redis.set(k, String(i))));
    const before = process.env[CLUSTER_NODES_ENV];
    process.env[CLUSTER_NODES_ENV] = cluster.nodeList;
    try {
      const fromEnv = openRedis(undefined, "command");
      opened.push(fromEnv);
      expect(isCluster(fromEnv.redis)).toBe(true);
      expect(await Promise.all(spread.map((k) => fromEnv.redis.get(k)))).toEqual(spread.map((_, i) => String(i)));
    } finally {
      if (before === undefined) delete process.env[CLUSTER_NODES_ENV];
      else process.env[CLUSTER_NODES_ENV] = before;
    }
  });

  it("pipelineBySlot reads keys of many slots in one call per slot, replies in the keys' order", async () => {
    const redis = open("command");
    // Four slots, three keys each, interleaved.
    const keys = Array.from({ length: 12 }, (_, i) => `cl:{p${i % 4}}:k${i}`);
    await Promise.all(keys.map((k, i) => redis.set(k, `v${i}`)));
    // One pipeline over all of them is refused by a Cluster: the reason for pipelineBySlot.
    await expect(keys.reduce((p, k) => p.get(k), redis.pipeline()).exec()).rejects.toThrow(/same slot/);
    const replies = await pipelineBySlot(redis, keys, (pipeline, key) => pipeline.get(key));
    expect(replies).toEqual(keys.map((_, i) => [null, `v${i}`]));
  });

  // The suite's own single Redis (on a cluster run, REDIS_URL is a cluster node: a plain connection would be MOVED).
  it.skipIf(onCluster())("pipelineBySlot on a single Redis: one pipeline, replies in order", async () => {
    const single = testRedis(redisUrl());
    const prefix = testPrefix("cluster-single");
    try {
      const keys = [`${prefix}:{a}:1`, `${prefix}:{b}:2`, `${prefix}:{c}:3`];
      await Promise.all(keys.map((k, i) => single.set(k, `s${i}`, "PX", 60_000)));
      expect(await pipelineBySlot(single, keys, (pipeline, key) => pipeline.get(key))).toEqual(keys.map((_, i) => [null, `s${i}`]));
      await Promise.all(keys.map((k) => single.del(k)));
    } finally {
      single.disconnect();
    }
  });

  it("asks every master for Redis's memory, and the fullest answers", async () => {
    const redis = open("command");
    await redis.ping();
    const masters = everyMaster(redis);
    expect(masters).toHaveLength(3);
    // A limit on one master only, well above what it uses: that master is the fullest, by ratio.
    const limited = masters[1]!;
    const used = Number(/used_memory:(\d+)/.exec(await limited.info("memory"))?.[1]);
    await limited.config("SET", "maxmemory", String(used * 4));
    try {
      const memory = await readRedisMemory(redis);
      expect(memory.maxBytes).toBe(used * 4);
    } finally {
      await limited.config("SET", "maxmemory", "0");
    }
  });

  it("delivers sharded messages of channels in every slot to one subscriber", async () => {
    const redis = open("command");
    const hub = new SubscriberHub({ redis: open("subscriber"), owned: false });
    hubs.push(hub);
    const got: string[] = [];
    const channels = spread.map((k) => `${k}:channel`);
    await Promise.all(channels.map((c) => hub.subscribe(c, (message, channel) => got.push(`${channel}=${message}`))));
    for (const c of channels) await redis.spublish(c, "hi");
    await waitFor(() => got.length === channels.length, { what: "every channel's message" });
    expect(got.sort()).toEqual(channels.map((c) => `${c}=hi`).sort());
  });
});
