// Redis restarted empty (no persistence; a failover to an empty replica looks the same): everything
// it held is gone, consumer groups and queue registry included. Nothing is restarted on our side:
// the worker and the client must make again what they need, and tasks submitted afterwards run.
import { Agent } from "@flotilla/agent";
import { laneKeys } from "@flotilla/broker";
import { createKeys } from "@flotilla/core";
import { startRedisServer, type TestRedisServer, waitFor } from "@flotilla/testing";
import { type ReadinessState, Worker } from "@flotilla/worker";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlotillaClient, type TaskHandle } from "../src/index.ts";

describe("Redis restarted empty", () => {
  let server: TestRedisServer;
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedisServer({ aof: false });
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  /** Stops Redis and starts it again with nothing in it (no AOF, no snapshots). */
  async function restartEmpty(): Promise<void> {
    await server.down();
    await server.up();
  }

  /** The groups of each lane of `queue`, high → low ([] for a lane that does not exist). */
  async function groupsOf(prefix: string, queue: string): Promise<string[][]> {
    return Promise.all(
      laneKeys(createKeys(prefix), queue).map(async (lane) =>
        (await admin.exists(lane)) ? ((await admin.xinfo("GROUPS", lane)) as unknown[][]).map((g) => String(g[1])) : [],
      ),
    );
  }

  const steady = new Agent({ name: "steady", model: "scripted:x", options: { scripted: { tokenDelayMs: 10 } } });
  const slow = new Agent({ name: "slow", model: "scripted:x", options: { scripted: { reply: "s1 s2 s3 s4 s5 s6 s7 s8 s9 s10", tokenDelayMs: 200 } } });

  it("a running worker makes its queues again, is not ready while claims fail, and runs what is submitted after", async () => {
    const prefix = "worker";
    const worker = new Worker({ redis: server.url, prefix, queues: ["default", "other"], concurrency: 4, blockMs: 2000, leaseMs: 1500 });
    // Each change as the worker reports it, with what `worker.ready` (a probe) said at that moment.
    const states: Array<ReadinessState & { probe: boolean }> = [];
    worker.on("worker:readiness", (state) => states.push({ ...state, probe: worker.ready }));
    await worker.start();
    const client = new FlotillaClient({ redis: server.url, prefix });
    try {
      await (await client.submit(steady, "before")).result({ timeoutMs: 30_000 });
      await (await client.submit(steady, "before, other queue", { queue: "other" })).result({ timeoutMs: 30_000 });
      // Mid-run: these are lost with the data; the worker must let them go and carry on.
      const lost = [await client.submit(slow, "lost 1"), await client.submit(slow, "lost 2", { queue: "other" })];
      await waitFor(async () => worker.runningTaskIds.length === 2, { what: "the runs that will be lost", timeoutMs: 15_000 });

      await restartEmpty();
      // The worker's blocking read comes back with NOGROUP: not ready, then its groups made again.
      const failing = await waitFor(async () => states.find((s) => s.reasons.some((r) => r.reason === "claiming" && r.detail.startsWith("NOGROUP"))), {
        what: "the worker to report its claims failing",
        timeoutMs: 15_000,
      });
      expect(failing).toMatchObject({ ready: false, probe: false });
      await waitFor(async () => worker.ready, { what: "the worker ready again", timeoutMs: 15_000 });
      expect(await groupsOf(prefix, "other")).toEqual([["flotilla"], ["flotilla"], ["flotilla"]]);

      const after: TaskHandle[] = [];
      for (let i = 0; i < 10; i++)
        after.push(await client.submit(steady, `after ${i}`, { queue: i % 2 ? "other" : "default", priority: i % 3 ? "normal" : "high" }));
      after.push(...(await client.submitMany([1, 2, 3].map((i) => ({ agent: steady, input: `after, batch ${i}`, options: { priority: "low" as const } })))));
      const results = await Promise.allSettled(after.map((h) => h.result({ timeoutMs: 30_000 })));
      expect(results.filter((r) => r.status === "rejected")).toEqual([]);
      for (const h of after) expect((await h.status()).status).toBe("COMPLETED");

      // What the worker held when the data went is let go: nothing runs on, nothing is stuck.
      await waitFor(async () => worker.runningTaskIds.length === 0, { what: "the lost runs to end", timeoutMs: 15_000 });
      expect(lost.map((h) => h.taskId).filter((id) => worker.runningTaskIds.includes(id))).toEqual([]);
      // The rest of what the engine keeps is back too: the worker's heartbeat, the registry listing reads, cancel.
      await waitFor(async () => (await client.fleet.status()).workers.some((w) => w.workerId === worker.workerId), { what: "the heartbeat" });
      const listed = (await client.listTasks({ limit: 100 })).tasks.map((t) => t.taskId);
      for (const h of after) expect(listed).toContain(h.taskId);
      const cancelled = await client.submit(slow, "cancel me", { queue: "other" });
      await waitFor(async () => (await cancelled.status()).status === "RUNNING", { what: "the slow run to start" });
      await cancelled.cancel("after the restart");
      await expect(cancelled.result({ timeoutMs: 15_000 })).rejects.toMatchObject({ code: "TASK_CANCELLED" });

      expect(worker.ready).toBe(true);
      expect(states.at(-1)).toEqual({ ready: true, reasons: [], probe: true });
    } finally {
      await worker.stop({ drainTimeoutMs: 2000 });
      await client.close();
    }
  }, 120_000);

  it("a client that set a queue up before the restart makes its groups and registry entry again on its next submit", async () => {
    const prefix = "client";
    const client = new FlotillaClient({ redis: server.url, prefix });
    try {
      await client.submit(steady, "before", { queue: "late" });
      await restartEmpty();
      // No worker ran through the restart: only the client can make the groups and the registry entry again.
      const high = await client.submit(steady, "after, high", { queue: "late", priority: "high" });
      const [batched] = await client.submitMany([{ agent: steady, input: "after, batched", options: { queue: "late" } }]);
      expect(await groupsOf(prefix, "late")).toEqual([["flotilla"], ["flotilla"], ["flotilla"]]);
      expect(await admin.smembers(createKeys(prefix).queues())).toEqual(["late"]);
      expect((await client.listTasks()).tasks.map((t) => t.taskId).sort()).toEqual([high.taskId, batched!.taskId].sort());

      const worker = new Worker({ redis: server.url, prefix, queues: ["late"], blockMs: 500 });
      await worker.start();
      try {
        await expect(high.result({ timeoutMs: 20_000 })).resolves.toMatchObject({ text: expect.any(String) });
        await expect(batched!.result({ timeoutMs: 20_000 })).resolves.toMatchObject({ text: expect.any(String) });
      } finally {
        await worker.stop();
      }
    } finally {
      await client.close();
    }
  }, 60_000);
});
