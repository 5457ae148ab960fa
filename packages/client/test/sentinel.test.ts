// Clients and workers connected through Redis Sentinel (1 master, 1 replica, 3 sentinels this file
// starts) follow a SENTINEL FAILOVER mid-run by themselves: every task submitted before it (and
// replicated) or after it completes, with its result awaited. Submits acknowledged in the moment the
// failover happens may be lost (replication is asynchronous): the test measures how many, and checks
// that only such ones are.
// @serial: a Sentinel failover mid-run, bounded in time: other files' load makes the failover outlast its bound
import { ErrorCodes } from "@flotilla/core";
import { collect, scripted, startRedisSentinel, type TestRedisSentinel, testPrefix, waitFor } from "@flotilla/testing";
import { Worker } from "@flotilla/worker";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlotillaClient, type FlotillaEvent, type TaskHandle } from "../src/index.ts";

const prefix = testPrefix("sentinel");
const queue = "sentinel";
let sentinel: TestRedisSentinel;

beforeAll(async () => {
  sentinel = await startRedisSentinel();
}, 60_000);
afterAll(() => sentinel?.stop());

/** A plain connection to one server, for the test's own questions (not through Sentinel). */
function plain(port: number): Redis {
  const r = new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 1 });
  r.on("error", () => {});
  return r;
}

/** The names of the connections a server has, from CLIENT LIST. */
async function connectionNames(port: number): Promise<string[]> {
  const r = plain(port);
  try {
    const list = String(await r.call("CLIENT", "LIST"));
    return [...list.matchAll(/ name=(\S*)/g)].map((m) => m[1]!).filter(Boolean);
  } finally {
    r.disconnect();
  }
}

