// A Redis Cluster master killed (kill -9) mid-run: its replica takes over the slots, and workers and
// clients follow by themselves. Replication is asynchronous, so what the dead master acknowledged
// and had not yet sent to its replica is gone: the test measures how many plain submits that was,
// and holds that no durable submit (WAIT for the replica first) acknowledged was lost, and that
// every task acknowledged and replicated before, or submitted after, completes.
// @serial: a master killed mid-run; the promotion's timing is the subject
import { createKeys, ErrorCodes } from "@flotilla/core";
import { keySlot } from "@flotilla/core/redis";
import { onCluster, scripted, startRedisCluster, type TestRedisCluster, testPrefix, waitFor } from "@flotilla/testing";
import { Worker } from "@flotilla/worker";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlotillaClient, type TaskHandle } from "../src/index.ts";

// It starts a cluster of its own: the suite's cluster pass would only run it a second time.
const skip = onCluster();
let cluster: TestRedisCluster;
const prefix = testPrefix("cluster-failover");
const queue = "cf-a";

beforeAll(async () => {
  if (skip) return;
  cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 2_000 });
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

/** The port of the master serving `key`'s slot now (CLUSTER SLOTS asked of a live node). */
async function masterOf(port: number, key: string): Promise<number> {
  const admin = new Redis({ host: "127.0.0.1", port, lazyConnect: true });
  try {
    await admin.connect();
    const slot = keySlot(key);
    const ranges = (await admin.call("CLUSTER", "SLOTS")) as Array<[number, number, [string, number]]>;
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`no master serves slot ${slot}`);
    return Number(range[2][1]);
  } finally {
    admin.disconnect();
  }
}

describe.skipIf(skip)("a Redis Cluster master killed mid-run", () => {
  it("its replica takes over: every task acknowledged before or after completes, and no durable submit acknowledged is lost", async () => {
    const redis = { cluster: cluster.nodes.map((n) => ({ host: n.host, port: n.port })) };
    const workers = [0, 1].map(() => new Worker({ redis, prefix, queues: [queue], concurrency: 6, leaseMs: 3000, blockMs: 500, heartbeatTtlMs: 3000 }));
    await Promise.all(workers.map((w) => w.start()));
    const client = new FlotillaClient({ redis, prefix });
    const durable = new FlotillaClient({ redis, prefix, durableSubmit: { replicas: 1, timeoutMs: 500 } });
    const steady = scripted("steady", { reply: "one two three four five six", tokenDelayMs: 200 });
    const quick = scripted("quick");
    try {
      // Acknowledged by the replica too (durable): these must all survive.
      const before: TaskHandle[] = [];
      for (let i = 0; i < 12; i++) before.push(await durable.submit(steady, `before ${i}`, { queue }));
      await waitFor(async () => (await before[0]!.status()).status === "RUNNING", { what: "the first task to run" });

      const during: Array<{ handle: TaskHandle; durable: boolean }> = [];
      let refused = 0;
      let submitting = true;
      const submitter = (c: FlotillaClient, isDurable: boolean, label: string) =>
        (async () => {
          for (let i = 0; submitting; i++) {
            const handle = await c.submit(quick, `${label} ${i}`, { queue }).catch((err: { code?: string }) => {
              if (err.code === ErrorCodes.NOT_REPLICATED) refused++;
              return undefined;
            });
            if (handle) during.push({ handle, durable: isDurable });
            await new Promise((r) => setTimeout(r, 50));
          }
        })();
      const submitters = [submitter(client, false, "plain"), submitter(durable, true, "durable")];

      const victim = await masterOf(cluster.nodes[0]!.port, createKeys(prefix).queue(queue));
      await new Promise((r) => setTimeout(r, 500));
      const killedAt = Date.now();
      await cluster.kill(victim);
      // The replica is promoted once the others mark the master failed (cluster-node-timeout, then an election).
      const alive = cluster.nodes.find((n) => n.port !== victim)!.port;
      await waitFor(async () => (await masterOf(alive, createKeys(prefix).queue(queue)).catch(() => victim)) !== victim, {
        what: "a replica to take over the queue's slots",
        timeoutMs: 30_000,
      });
      const promotedAfterMs = Date.now() - killedAt;
      await new Promise((r) => setTimeout(r, 1000));
      submitting = false;
      await Promise.all(submitters);

      const after: TaskHandle[] = [];
      for (let i = 0; i < 6; i++) after.push(await client.submit(steady, `after ${i}`, { queue }));

      const failures = async (handles: TaskHandle[]) =>
        (await Promise.allSettled(handles.map((h) => h.result({ timeoutMs: 90_000 })))).flatMap((s, i) =>
          s.status === "rejected" ? [`${handles[i]!.taskId}: ${s.reason}`] : [],
        );
      expect(await failures(before)).toEqual([]);
      expect(await failures(after)).toEqual([]);

      const lost = { plain: 0, durable: 0 };
      const kept: TaskHandle[] = [];
      for (const { handle, durable: isDurable } of during) {
        const found = await handle.status().then(
          () => true,
          (err: { code?: string }) => (err.code === ErrorCodes.TASK_NOT_FOUND ? false : Promise.reject(err)),
        );
        if (found) kept.push(handle);
        else lost[isDurable ? "durable" : "plain"]++;
      }
      expect(during.filter((d) => d.durable).length).toBeGreaterThan(0);
      expect(lost.durable).toBe(0);
      expect(await failures(kept)).toEqual([]);
      const acknowledged = { plain: during.filter((d) => !d.durable).length, durable: during.filter((d) => d.durable).length };
      console.log(JSON.stringify({ clusterFailover: { promotedAfterMs, acknowledged, refusedDurable: refused, lost } }));
    } finally {
      await durable.close();
      await client.close();
      await Promise.all(workers.map((w) => w.stop({ drainTimeoutMs: 2000 })));
    }
  }, 180_000);
});
