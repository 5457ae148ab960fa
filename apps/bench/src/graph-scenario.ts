import { GraphClient } from "@flotilla/graph";
import { FlowProducer, Queue, QueueEvents } from "bullmq";
import { type BenchContext, bySize, drain, freshPrefix } from "./drain.ts";
import { flowRun, graphRun } from "./graph-runs.ts";
import { bullConnection, newAdmin, ratio, startWorkers } from "./harness.ts";

/**
 * A fan-out of 1,000 no-op branches and the node that unites them (split → work → merge), 3 runs on
 * 1 and then 4 worker processes at concurrency 50: a Flotilla graph (1,002 node tasks) against a
 * BullMQ flow (a parent `merge` with 1,000 children `work`). Nodes (jobs)/s from the start call to
 * the result, Redis commands per node, the last branch's end → the merge's start; and, in the same
 * run, the commands of a plain no-op task, for the ratio a graph node costs over it.
 */
export async function graph(ctx: BenchContext) {
  const width = bySize(ctx, { smoke: 40, quick: 200, full: 1000 });
  const repeats = ctx.quick ? 1 : 3;
  const nodes = width + 2;
  const admin = newAdmin(ctx.url);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const env = (prefix: string) => ({ REDIS_URL: ctx.url, BENCH_PREFIX: prefix, BENCH_CONCURRENCY: "50" });
  const out = [];
  for (const procs of [1, 4]) {
    const fPrefix = freshPrefix("flotilla");
    let stop = await startWorkers("flotilla", procs, env(fPrefix), "graph-worker");
    const client = new GraphClient({ redis: ctx.url, prefix: fPrefix });
    // A small run first, for both systems: scripts loaded, code paths compiled.
    await graphRun(client, admin, 10);
    const ours = [];
    for (let i = 0; i < repeats; i++) ours.push(await graphRun(client, admin, width));
    await client.close();
    await stop();

    const plain = await drain(ctx, "flotilla", nodes, procs, 50, { byCommand: true });

    const bPrefix = freshPrefix("bullmq");
    stop = await startWorkers("bullmq", procs, env(bPrefix), "flow-worker");
    const connection = bullConnection(ctx.url);
    const flow = new FlowProducer({ connection, prefix: bPrefix });
    const queues = { work: new Queue("work", { connection, prefix: bPrefix }), merge: new Queue("merge", { connection, prefix: bPrefix }) };
    const events = new QueueEvents("merge", { connection, prefix: bPrefix });
    await events.waitUntilReady();
    await flowRun(flow, queues, events, admin, 10);
    const theirs = [];
    for (let i = 0; i < repeats; i++) theirs.push(await flowRun(flow, queues, events, admin, width));
    await Promise.all([flow.close(), queues.work.close(), queues.merge.close(), events.close()]);
    await stop();

    const flotilla = {
      nodesPerSec: median(ours.map((r) => r.perSec)),
      commandsPerNode: median(ours.map((r) => r.commandsPer)),
      redisCpuMicrosPerNode: median(ours.map((r) => r.redisCpuMicrosPer)),
      lastBranchEndToMergeStartMs: ours.map((r) => r.lastBranchEndToMergeStartMs),
      lastBranchEndToMergeCreatedMs: ours.map((r) => r.lastBranchEndToMergeCreatedMs),
      mergeCreatedToStartMs: ours.map((r) => r.mergeCreatedToStartMs),
      splitEndToFirstBranchStartMs: ours.map((r) => r.splitEndToFirstBranchStartMs),
      runs: ours.map((r) => ({ nodesPerSec: r.perSec, seconds: r.seconds, commandsPerNode: r.commandsPer })),
      // Of the last run.
      commandsPerNodeByCommand: ours.at(-1)!.commandsPerNodeByCommand,
      redisMicrosPerNodeByCommand: ours.at(-1)!.redisMicrosPerNodeByCommand,
    };
    const bullmq = {
      jobsPerSec: median(theirs.map((r) => r.perSec)),
      commandsPerJob: median(theirs.map((r) => r.commandsPer)),
      redisCpuMicrosPerJob: median(theirs.map((r) => r.redisCpuMicrosPer)),
      lastChildEndToParentStartMs: theirs.map((r) => r.lastBranchEndToMergeStartMs),
      runs: theirs.map((r) => ({ jobsPerSec: r.perSec, seconds: r.seconds, commandsPerJob: r.commandsPer })),
    };
    out.push({
      scenario: "graph",
      width,
      nodes,
      procs,
      concurrency: 50,
      runs: repeats,
      flotilla,
      plainTask: {
        tasks: nodes,
        tasksPerSec: plain.tasksPerSec,
        commandsPerTask: plain.commandsPerTask,
        redisCpuMicrosPerTask: plain.redisCpuMicrosPerTask,
        commandsPerTaskByCommand: plain.commandsPerTaskByCommand,
        redisMicrosPerTaskByCommand: plain.redisMicrosPerTaskByCommand,
      },
      bullmq,
      ratio: ratio(flotilla.nodesPerSec, bullmq.jobsPerSec),
      ratioCommands: ratio(flotilla.commandsPerNode, bullmq.commandsPerJob),
      commandsPerNodeOverPlainTask: ratio(flotilla.commandsPerNode, plain.commandsPerTask),
      note: "median of the runs; BullMQ's flow has no split job (the client adds the 1,000 children), so it runs width + 1 jobs against Flotilla's width + 2 node tasks",
    });
  }
  admin.disconnect();
  return out;
}
