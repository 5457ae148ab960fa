// client.watch(): the fleet's lifecycle live — tasks submitted, started, finished; workers joining,
// changing state, leaving (stopped, or dead: a worker process killed); graph runs starting and
// finishing; one queue only when asked; a reader that falls behind is told what it lost.
// @cluster: the fleet's feed live, a worker process killed: channels of every queue's slot
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { defineNode, graphWorker } from "@flotilla/graph";
import { scripted, testRedisEnv, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import type { FleetWatch, WatchEvent } from "../src/index.ts";

/** Reads a watch in the background; `seen` grows as events arrive. */
function record(watch: FleetWatch) {
  const seen: WatchEvent[] = [];
  const done = (async () => {
    for await (const e of watch) seen.push(e);
  })();
  const find = (pred: (e: WatchEvent) => boolean, what: string) => waitFor(() => seen.some(pred), { timeoutMs: 10_000, what }).then(() => seen.find(pred)!);
  return { seen, done, find };
}

describe("client.watch()", () => {
  const env = useFlotilla("watch");

  it("reports tasks submitted, started and finished (completed, failed) and workers joining and stopping, from now on", async () => {
    const earlier = await env.worker({ queues: ["w-a"], workerId: "watch-earlier" });
    const old = await env.submit(scripted("old"), "x", { queue: "w-a" });
    await env.until(old);
    const client = env.client();
    const watch = client.watch({ pollMs: 100 });
    await watch.ready;
    const r = record(watch);

    const worker = await env.worker({ queues: ["w-a", "w-new"], workerId: "watch-joiner" });
    expect(await r.find((e) => e.type === "worker.joined" && e.workerId === "watch-joiner", "worker.joined")).toMatchObject({
      queues: ["w-a", "w-new"],
      state: "running",
    });
    // A queue that did not exist when the watch began is picked up.
    const ok = await env.submit(scripted("ok"), "x", { queue: "w-new" });
    const ko = await env.submit(scripted("ko", { failWith: "boom" }), "x", { queue: "w-a" });
    expect(await r.find((e) => e.type === "task.finished" && e.taskId === ok, "ok finished")).toMatchObject({
      queue: "w-new",
      status: "COMPLETED",
      attempt: 1,
    });
    expect(await r.find((e) => e.type === "task.finished" && e.taskId === ko, "ko finished")).toMatchObject({
      queue: "w-a",
      status: "FAILED",
      error: { message: expect.stringContaining("boom") },
    });
    expect(await r.find((e) => e.type === "task.started" && e.taskId === ok, "ok started")).toMatchObject({ attempt: 1 });
    expect(await r.find((e) => e.type === "task.submitted" && e.taskId === ok, "ok submitted")).toMatchObject({ queue: "w-new" });
    await r.find((e) => e.type === "task.submitted" && e.taskId === ko, "ko submitted");

    await env.stopWorkers({ workers: [worker] });
    expect(await r.find((e) => e.type === "worker.left" && e.workerId === "watch-joiner", "worker.left")).toMatchObject({ reason: "stopped" });

    await watch.close();
    await r.done;
    // Nothing from before the watch: the earlier task, or the worker already running.
    expect(
      r.seen.filter((e) => ("taskId" in e && e.taskId === old) || (e.type.startsWith("worker.") && "workerId" in e && e.workerId === earlier.workerId)),
    ).toEqual([]);
    // Each task's submission once.
    expect(r.seen.filter((e) => e.type === "task.submitted").map((e) => (e as { taskId: string }).taskId)).toEqual(expect.arrayContaining([ok, ko]));
    expect(r.seen.filter((e) => e.type === "task.submitted").length).toBe(2);
    // …and each change once, though "w-new"'s first changes may come from its records, before its channel was live.
    for (const id of [ok, ko]) {
      expect(r.seen.filter((e) => "taskId" in e && e.taskId === id && e.type !== "task.submitted").map((e) => e.type)).toEqual([
        "task.started",
        "task.finished",
      ]);
    }
  });

  it("a task that ran before its queue's first round is told once: from the channel, not again from its record", async () => {
    await env.worker({ queues: ["w-once"] });
    await env.until(await env.submit(scripted("warm"), "x", { queue: "w-once" }));
    // The first round (submissions, and the records of what moved) comes after 800 ms: the task runs before it.
    const watch = env.client().watch({ pollMs: 800 });
    await watch.ready;
    const r = record(watch);
    const id = await env.submit(scripted("once"), "x", { queue: "w-once" });
    await r.find((e) => e.type === "task.finished" && e.taskId === id, "finished");
    await r.find((e) => e.type === "task.submitted" && e.taskId === id, "submitted");
    await new Promise((resolve) => setTimeout(resolve, 900));
    await watch.close();
    await r.done;
    // Held until the queue's first round, so in order, each once.
    expect(r.seen.filter((e) => "taskId" in e && e.taskId === id).map((e) => e.type)).toEqual(["task.submitted", "task.started", "task.finished"]);
  });

  it("{ queue }: only that queue's tasks and the workers serving it", async () => {
    await env.worker({ queues: ["q-mine", "q-other"] });
    const watch = env.client().watch({ queue: "q-mine", pollMs: 100 });
    await watch.ready;
    const r = record(watch);
    await env.worker({ queues: ["q-other"], workerId: "watch-other-only" });
    await env.worker({ queues: ["q-mine"], workerId: "watch-mine" });
    const other = await env.submit(scripted("o"), "x", { queue: "q-other" });
    const mine = await env.submit(scripted("m"), "x", { queue: "q-mine" });
    await env.until(other);
    await r.find((e) => e.type === "task.finished" && e.taskId === mine, "mine finished");
    await r.find((e) => e.type === "worker.joined" && e.workerId === "watch-mine", "watch-mine joined");
    await r.find((e) => e.type === "task.submitted" && e.taskId === mine, "mine submitted");
    await watch.close();
    await r.done;
    expect(r.seen.filter((e) => ("queue" in e && e.queue !== "q-mine") || ("workerId" in e && e.workerId === "watch-other-only"))).toEqual([]);
  });

  it("a worker process killed: worker.left, dead", async () => {
    const main = fileURLToPath(new URL("../../../apps/worker/src/main.ts", import.meta.url));
    const child = spawn(process.execPath, ["--conditions=@flotilla/source", main], {
      // testRedisEnv(): the test's Redis, a cluster's seed nodes on the cluster pass.
      env: { ...process.env, ...testRedisEnv(), FLOTILLA_PREFIX: env.prefix, FLOTILLA_WORKER_ID: "watch-doomed", FLOTILLA_HEARTBEAT_TTL_MS: "900" },
      stdio: "ignore",
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      const watch = env.client().watch({ pollMs: 100 });
      await watch.ready;
      const r = record(watch);
      await r.find((e) => e.type === "worker.joined" && e.workerId === "watch-doomed", "the worker process to join");
      child.kill("SIGKILL");
      expect(await r.find((e) => e.type === "worker.left" && e.workerId === "watch-doomed", "worker.left")).toMatchObject({ reason: "dead" });
      await watch.close();
    } finally {
      child.kill("SIGKILL");
      await exited;
    }
  }, 30_000);

  it("graph runs: run.started and run.finished", async () => {
    await env.worker({
      graph: graphWorker({ nodes: [defineNode({ type: "watch-double", execute: (x: number) => x * 2 })], sweepIntervalMs: 100 }),
    });
    const client = env.client();
    const watch = client.watch({ pollMs: 100 });
    await watch.ready;
    const r = record(watch);
    const run = await client.startGraph({ name: "watch-graph", nodes: [{ id: "d", type: "watch-double" }] }, 21);
    expect(await r.find((e) => e.type === "run.started" && e.runId === run.runId, "run.started")).toMatchObject({ graph: "watch-graph" });
    expect(await r.find((e) => e.type === "run.finished" && e.runId === run.runId, "run.finished")).toMatchObject({
      graph: "watch-graph",
      status: "SUCCEEDED",
    });
    await watch.close();
  });

  it("a reader that falls behind gets watch.lagged with how many events were dropped, then the newest", async () => {
    const watch = env.client().watch({ maxBuffered: 3, pollMs: 100 });
    await watch.ready;
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await env.submit(scripted("lag"), i, { queue: "w-lag" }));
    // Nothing reads meanwhile: eight submissions are seen, the oldest five dropped.
    await new Promise((resolve) => setTimeout(resolve, 600));
    await watch.close();
    const seen: WatchEvent[] = [];
    for await (const e of watch) seen.push(e);
    expect(seen[0]).toMatchObject({ type: "watch.lagged", dropped: 5 });
    expect(seen.slice(1).map((e) => (e as { taskId: string }).taskId)).toEqual(ids.slice(5));
  });

  it("refuses bad options with a typed error", () => {
    expect(() => env.client().watch({ queue: "no spaces" })).toThrow(/queue/);
    expect(() => env.client().watch({ pollMs: 1 })).toThrow(/pollMs/);
  });
});
