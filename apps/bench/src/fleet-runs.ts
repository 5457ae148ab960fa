import { FlotillaClient } from "@flotilla/client";
import { createKeys } from "@flotilla/core";
import { purgePrefix } from "@flotilla/testing";
import { Queue } from "bullmq";
import { freshPrefix, noop } from "./drain.ts";
import { coreCount, machineTicks, startFleet } from "./fleet-procs.ts";
import type { FleetTarget } from "./fleet-targets.ts";
import { redisFigures, type System } from "./harness.ts";

export interface FleetOptions {
  procs: number;
  concurrency: number;
  queues: string[];
  /** In all, spread evenly over the queues. */
  tasks: number;
  /** Flotilla: process i lists the queues starting at queue i (else every process lists them in the same order). */
  rotateQueues?: boolean;
}

/** One system's side of a run: its queues, filled and watched from this process. */
interface Backlog {
  submit(): Promise<void>;
  /** Tasks of `queue` not done yet. */
  remaining(queue: string): Promise<number>;
  /** Tasks left anywhere but done (waiting, running, delayed, failed, dead-lettered) once drained: 0 when all went well. */
  leftOver(): Promise<number>;
  close(): Promise<void>;
}

const CHUNK = 1000;
const POLL_MS = 20;
const round = (x: number, places = 2) => Math.round(x * 10 ** places) / 10 ** places;

function flotillaBacklog(target: FleetTarget, prefix: string, o: FleetOptions): Backlog {
  const client = new FlotillaClient({ redis: target.flotilla, prefix });
  const keys = createKeys(prefix);
  const perQueue = o.tasks / o.queues.length;
  return {
    submit: async () => {
      await Promise.all(
        o.queues.map(async (queue) => {
          for (let i = 0; i < perQueue; i += CHUNK) {
            const n = Math.min(CHUNK, perQueue - i);
            await client.submitMany(Array.from({ length: n }, (_, j) => ({ agent: noop, input: i + j, options: { queue } })));
          }
        }),
      );
    },
    // A lane's entry is deleted when its task is settled: the lane's length is what is not done yet
    // (one XLEN, as BullMQ's side is one ZCARD).
    remaining: (queue) => target.router.xlen(keys.queue(queue)),
    leftOver: async () => {
      const depths = await Promise.all(o.queues.map((q) => client.fleet.queueDepth(q)));
      return depths.reduce((sum, d) => sum + d.waiting + d.inFlight + d.delayed + d.dead, 0);
    },
    close: () => client.close(),
  };
}

