// @serial: a cluster master killed mid-run; what is measured is how the other masters' queues fare until the failover ends
// A worker serving queues on every master of a Redis Cluster it starts, one master killed (kill -9):
// until its replica takes over, the queues of the masters that stayed up are served as before — their
// tasks start and complete while the dead master's slots have no master — and the dead master's queue
// is served again once the failover is done.
import { createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { keySlot, openRedis } from "@flotilla/core/redis";
import { newTask, TestTaskStore } from "@flotilla/store/testing";
import { onCluster, recordingLogger, scripted, startRedisCluster, type TestRedisCluster, testPrefix, waitFor } from "@flotilla/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Worker } from "../src/index.ts";

// It starts a cluster of its own: the suite's cluster pass would only run it a second time.
const skip = onCluster();
let cluster: TestRedisCluster;
const prefix = testPrefix("worker-cluster-failover");
const keys = createKeys(prefix);
// Long enough that "before the failover" is a wide window on a loaded machine.
const NODE_TIMEOUT_MS = 6000;

beforeAll(async () => {
  if (skip) return;
  cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: NODE_TIMEOUT_MS });
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

/** slot → the port of the master serving it, as a live node sees it (CLUSTER SLOTS). */
async function slotMasters(port: number): Promise<(slot: number) => number | undefined> {
  const admin = new Redis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await admin.connect();
    const ranges = (await admin.call("CLUSTER", "SLOTS")) as Array<[number, number, [string, number]]>;
    return (slot) => {
      const range = ranges.find(([from, to]) => slot >= from && slot <= to);
      return range ? Number(range[2][1]) : undefined;
    };
  } finally {
    admin.disconnect();
  }
}

describe.skipIf(skip)("a worker on a Redis Cluster whose master fails", () => {
  it("goes on serving the queues of the masters that answer while one master is down, and the dead one's once it fails over", async () => {
    const masterOf = await slotMasters(cluster.nodes[0]!.port);
    // One queue per master.
    const byMaster = new Map<number, string>();
    for (let i = 0; byMaster.size < 3 && i < 1000; i++) {
      const queue = `cf-${i}`;
      const master = masterOf(keySlot(keys.queue(queue)))!;
      if (!byMaster.has(master)) byMaster.set(master, queue);
    }
    const [victim, lost] = [...byMaster][0]!;
    const healthy = [...byMaster].slice(1).map(([, queue]) => queue);
    const redis = { cluster: cluster.nodes.map((n) => ({ host: n.host, port: n.port })) };
    const { log, lines } = recordingLogger();
    const worker = new Worker({ redis, prefix, queues: [lost, ...healthy], concurrency: 4, leaseMs: 3000, blockMs: 500, heartbeatTtlMs: 3000, logger: log });
    await worker.start();
    const admin = openRedis(redis, "command");
    const store = new TestTaskStore(admin.redis, keys, DEFAULT_RETENTION);
    const payload = JSON.stringify({ agent: scripted("quick").toJSON(), input: "x" });
    let n = 0;
    /** Submits a task to `queue` and returns a wait for its end (its record COMPLETED). */
    const submit = async (queue: string) => {
      const taskId = `${queue}/t${++n}`;
      await store.create(newTask(taskId, { agent: "quick", payload }));
      return {
        taskId,
        done: () => waitFor(async () => (await store.get(taskId))?.status === "COMPLETED", { what: `${taskId} to complete`, timeoutMs: 60_000 }),
      };
    };
    try {
      // Every queue served before the kill.
      for (const queue of [lost, ...healthy]) await (await submit(queue)).done();
      await cluster.kill(victim);
      const killedAt = Date.now();
      await new Promise((r) => setTimeout(r, 500));
      const during = [];
      for (const queue of healthy) for (let i = 0; i < 3; i++) during.push(await submit(queue));
      for (const task of during) await task.done();
      const servedAfterMs = Date.now() - killedAt;
      // Still before the failover: the dead master's slots have no live master yet.
      const alive = cluster.nodes.find((n) => n.port !== victim)!.port;
      const stillDead = (await slotMasters(alive))(keySlot(keys.queue(lost))) === victim;
      console.log(JSON.stringify({ workerClusterFailover: { servedAfterMs, stillDead } }));
      expect(lines.filter((l) => l.message.startsWith("queue out of reach")).map((l) => l.fields?.queue)).toEqual([lost]);
      expect(stillDead).toBe(true);
      // And the dead master's queue is served again once its replica took over.
      await waitFor(async () => (await slotMasters(alive).catch(() => () => victim))(keySlot(keys.queue(lost))) !== victim, {
        what: "the failover",
        timeoutMs: 60_000,
      });
      await (await submit(lost)).done();
    } finally {
      await worker.stop({ drainTimeoutMs: 2000 });
      admin.redis.disconnect();
    }
  }, 180_000);
});
