import { readdirSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { Cluster, Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { startRedisCluster, TestServerError } from "../src/index.ts";

/** Whether anything accepts connections on `port`. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port });
    s.on("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });

const plain = (port: number) => {
  const r = new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
  r.on("error", () => {});
  return r;
};

const replication = async (port: number) => {
  const r = plain(port);
  try {
    return String(await r.call("INFO", "replication"));
  } finally {
    r.disconnect();
  }
};

const clusterDirs = () => readdirSync(tmpdir()).filter((d) => d.startsWith("flotilla-redis-cluster-"));

describe("startRedisCluster", () => {
  it("serves keys on every master and keeps them when a master dies and its replica takes over", async () => {
    const cluster = await startRedisCluster({ nodeTimeoutMs: 1000 });
    const client = new Cluster(cluster.nodes, { redisOptions: { connectTimeout: 1000 } });
    client.on("error", () => {}); // the killed master's connection fails; commands are retried on the new one
    try {
      expect(cluster.nodes).toHaveLength(6);
      expect(cluster.nodeList).toBe(cluster.nodes.map((n) => `127.0.0.1:${n.port}`).join(","));
      const masters = await cluster.masters();
      expect(masters).toHaveLength(3);
      expect(cluster.nodes.slice(0, 3)).toEqual(masters); // masters first
      for (const n of cluster.nodes.slice(3)) expect(await replication(n.port)).toContain("master_link_status:up");

      // One hash tag per master: CLUSTER KEYSLOT gives the slot, CLUSTER SLOTS its master.
      const slots = (await client.call("CLUSTER", "SLOTS")) as [number, number, [string, number]][];
      const masterOf = (slot: number) => slots.find(([first, last]) => first <= slot && slot <= last)![2][1];
      const keyOn = new Map<number, string>();
      for (let i = 0; keyOn.size < 3; i++) {
        const key = `{t${i}}:value`;
        const port = masterOf(Number(await client.call("CLUSTER", "KEYSLOT", key)));
        if (!keyOn.has(port)) keyOn.set(port, key);
      }
      expect([...keyOn.keys()].sort()).toEqual(masters.map((m) => m.port).sort());
      for (const [port, key] of keyOn) await client.set(key, `on ${port}`);
      for (const [port, key] of keyOn) expect(await client.get(key)).toBe(`on ${port}`);
      // WAIT on the connections the writes went through: each master has its replica acknowledge them.
      for (const m of client.nodes("master")) expect(await m.call("WAIT", 1, 1000)).toBe(1);

      const victim = masters[0]!.port;
      const admin = plain(victim);
      const replicaLines = String(await admin.call("CLUSTER", "REPLICAS", String(await admin.call("CLUSTER", "MYID"))));
      admin.disconnect();
      const replica = Number(/127\.0\.0\.1:(\d+)@/.exec(replicaLines)![1]);

      await cluster.kill(victim);
      expect(await listening(victim)).toBe(false);
      await cluster.waitHealthy(15_000);
      const after = (await cluster.masters()).map((m) => m.port);
      expect(after).toHaveLength(3);
      expect(after).not.toContain(victim);
      expect(after).toContain(replica);
      for (const [port, key] of keyOn) expect(await client.get(key)).toBe(`on ${port}`);

      // Back without its data: it rejoins as the replica of the node that took over.
      await cluster.revive(victim);
      await cluster.waitHealthy(15_000);
      expect((await cluster.masters()).map((m) => m.port).sort()).toEqual([...after].sort());
      const revived = await replication(victim);
      expect(revived).toContain(`master_port:${replica}\r`);
      expect(revived).toContain("master_link_status:up");
    } finally {
      client.disconnect();
      await cluster.stop();
      await cluster.stop(); // idempotent
    }
    for (const n of cluster.nodes) expect(await listening(n.port)).toBe(false);
  });

  it("cleans up and says why when the cluster cannot start", async () => {
    const before = clusterDirs().length;
    await expect(startRedisCluster({ masters: 2 })).rejects.toThrow(TestServerError);
    await expect(startRedisCluster({ args: ["--no-such-option", "1"] })).rejects.toThrow(/exited .*no-such-option/s);
    await expect(startRedisCluster({ cli: "/nonexistent/redis-cli" })).rejects.toThrow(/could not start \/nonexistent\/redis-cli/);
    expect(clusterDirs().length).toBe(before);
  });
});