function bullmqBacklog(target: FleetTarget, prefix: string, o: FleetOptions): Backlog {
  // Each queue's prefix carries its name as the hash tag: on a cluster it shares the slot of Flotilla's queue of that name.
  const queues = new Map(o.queues.map((q) => [q, new Queue(q, { connection: target.bullmq, prefix: `${prefix}:{${q}}` })]));
  const perQueue = o.tasks / o.queues.length;
  return {
    submit: async () => {
      await Promise.all(
        [...queues.values()].map(async (queue) => {
          for (let i = 0; i < perQueue; i += CHUNK) {
            await queue.addBulk(Array.from({ length: Math.min(CHUNK, perQueue - i) }, (_, j) => ({ name: "noop", data: i + j })));
          }
        }),
      );
    },
    remaining: async (queue) => perQueue - (await queues.get(queue)!.getCompletedCount()),
    leftOver: async () => {
      const counts = await Promise.all([...queues.values()].map((q) => q.getJobCounts("waiting", "active", "delayed", "failed", "prioritized")));
      return counts.reduce((sum, c) => sum + Object.values(c).reduce((a, b) => a + b, 0), 0);
    },
    close: async () => {
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}

/** min, max, mean and coefficient of variation (standard deviation ÷ mean) of the tasks each process ran. */
function spread(counts: number[]) {
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
  const sd = Math.sqrt(counts.reduce((a, b) => a + (b - mean) ** 2, 0) / counts.length);
  return { min: Math.min(...counts), max: Math.max(...counts), mean: round(mean, 1), cv: round(sd / mean, 3) };
}

/**
 * One drain: `tasks` no-op tasks submitted in bulk over the queues, then `procs` worker processes
 * started, each holding its first `concurrency` tasks at the gate; timed from "go" until every queue
 * is empty. The run's keys are removed after.
 */
export async function fleetRun(target: FleetTarget, system: System, o: FleetOptions) {
  const prefix = freshPrefix(system);
  const backlog = system === "flotilla" ? flotillaBacklog(target, prefix, o) : bullmqBacklog(target, prefix, o);
  let fleet: Awaited<ReturnType<typeof startFleet>> | undefined;
  try {
    await backlog.submit();
    fleet = await startFleet(system, o.procs, (i) => ({
      ...target.env,
      BENCH_PREFIX: prefix,
      BENCH_QUEUES: o.queues.join(","),
      BENCH_CONCURRENCY: String(o.concurrency),
      BENCH_INDEX: String(i),
      ...(o.rotateQueues && { BENCH_ROTATE: "1" }),
    }));
    const before = await Promise.all(target.masters.map((m) => redisFigures(m.admin)));
    const workersBefore = fleet.cpuSeconds();
    const clientBefore = process.cpuUsage();
    const ticksBefore = machineTicks();
    const started = performance.now();
    fleet.go();
    const drainedAt = await Promise.all(
      o.queues.map(async (queue) => {
        while ((await backlog.remaining(queue)) > 0) {
          if (performance.now() - started > 600_000) throw new Error(`benchmark timed out waiting for ${system} to drain ${queue}`);
          await new Promise((r) => setTimeout(r, POLL_MS));
        }
        return (performance.now() - started) / 1000;
      }),
    );
    const seconds = Math.max(...drainedAt);
    const ticks = machineTicks();
    const cores = (part: number) => round((part / (ticks.total - ticksBefore.total)) * coreCount());
    const clientCpu = process.cpuUsage(clientBefore);
    const workersCpu = fleet.cpuSeconds() - workersBefore;
    const after = await Promise.all(target.masters.map((m) => redisFigures(m.admin)));
    const reports = await fleet.stop();
    if (reports.some((r) => r === undefined)) throw new Error(`a ${system} fleet process exited without reporting what it ran`);
    const done = reports.map((r) => r!.done);
    const nodes = target.masters.map((m, i) => {
      const cpuSeconds = (after[i]!.cpuMicros - before[i]!.cpuMicros) / 1e6;
      const commands = after[i]!.calls - before[i]!.calls;
      // cpuBusy: the share of one core the node's redis-server used over the drain.
      return { node: m.node, cpuSeconds: round(cpuSeconds), cpuBusy: round(cpuSeconds / seconds), commands, commandsPerTask: round(commands / o.tasks) };
    });
    const redisCpu = nodes.reduce((sum, n) => sum + n.cpuSeconds, 0);
    return {
      tasksPerSec: Math.round(o.tasks / seconds),
      seconds: round(seconds, 3),
      tasksRun: done.reduce((a, b) => a + b, 0),
      leftOver: await backlog.leftOver(),
      tasksPerProcess: spread(done),
      queueDrainSeconds: Object.fromEntries(o.queues.map((q, i) => [q, round(drainedAt[i]!, 3)])),
      redisNodes: nodes.map(({ commands: _, ...n }) => n),
      commandsPerTask: round(nodes.reduce((sum, n) => sum + n.commands, 0) / o.tasks),
      redisCpuMicrosPerTask: Math.round((redisCpu * 1e6) / o.tasks),
      workerCpuMicrosPerTask: Math.round((workersCpu * 1e6) / o.tasks),
      // Cores kept busy on average over the drain (a core's worth is 1); machine: everything on it.
      coresBusy: {
        redis: round(redisCpu / seconds),
        workers: round(workersCpu / seconds),
        client: round((clientCpu.user + clientCpu.system) / 1e6 / seconds),
        machine: cores(ticks.busy - ticksBefore.busy),
        machineInterrupts: cores(ticks.irq - ticksBefore.irq),
        machineSteal: cores(ticks.steal - ticksBefore.steal),
        of: coreCount(),
      },
    };
  } finally {
    await fleet?.stop();
    await backlog.close();
    await purgePrefix(target.router, prefix);
  }
}
