import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { sized } from "@flotilla/testing";
import { describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
/**
 * Each scenario at its smallest in CI (every part still runs and is checked), at `--quick` for `pnpm test:long`.
 * Each test may take 5 minutes: it runs both systems' fleets as processes beside other test files, and
 * under a load of 12 the latency scenario once took more than 2.
 */
const SIZE = sized({ ci: "--smoke", long: "--quick" });

/** Runs `pnpm bench <args>` as a process; expects it to succeed and returns its JSON results. */
async function bench(...args: string[]) {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", main, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const code = await new Promise((resolve) => child.on("exit", resolve));
  expect(code, err).toBe(0);
  return out
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
}

describe("pnpm bench", () => {
  it("runs the throughput scenario (at the CI size) for both systems and prints one JSON object per result", async () => {
    const results = await bench("throughput", SIZE);
    expect(results.map((r) => [r.scenario, r.procs])).toEqual([
      ["throughput", 1],
      ["throughput", 4],
    ]);
    for (const r of results) {
      expect(r.flotilla.tasksPerSec).toBeGreaterThan(0);
      expect(r.bullmq.tasksPerSec).toBeGreaterThan(0);
      expect(r.flotilla.commandsPerTask).toBeGreaterThan(0);
      expect(r.ratio).toBeCloseTo(r.flotilla.tasksPerSec / r.bullmq.tasksPerSec, 1);
    }
  }, 300_000);

  it("latency (at the CI size): one task at a time on an idle worker, both systems, with the Redis commands each task cost", async () => {
    const [r] = await bench("latency", SIZE);
    expect(r.scenario).toBe("latency");
    for (const system of [r.flotilla, r.bullmq]) {
      const l = system.submitToResult;
      expect([l.p50, l.p90, l.p99]).toEqual([l.p50, l.p90, l.p99].sort((a: number, b: number) => a - b));
      // Every task costs some commands: a submit, a start, a settle and a wait each send at least one.
      expect(system.commandsPerTask).toBeGreaterThan(4);
    }
    expect(r.flotilla.submitToFirstEvent.p50).toBeGreaterThan(0);
    expect(r.ratioP50).toBeCloseTo(r.flotilla.submitToResult.p50 / r.bullmq.submitToResult.p50, 1);
  }, 300_000);

  it("instructions (at the CI size): Redis instructions per task of both systems, counted under callgrind, and Flotilla's per script", async () => {
    const [r] = await bench("instructions", SIZE);
    expect(r.scenario).toBe("instructions");
    for (const system of [r.flotilla, r.bullmq]) {
      expect(system.create).toBeGreaterThan(10_000);
      expect(system.drain).toBeGreaterThan(10_000);
      expect(system.total).toBe(system.create + system.drain);
    }
    for (const script of ["create", "claim", "settle"]) expect(r.flotilla.scripts[script]).toBeGreaterThan(10_000);
    expect(r.ratio).toBeCloseTo(r.flotilla.total / r.bullmq.total, 1);
  }, 300_000);

  it("graph (at the CI size): a fan-out and its unites on both systems, with commands per node against a plain task's", async () => {
    const results = await bench("graph", SIZE);
    expect(results.map((r) => [r.scenario, r.procs])).toEqual([
      ["graph", 1],
      ["graph", 4],
    ]);
    for (const r of results) {
      expect(r.nodes).toBe(r.width + 2);
      expect(r.flotilla.nodesPerSec).toBeGreaterThan(0);
      expect(r.bullmq.jobsPerSec).toBeGreaterThan(0);
      expect(r.plainTask.commandsPerTask).toBeGreaterThan(0);
      expect(r.commandsPerNodeOverPlainTask).toBeCloseTo(r.flotilla.commandsPerNode / r.plainTask.commandsPerTask, 1);
      // The merge starts after the last branch ended, on Redis's clock; the flow's parent after its last child.
      for (const ms of r.flotilla.lastBranchEndToMergeStartMs) expect(ms).toBeGreaterThanOrEqual(0);
      for (const ms of r.bullmq.lastChildEndToParentStartMs) expect(ms).toBeGreaterThanOrEqual(0);
    }
  }, 300_000);

  it("bus (at the CI size): publish rates and end to end against plain ioredis streams, every event handled by every group", async () => {
    const results = await bench("bus", SIZE);
    expect(results.map((r) => [r.scenario, r.measure, r.mode])).toEqual([
      ["bus", "publish", "single"],
      ["bus", "publish", "concurrent"],
      ["bus", "publish", "batched"],
      ["bus", "endToEnd", undefined],
    ]);
    for (const r of results.slice(0, 3)) {
      expect(r.flotilla.perSec).toBeGreaterThan(0);
      expect(r.plain.perSec).toBeGreaterThan(0);
      expect(r.ratio).toBeCloseTo(r.flotilla.perSec / r.plain.perSec, 1);
      // One XADD per event for the plain peer; the bus's script adds its own commands.
      expect(r.plain.commandsPerEvent).toBeCloseTo(1, 1);
      expect(r.flotilla.commandsPerEvent).toBeGreaterThanOrEqual(1);
    }
    const e2e = results[3];
    for (const system of [e2e.flotilla, e2e.plain]) {
      // Every group handled every event (at least once).
      expect(system.burst.handled).toBeGreaterThanOrEqual(e2e.groups * e2e.burstEvents);
      expect(system.steady.handled).toBeGreaterThanOrEqual(e2e.groups * e2e.steadyEvents);
      expect(system.burst.deliveredPerSec).toBeGreaterThan(0);
      expect(system.burst.commandsPerDelivery).toBeGreaterThan(0);
      expect(system.steady.callToHandlerMs.p50).toBeGreaterThanOrEqual(0);
    }
    // The bus's own counters agree: every group acknowledged the warm-up, the burst and the steady events.
    for (const g of ["g1", "g2", "g3"]) expect(Number(e2e.flotilla.busCounters[`${g}:acked`])).toBe(200 + e2e.burstEvents + e2e.steadyEvents);
    expect(e2e.ratio).toBeCloseTo(e2e.flotilla.burst.deliveredPerSec / e2e.plain.burst.deliveredPerSec, 1);
  }, 300_000);

  it("gateway (at the CI size): every follower gets every event of its task in order, through the gateway and directly", async () => {
    const [r] = await bench("gateway", SIZE);
    expect(r).toMatchObject({ scenario: "gateway", followersPerTask: 5, eventsPerTask: 200 });
    expect(r.tasks).toBeGreaterThan(0);
    for (const run of [r.gateway, r.direct]) {
      expect(run.lostOrOutOfOrder).toBe(0);
      // 200 text events, the running and completed status events, and usage-free no-op tasks: at least 201 each.
      expect(run.eventsDelivered).toBeGreaterThanOrEqual(r.tasks * r.followersPerTask * 201);
      expect(run.eventsPerSec).toBeGreaterThan(0);
      expect(run.latencyMs.p99).toBeGreaterThanOrEqual(run.latencyMs.p50);
    }
    expect(r.gateway.cpuSeconds.gateway).toBeGreaterThan(0);
  }, 300_000);

  it("fleet (at the CI size): a gated fleet drains every queue on a single Redis and on a 3-master cluster, for both systems", async () => {
    const results = await bench("fleet", SIZE);
    expect(results.map((r) => [r.scenario, r.redis, r.masters])).toEqual([
      ["fleet", "single", 1],
      ["fleet", "cluster", 3],
    ]);
    for (const r of results) {
      expect(r).toMatchObject({ queues: 8 });
      expect(r.tasks).toBeGreaterThanOrEqual(r.queues * 10);
      for (const run of [r.flotilla, r.flotillaRotated, r.bullmq]) {
        // Every task ran (at least once) and nothing is left in any queue.
        expect(run.tasksRun).toBeGreaterThanOrEqual(r.tasks);
        expect(run.leftOver).toBe(0);
        expect(run.tasksPerSec).toBeGreaterThan(0);
        expect(run.tasksPerProcess.mean).toBeCloseTo(run.tasksRun / r.procs, 0);
        expect(run.tasksPerProcess.min).toBeLessThanOrEqual(run.tasksPerProcess.max);
        expect(Object.keys(run.queueDrainSeconds)).toHaveLength(r.queues);
        for (const s of Object.values<number>(run.queueDrainSeconds)) expect(s).toBeLessThanOrEqual(run.seconds);
        // One entry per master, each with its own CPU and commands.
        expect(run.redisNodes).toHaveLength(r.masters);
        for (const node of run.redisNodes) expect(node.cpuSeconds).toBeGreaterThanOrEqual(0);
        expect(run.coresBusy.of).toBeGreaterThan(0);
      }
      expect(r.ratio).toBeCloseTo(r.flotilla.tasksPerSec / r.bullmq.tasksPerSec, 1);
    }
    const cluster = results[1];
    // Every queue lives on one of the masters measured, and the masters' lists name each queue once.
    const masters = cluster.flotilla.redisNodes.map((n: { node: string }) => n.node);
    for (const p of Object.values<{ node: string }>(cluster.placement)) expect(masters).toContain(p.node);
    expect(Object.values<string[]>(cluster.queuesPerMaster).flat().sort()).toEqual(Object.keys(cluster.placement).sort());
    expect(cluster.scalingFromSingle.flotilla).toBeCloseTo(cluster.flotilla.tasksPerSec / results[0].flotilla.tasksPerSec, 1);
  }, 300_000);

  it("tokens (at the CI size): every token of every paced task reaches its follower once and in order, for Flotilla and the plain peer", async () => {
    const [r] = await bench("tokens", SIZE);
    expect(r).toMatchObject({ scenario: "tokens", tokenIntervalMs: 20, workerProcs: 2, followerProcs: 2, targetP99Ms: 25 });
    expect(r.tasks * r.tokensPerTask).toBeGreaterThan(0);
    const tokens = r.tasks * r.tokensPerTask;
    for (const run of [r.flotilla, r.plain]) {
      expect(run.delivered).toMatchObject({ textEvents: tokens, expected: tokens, lost: 0, outOfOrder: 0, incompleteTasks: 0 });
      // Every token timed at every step: the processes' samples joined token by token.
      expect(run.latencyMs.samples).toBe(tokens);
      for (const part of Object.values<{ samples: number }>(run.breakdownMs)) expect(part.samples).toBe(tokens);
      const l = run.latencyMs;
      expect([l.p50, l.p90, l.p99, l.p999, l.max]).toEqual([l.p50, l.p90, l.p99, l.p999, l.max].sort((a, b) => a - b));
      expect(run.timeline.events.reduce((a: number, b: number) => a + b, 0)).toBe(tokens);
      expect(run.eventsPerSec).toBeGreaterThan(0);
      expect(run.tokensPerSecPerTask.min).toBeGreaterThan(0);
      expect(run.eventLoopDelayMs.workers).toHaveLength(r.workerProcs);
      expect(run.eventLoopDelayMs.followers).toHaveLength(r.followerProcs);
      for (const side of ["workers", "redis", "followers"]) expect(run.cpuSeconds[side]).toBeGreaterThan(0);
    }
    // Flotilla's followers also get each task's running and completed status events.
    expect(r.flotilla.delivered.allEvents).toBeGreaterThanOrEqual(tokens + 2 * r.tasks);
    // The peer sends one XADD and one SPUBLISH per token, nothing else.
    expect(r.plain.redisCommandsPerEvent).toBeCloseTo(2, 1);
    expect(r.metTarget).toBe(r.flotilla.latencyMs.p99 <= r.targetP99Ms);
  }, 300_000);

  it("refuses an unknown scenario", async () => {
    const child = spawn(process.execPath, ["--conditions=@flotilla/source", main, "nonsense"], { stdio: "ignore" });
    expect(await new Promise((resolve) => child.on("exit", resolve))).toBe(2);
  });

  it("footprint (at the CI size): no per-task key is left without a TTL once every task ended", async () => {
    const [result] = await bench("footprint", SIZE);
    expect(result.scenario).toBe("footprint");
    expect(result.flotilla.perTaskKeysWithoutTtl).toBe(0);
    // The queue's lanes, index and workers' leases (one field per live consumer), and the registry: none per task.
    expect(result.flotilla.longLivedKeys).toEqual([
      "queue:{queue}",
      "queue:{queue}:high",
      "queue:{queue}:leases",
      "queue:{queue}:low",
      "queue:{queue}:tasks",
      "{fleet}:queues",
    ]);
    expect(result.flotilla.bytesPerStoredEvent).toBeGreaterThan(0);
  }, 300_000);
});
