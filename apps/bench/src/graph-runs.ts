// One measured run of the graph scenario's shape, a fan-out of `width` no-op branches and the node that
// unites them: a Flotilla graph run, or a BullMQ flow (a parent with `width` children).
import type { GraphClient, GraphInput } from "@flotilla/graph";
import { type FlowProducer, Job, type Queue, type QueueEvents } from "bullmq";
import type { Redis } from "ioredis";
import { commandStats, redisFigures } from "./harness.ts";

/** split (a fan-out: one branch per item) → work (no-op) → merge (unites split: a list of every work output). */
export const GRAPH_BENCH: GraphInput = {
  name: "bench-fanout",
  nodes: [
    { id: "split", type: "split", fanOut: true, next: ["work"] },
    { id: "work", type: "work", next: ["merge"] },
    { id: "merge", type: "merge", unites: { id: "split" }, inputs: { outputs: "${{work.outputs}}" } },
  ],
};

export interface GraphRunFigures {
  /** Node tasks (or jobs) per second, from the start call to the result. */
  perSec: number;
  seconds: number;
  /** Redis commands (scripts' inner calls included) per node or job, INFO deltas over the run. */
  commandsPer: number;
  redisCpuMicrosPer: number;
  /** The last branch's end → the merge's start (Redis-recorded times for Flotilla; the workers' clock for BullMQ). */
  lastBranchEndToMergeStartMs: number;
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * Calls (`usec`: Redis µs) per unit of each command between two INFO commandstats readings, most
 * first, those under 0.01 calls (0.5 µs) left out. A script's µs include the commands it runs.
 */
export function callsPer(
  before: Map<string, [number, number]>,
  after: Map<string, [number, number]>,
  units: number,
  what: "calls" | "usec" = "calls",
): Record<string, number> {
  const at = what === "calls" ? 0 : 1;
  const rows = [...after]
    .map(([cmd, figures]) => [cmd, (figures[at] - (before.get(cmd)?.[at] ?? 0)) / units] as const)
    .filter(([cmd, per]) => per >= (what === "calls" ? 0.01 : 0.5) && cmd !== "info")
    .sort((a, b) => b[1] - a[1]);
  return Object.fromEntries(rows.map(([cmd, per]) => [cmd, round(per, what === "calls" ? 3 : 1)]));
}

/**
 * One Flotilla graph run of GRAPH_BENCH on the running graph workers: nodes/s from `startGraph` to
 * `result()`, Redis commands per node, and where the time between the branches and the merge goes
 * (every time read from the node tasks' records and the run's lifecycle stream: Redis's clock).
 */
export async function graphRun(client: GraphClient, admin: Redis, width: number) {
  const nodes = width + 2;
  const stats = await commandStats(admin);
  const before = await redisFigures(admin);
  const started = performance.now();
  const run = await client.startGraph(GRAPH_BENCH, { width });
  const result = await run.result({ timeoutMs: 300_000 });
  const seconds = (performance.now() - started) / 1000;
  const after = await redisFigures(admin);
  const statsAfter = await commandStats(admin);
  if (result.merge !== width) throw new Error(`the merge saw ${JSON.stringify(result.merge)} branches, not ${width}`);

  const status = await run.status();
  const of = (node: string) => status.nodes.filter((n) => n.node === node);
  const [split] = await client.engine.tasks.getMany(of("split").map((n) => n.taskId));
  const [merge] = await client.engine.tasks.getMany(of("merge").map((n) => n.taskId));
  const work = await client.engine.tasks.getMany(of("work").map((n) => n.taskId));
  if (work.length !== width || !split || !merge) throw new Error(`the run has ${work.length} work tasks (not ${width}), split ${!!split}, merge ${!!merge}`);
  const lastWorkEnd = Math.max(...work.map((t) => t!.completedAt!));
  const firstWorkStart = Math.min(...work.map((t) => t!.startedAt!));
  // advance-5.lua writes node-created for the merge in the step that records the last branch's end.
  // The run ended: its lifecycle events are replayed up to its run-finished.
  let mergeCreatedAt = Number.NaN;
  for await (const e of run.events({ timeoutMs: 10_000 })) if (e.type === "node-created" && e.node === "merge") mergeCreatedAt = e.ts;
  const figures: GraphRunFigures = {
    perSec: Math.round(nodes / seconds),
    seconds: round(seconds, 3),
    commandsPer: round((after.calls - before.calls) / nodes),
    redisCpuMicrosPer: Math.round((after.cpuMicros - before.cpuMicros) / nodes),
    lastBranchEndToMergeStartMs: merge.startedAt! - lastWorkEnd,
  };
  return {
    ...figures,
    // The same span in two parts: the hand-off of the last branch's end (advance-5.lua creates the
    // merge instance), then the merge task's create and claim.
    lastBranchEndToMergeCreatedMs: mergeCreatedAt - lastWorkEnd,
    mergeCreatedToStartMs: merge.startedAt! - mergeCreatedAt,
    // The fan-out: the split's end → the first branch's start (its advance, the branches' inputs, their tasks' creates, a claim).
    splitEndToFirstBranchStartMs: firstWorkStart - split.completedAt!,
    commandsPerNodeByCommand: callsPer(stats, statsAfter, nodes),
    redisMicrosPerNodeByCommand: callsPer(stats, statsAfter, nodes, "usec"),
  };
}

/**
 * One BullMQ flow of the same shape: `flowProducer.add` of a parent `merge` with `width` children
 * `work`, timed to the parent's completion; commands per job; the last child's `finishedOn` → the
 * parent's `processedOn` (both set by the workers, on this machine's clock).
 */
export async function flowRun(flow: FlowProducer, queues: { work: Queue; merge: Queue }, events: QueueEvents, admin: Redis, width: number) {
  const jobs = width + 1;
  const before = await redisFigures(admin);
  const started = performance.now();
  const tree = await flow.add({
    name: "merge",
    queueName: "merge",
    children: Array.from({ length: width }, (_, i) => ({ name: "work", queueName: "work", data: i })),
  });
  const merged = await tree.job.waitUntilFinished(events, 300_000);
  const seconds = (performance.now() - started) / 1000;
  const after = await redisFigures(admin);
  if (merged !== width) throw new Error(`the parent saw ${JSON.stringify(merged)} children, not ${width}`);
  const children = await Promise.all((tree.children ?? []).map((c) => Job.fromId(queues.work, c.job.id!)));
  const parent = await Job.fromId(queues.merge, tree.job.id!);
  if (children.length !== width || !parent) throw new Error(`the flow has ${children.length} children, not ${width}`);
  const lastChildEnd = Math.max(...children.map((j) => j!.finishedOn!));
  return {
    perSec: Math.round(jobs / seconds),
    seconds: round(seconds, 3),
    commandsPer: round((after.calls - before.calls) / jobs),
    redisCpuMicrosPer: Math.round((after.cpuMicros - before.cpuMicros) / jobs),
    lastBranchEndToMergeStartMs: parent.processedOn! - lastChildEnd,
  } satisfies GraphRunFigures;
}
