import { Agent } from "@flotilla/agent";
import { FlotillaClient } from "@flotilla/client";
import { Queue } from "bullmq";
import { callsPer } from "./graph-runs.ts";
import { bullConnection, commandStats, newAdmin, redisFigures, type System, startWorkers, waitUntil } from "./harness.ts";

/** How big a run is: `full` (the default), `quick` (`--quick`: a look in a minute or two), `smoke` (`--smoke`: the smallest run that still exercises every part, for the bench's own test). */
export type BenchSize = "smoke" | "quick" | "full";

export interface BenchContext {
  url: string;
  /** Not `full`: the scenarios' smaller sizes. */
  quick: boolean;
  size: BenchSize;
}

/** The value of a scenario's knob for the run's size. */
export const bySize = <T>(ctx: BenchContext, values: Record<BenchSize, T>): T => values[ctx.size];

export const noop = new Agent({ name: "noop", model: "scripted:noop" });
let runs = 0;
export const freshPrefix = (system: System) => `bench-${system}-${++runs}`;

/**
 * Submit in bulk, drain with `procs` worker processes at `concurrency`; tasks/s from submit start to
 * the last outcome. `byCommand`: also the calls per task of each command; `prefix`: the keys' prefix
 * (default a fresh one).
 */
export async function drain(
  ctx: BenchContext,
  system: System,
  tasks: number,
  procs: number,
  concurrency: number,
  options: { byCommand?: boolean; prefix?: string } = {},
) {
  const prefix = options.prefix ?? freshPrefix(system);
  const admin = newAdmin(ctx.url);
  const stop = await startWorkers(system, procs, { REDIS_URL: ctx.url, BENCH_PREFIX: prefix, BENCH_CONCURRENCY: String(concurrency) });
  const stats = await commandStats(admin);
  const before = await redisFigures(admin);
  const chunk = 1000;
  const workerCpu0 = stop.cpuSeconds();
  const ownCpu0 = process.cpuUsage();
  let started: number;
  if (system === "flotilla") {
    const client = new FlotillaClient({ redis: ctx.url, prefix });
    started = performance.now();
    for (let i = 0; i < tasks; i += chunk) {
      await client.submitMany(Array.from({ length: Math.min(chunk, tasks - i) }, (_, j) => ({ agent: noop, input: i + j, options: { queue: "bench" } })));
    }
    await waitUntil(
      async () => {
        const d = await client.fleet.queueDepth("bench");
        return d.waiting + d.inFlight + d.delayed === 0;
      },
      600_000,
      "flotilla to drain",
    );
    await client.close();
  } else {
    const queue = new Queue("bench", { connection: bullConnection(ctx.url), prefix });
    started = performance.now();
    for (let i = 0; i < tasks; i += chunk) {
      await queue.addBulk(Array.from({ length: Math.min(chunk, tasks - i) }, (_, j) => ({ name: "noop", data: i + j })));
    }
    await waitUntil(async () => (await queue.getCompletedCount()) >= tasks, 600_000, "bullmq to drain");
    await queue.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const workerCpu = stop.cpuSeconds() - workerCpu0;
  const ownCpu = process.cpuUsage(ownCpu0);
  const after = await redisFigures(admin);
  const statsAfter = await commandStats(admin);
  await stop();
  admin.disconnect();
  return {
    tasksPerSec: Math.round(tasks / seconds),
    seconds: Math.round(seconds * 1000) / 1000,
    commandsPerTask: Math.round(((after.calls - before.calls) / tasks) * 100) / 100,
    redisCpuMicrosPerTask: Math.round((after.cpuMicros - before.cpuMicros) / tasks),
    // How busy Redis was from the first submit to the last outcome (INFO cpu over wall time): 1 is a
    // whole core, the most one Redis can give.
    redisBusy: Math.round((after.cpuMicros - before.cpuMicros) / 1e4 / seconds) / 100,
    workerCpuMicrosPerTask: Math.round((workerCpu * 1e6) / tasks),
    // The submitting client (this process, which also polls for the end).
    clientCpuMicrosPerTask: Math.round((ownCpu.user + ownCpu.system) / tasks),
    bytesPerTask: Math.round((after.memory - before.memory) / tasks),
    ...(options.byCommand && {
      commandsPerTaskByCommand: callsPer(stats, statsAfter, tasks),
      redisMicrosPerTaskByCommand: callsPer(stats, statsAfter, tasks, "usec"),
    }),
  };
}