describe("through Redis Sentinel", () => {
  it("connects with { sentinels, name } and names the master in errors", async () => {
    const client = new FlotillaClient({ redis: { ...sentinel.connection(), name: "no-such-master" }, prefix, connectTimeoutMs: 500 });
    const err = await client.submit(scripted("x"), "x", { queue }).catch((e: unknown) => e);
    await client.close();
    expect(err).toMatchObject({ code: ErrorCodes.REDIS_UNAVAILABLE });
    const sentinels = sentinel.sentinels.map((s) => `127.0.0.1:${s.port}`).join(",");
    expect((err as Error).message).toContain(`Redis at the master "no-such-master" of the sentinels ${sentinels} is unreachable`);
    expect((err as Error).message).toContain('the sentinels know no master named "no-such-master"');
  });

  it("a client fails fast while no sentinel answers, and finds the master by itself once they do", async () => {
    await sentinel.stopSentinels();
    // Made now: a connection made while the sentinels answered keeps its master without them.
    const client = new FlotillaClient({ redis: sentinel.connection(), prefix, connectTimeoutMs: 1000 });
    try {
      const err = await client.submit(scripted("x"), "x", { queue }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: ErrorCodes.REDIS_UNAVAILABLE });
      expect((err as Error).message).toMatch(/failed to connect to sentinel 127\.0\.0\.1:\d+ because .*All sentinels are unreachable/);
      await sentinel.startSentinels();
      // ioredis ends a connection whose sentinels all failed; the client connects it again by itself.
      const handle = await waitFor(() => client.submit(scripted("x"), "x", { queue }).catch(() => undefined), {
        timeoutMs: 20_000,
        what: "a submit through the sentinels again",
      });
      expect((await handle.status()).status).toBe("PENDING");
    } finally {
      await client.close();
      await sentinel.startSentinels();
    }
  });

  it("workers and clients follow SENTINEL FAILOVER mid-run by themselves, and every task completes", async () => {
    const redis = sentinel.connection();
    // A short lease: a settle the old master took in the failover's moment (and lost) is run again soon.
    const workers = [0, 1].map(() => new Worker({ redis, prefix, queues: [queue], concurrency: 6, leaseMs: 3000, blockMs: 500, heartbeatTtlMs: 3000 }));
    await Promise.all(workers.map((w) => w.start()));
    const client = new FlotillaClient({ redis, prefix });
    // Durable submits: acknowledged only once the replica has the task (WAIT).
    const durable = new FlotillaClient({ redis: sentinel.connection(), prefix, durableSubmit: { replicas: 1, timeoutMs: 500 } });
    // About 2 s a run: tasks are running when the master changes.
    const agent = scripted("steady", { reply: "one two three four five six seven", tokenDelayMs: 250 });
    // Quick ones for the submits during the failover, so they do not keep the workers from the rest.
    const quick = scripted("quick");
    try {
      const before: TaskHandle[] = [];
      for (let i = 0; i < 16; i++) before.push(await client.submit(agent, `before ${i}`, { queue, detailed: true }));
      const streamed = collect(before[0]!.stream());
      await waitFor(async () => (await before[0]!.status()).status === "RUNNING", { what: "the first task to run" });

      // Everything written so far is on the replica before the failover starts: WAIT after a write of
      // our own counts the replication stream up to it, which holds every earlier write.
      const { port: firstMaster } = await sentinel.master();
      const admin = plain(firstMaster);
      await admin.set(`${prefix}:barrier`, "1");
      expect(await admin.wait(1, 5000)).toBe(1);
      admin.disconnect();

      // Submits go on while the master changes, each noted with when it was acknowledged.
      const during: Array<{ handle: TaskHandle; ackedAt: number }> = [];
      const durableAcked: TaskHandle[] = [];
      let durableRefused = 0;
      let submitting = true;
      const submitter = (async () => {
        for (let i = 0; submitting; i++) {
          const handle = await client.submit(quick, `during ${i}`, { queue }).catch(() => undefined);
          if (handle) during.push({ handle, ackedAt: Date.now() });
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const durableSubmitter = (async () => {
        for (let i = 0; submitting; i++) {
          const handle = await durable.submit(quick, `durable ${i}`, { queue }).catch((err: { code?: string }) => {
            if (err.code === ErrorCodes.NOT_REPLICATED) durableRefused++;
            return undefined;
          });
          if (handle) durableAcked.push(handle);
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      // When the replica stops replicating (SLAVEOF NO ONE) and when the new master is announced: the
      // sentinel asked to fail over (the first) runs the failover itself and publishes both.
      const announced = new Map<string, number>();
      const watcher = plain(sentinel.sentinels[0]!.port);
      watcher.on("message", (channel: string) => announced.set(channel, Date.now()));
      await watcher.subscribe("+failover-state-send-slaveof-noone", "+switch-master");
      const { from, to } = await sentinel.failover();
      submitting = false;
      await Promise.all([submitter, durableSubmitter]);
      watcher.disconnect();
      expect(to.port).not.toBe(from.port);
      const promotedAt = announced.get("+failover-state-send-slaveof-noone")!;
      const switchedAt = announced.get("+switch-master")!;
      expect(switchedAt).toBeGreaterThanOrEqual(promotedAt);

      const after: TaskHandle[] = [];
      for (let i = 0; i < 8; i++) after.push(await client.submit(agent, `after ${i}`, { queue }));

      const settle = (handles: TaskHandle[]) => Promise.allSettled(handles.map((h) => h.result({ timeoutMs: 60_000 })));
      const failures = (handles: TaskHandle[], settled: PromiseSettledResult<unknown>[]) =>
        settled.flatMap((s, i) => (s.status === "rejected" ? [`${handles[i]!.taskId}: ${s.reason}`] : []));
      // Every task acknowledged and replicated before, or submitted after, completes.
      expect(failures(before, await settle(before))).toEqual([]);
      expect(failures(after, await settle(after))).toEqual([]);
      for (const h of after) expect(await h.result()).toMatchObject({ text: "one two three four five six seven" });

      // Of those submitted during the failover, only ones acknowledged between the promotion and the
      // announcement (and the client's reconnect right after it) may be gone: the old master took
      // them after its replica left and dropped them when it resynced from the new master. The margins
      // cover the time an event takes to reach this process and a reconnect on a loaded machine.
      const lost: Array<{ taskId: string; ackedAt: number }> = [];
      const kept: TaskHandle[] = [];
      for (const { handle, ackedAt } of during) {
        const found = await handle.status().then(
          () => true,
          (err: { code?: string }) => (err.code === ErrorCodes.TASK_NOT_FOUND ? false : Promise.reject(err)),
        );
        if (found) kept.push(handle);
        else lost.push({ taskId: handle.taskId, ackedAt });
      }
      expect(during.length).toBeGreaterThan(0);
      const outside = lost.filter((l) => l.ackedAt < promotedAt - 500 || l.ackedAt > switchedAt + 2000);
      expect(outside.map((l) => `${l.taskId} acknowledged ${l.ackedAt - promotedAt} ms after the promotion`)).toEqual([]);
      expect(failures(kept, await settle(kept))).toEqual([]);
      // Every durable submit that was acknowledged survived the failover: the replica had it first.
      const durableLost: string[] = [];
      for (const handle of durableAcked) {
        await handle.status().catch((err: { code?: string }) => {
          if (err.code !== ErrorCodes.TASK_NOT_FOUND) throw err;
          durableLost.push(handle.taskId);
        });
      }
      expect(durableAcked.length).toBeGreaterThan(0);
      expect(durableLost).toEqual([]);
      const measured = {
        submittedDuring: during.length,
        lost: lost.length,
        promotionToSwitchMs: switchedAt - promotedAt,
        durable: { acknowledged: durableAcked.length, refused: durableRefused, lost: durableLost.length },
      };
      console.log(JSON.stringify({ sentinelFailover: measured }));

      // The stream that was open through the failover ended with the task's end. Its terminal event is
      // missing only when the old master took the end and lost it: the run went on from the seq before,
      // and its end came numbered at a seq the stream had told (see event-stream.ts); it ends all the same.
      const events: FlotillaEvent[] = await streamed;
      const record = await before[0]!.status();
      expect(record.status).toBe("COMPLETED");
      const lastStatus = events.filter((e) => e.type === "status").at(-1);
      if (!(lastStatus?.type === "status" && lastStatus.status === "completed")) expect(record.attempt).toBeGreaterThan(1);

      // Every connection moved to the new master by itself; none is left on the old one (a replica now).
      const names = await connectionNames(to.port);
      for (const role of ["command", "blocking", "subscriber"]) expect(names).toContain(`flotilla:${role}`);
      expect((await connectionNames(from.port)).filter((n) => n.startsWith("flotilla:"))).toEqual([]);
      // The workers beat on the new master: the fleet sees both alive.
      await waitFor(async () => (await client.fleet.status()).workers.filter((w) => w.alive).length === 2, { what: "both workers alive on the new master" });
    } finally {
      await durable.close();
      await client.close();
      await Promise.all(workers.map((w) => w.stop({ drainTimeoutMs: 2000 })));
    }
  }, 120_000);
});
