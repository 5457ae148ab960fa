import { createKeys } from "@flotilla/core";
import { type BenchContext, bySize } from "./drain.ts";
import { type FleetOptions, fleetRun } from "./fleet-runs.ts";
import { clusterTarget, type FleetTarget, singleTarget } from "./fleet-targets.ts";
import { ratio } from "./harness.ts";

/**
 * Fleet scale (issue 17): 20 worker processes × concurrency 50 drain 100,000 queued no-op tasks
 * spread evenly over 8 queues, first on the harness's single Redis, then on a 3-master cluster of
 * its own; Flotilla and BullMQ with the same fleet, one after the other on each. Tasks/s from "go"
 * (every process started and holding its first tasks at the gate) to the last queue empty, each
 * master's Redis CPU, the cores the machine kept busy, the tasks each process ran and when each
 * queue ran dry. `--quick`: 4 processes × 10, 4,000 tasks; `--smoke`: 2 × 5, 400.
 */
export async function fleet(ctx: BenchContext) {
  const o: FleetOptions = {
    procs: bySize(ctx, { smoke: 4, quick: 4, full: 20 }),
    concurrency: bySize(ctx, { smoke: 10, quick: 10, full: 50 }),
    queues: Array.from({ length: 8 }, (_, i) => `fleet-${i}`),
    tasks: bySize(ctx, { smoke: 800, quick: 4000, full: 100_000 }),
  };
  const out = [];
  for (const kind of ["single", "cluster"] as const) {
    const target: FleetTarget = kind === "single" ? singleTarget(ctx.url) : await clusterTarget(3);
    try {
      // Flotilla's queue keys carry the queue's name as hash tag, and so do BullMQ's prefixes here: the same master for both.
      const keys = createKeys("bench");
      const placement = Object.fromEntries(await Promise.all(o.queues.map(async (q) => [q, await target.placement(keys.queue(q))] as const)));
      const flotilla = await fleetRun(target, "flotilla", o);
      // The same fleet again with each process's list rotated: a worker takes turns between its
      // queues, so the two should drain alike; before it did, one list drained the queues one after
      // another (on a cluster, one master at a time).
      const flotillaRotated = await fleetRun(target, "flotilla", { ...o, rotateQueues: true });
      const bullmq = await fleetRun(target, "bullmq", o);
      out.push({
        scenario: "fleet",
        redis: kind,
        masters: target.masters.length,
        procs: o.procs,
        concurrency: o.concurrency,
        queues: o.queues.length,
        tasks: o.tasks,
        ...(kind === "cluster" && {
          placement,
          queuesPerMaster: Object.fromEntries(target.masters.map((m) => [m.node, o.queues.filter((q) => placement[q]!.node === m.node)])),
        }),
        flotilla,
        flotillaRotated,
        bullmq,
        ratio: ratio(flotilla.tasksPerSec, bullmq.tasksPerSec),
        ratioRotated: ratio(flotillaRotated.tasksPerSec, bullmq.tasksPerSec),
      });
    } finally {
      await target.close();
    }
  }
  const [single, cluster] = out;
  return [
    single!,
    {
      ...cluster!,
      scalingFromSingle: {
        flotilla: ratio(cluster!.flotilla.tasksPerSec, single!.flotilla.tasksPerSec),
        flotillaRotated: ratio(cluster!.flotillaRotated.tasksPerSec, single!.flotillaRotated.tasksPerSec),
        bullmq: ratio(cluster!.bullmq.tasksPerSec, single!.bullmq.tasksPerSec),
      },
      note: "each process: Flotilla one Worker over the queues (flotillaRotated: process i lists them from queue i on); BullMQ one Worker per queue, their concurrencies summing to the process's. Gated: every process started, connected and holding a full load of tasks before the timed window opens at go. Drained: a queue's lane empty (Flotilla, XLEN) or its completed count full (BullMQ, ZCARD), polled every 20 ms per queue. commandsPerTask and Redis CPU: the drain only (submitted before). The cluster has no replicas. coresBusy.machine counts everything on the machine",
    },
  ];
}
