// @cluster: a worker killed mid-run and a cancel stored on its task: the takeover through a cluster's slots
// Two guards that one test alone protected (issue 39, items 13 and 15), again through real
// flotilla-worker processes, so a change that keeps the unit-level test passing but breaks the
// process's path (the worker app's timeout settings, the reclaim after a kill) is still caught:
// - a retry's timeout is fresh: counted from the retry's own start, not what the first attempt left;
// - a task whose cancel was stored while its worker was dead is never started again by the worker
//   that takes its entry over: it ends CANCELLED with no attempt past the first.
import type { ChildProcess } from "node:child_process";
import { Agent } from "@flotilla/agent";
import { FlotillaClient, TaskCancelledError } from "@flotilla/client";
import { purgePrefix, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { spawnApp } from "./spawn-app.ts";

const prefix = testPrefix("second-guards");
const redis = testRedis();
const client = new FlotillaClient({ redis: testConnection(), prefix });
const runsKey = `${prefix}:test:runs`;
const children: ChildProcess[] = [];

function startWorker(workerId: string, queue: string, env: Record<string, string> = {}): ChildProcess {
  const child = spawnApp({ prefix, fixture: "guards-module.ts", workerId, env: { FLOTILLA_QUEUES: queue, FLOTILLA_CONCURRENCY: "2", ...env } });
  children.push(child);
  return child;
}

/** The (taskId:attempt → count) runs the fixture's tools recorded for one task. */
async function runsOf(taskId: string): Promise<Record<string, string>> {
  const all = await redis.hgetall(runsKey);
  return Object.fromEntries(Object.entries(all).filter(([k]) => k.startsWith(`${taskId}:`)));
}

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await client.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

describe("guards through worker processes", () => {
  it("a retry's timeout is fresh: attempt 2 gets the whole timeout, not what attempt 1 left of it", async () => {
    // Attempt 1 spends two thirds of the timeout, then fails (its model turn throws); attempt 2
    // needs as long again and succeeds. Each leaves the timeout 1 s to spare (the noise of a loaded
    // 2-core machine several times over); a retry left only attempt 1's remainder (≤ 1 s) times out.
    const timeoutMs = 3000;
    const slowMs = 2000;
    startWorker("guards-timeout", "fresh-timeout");
    const agent = new Agent({
      name: "paced",
      model: "failfirst:x",
      tools: ["pace"],
      options: { scripted: { toolCalls: [{ name: "pace", args: { firstMs: slowMs, laterMs: slowMs } }], reply: "done on a retry" } as never },
    });
    const handle = await client.submit(agent, "take your time", {
      queue: "fresh-timeout",
      timeoutMs,
      maxRetries: 1,
      backoff: { delayMs: 50, jitter: 0 },
      detailed: true,
    });
    expect(await handle.result({ timeoutMs: 20_000 })).toMatchObject({ text: "done on a retry" });
    const record = await handle.status();
    expect(record).toMatchObject({ status: "COMPLETED", attempt: 2, retries: 1 });
    expect(await runsOf(handle.taskId)).toEqual({ [`${handle.taskId}:1`]: "1", [`${handle.taskId}:2`]: "1" });

    const statuses: Array<{ status: string; attempt: number; ts: number; error?: { code: string } }> = [];
    for await (const e of handle.stream()) if (e.type === "status") statuses.push(e as (typeof statuses)[number]);
    expect(statuses.map((e) => `${e.status}:${e.attempt}`)).toEqual(["running:1", "retrying:1", "running:2", "completed:2"]);
    const at = (status: string, attempt: number) => statuses.find((e) => e.status === status && e.attempt === attempt)!.ts;
    // Attempt 1 failed on its own (not by the timeout), after using more than half the timeout...
    expect(statuses[1]!.error).toMatchObject({ code: "MODEL_ERROR" });
    const usedByFirst = at("retrying", 1) - at("running", 1);
    expect(usedByFirst).toBeGreaterThan(timeoutMs / 2);
    // ...and attempt 2 ran longer than what attempt 1 left: only a fresh timeout let it finish.
    expect(at("completed", 2) - at("running", 2)).toBeGreaterThan(timeoutMs - usedByFirst);
  }, 25_000);

  it("a task whose cancel was stored while its worker lay dead is never run again: the worker that reclaims it ends it CANCELLED", async () => {
    const queue = "dead-holder";
    const lease = { FLOTILLA_LEASE_MS: "1500", FLOTILLA_HEARTBEAT_TTL_MS: "1500" };
    const a = startWorker("guards-a", queue, lease);
    const agent = new Agent({
      name: "holder",
      model: "scripted:x",
      tools: ["hold"],
      options: { scripted: { toolCalls: [{ name: "hold", args: {} }], reply: "ran again" } as never },
    });
    const handle = await client.submit(agent, "hold on", { queue, maxRetries: 2, detailed: true });
    // Worker A runs attempt 1 (its tool holds it); then A dies with it.
    await waitFor(async () => (await runsOf(handle.taskId))[`${handle.taskId}:1`] === "1", { timeoutMs: 15_000, what: "attempt 1 running on worker A" });
    expect(await handle.status()).toMatchObject({ status: "RUNNING", attempt: 1, workerId: "guards-a" });
    const exited = new Promise((r) => a.once("exit", r));
    a.kill("SIGKILL");
    await exited;

    // The record still says RUNNING: the cancel is stored on it, and no worker is there to act on it.
    expect(await handle.cancel("cancelled while its worker lay dead")).toMatchObject({ outcome: "requested", status: "RUNNING" });
    expect(await handle.status()).toMatchObject({ status: "RUNNING", attempt: 1 });

    // Worker B takes the entry over once A's lease lapses, and must end the task rather than run it.
    startWorker("guards-b", queue, lease);
    const err = await handle.result({ timeoutMs: 20_000 }).then(
      (value) => new Error(`the task completed: ${JSON.stringify(value)}`),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TaskCancelledError);
    expect(await handle.status()).toMatchObject({ status: "CANCELLED", attempt: 1 });
    expect(await runsOf(handle.taskId)).toEqual({ [`${handle.taskId}:1`]: "1" });
    // B did take the entry: nothing of the task is left in the queue.
    await waitFor(
      async () => {
        const depth = await client.fleet.queueDepth(queue);
        return depth.waiting === 0 && depth.inFlight === 0 && depth.delayed === 0;
      },
      { timeoutMs: 5000, what: "the queue empty" },
    );
  }, 30_000);
});
