// A Flotilla worker process serving the graph scenario's no-op node types, for the benchmarks.
import { defineNode, graphWorker } from "@flotilla/graph";
import { Worker } from "@flotilla/worker";

const nodes = [
  // The fan-out: one branch per item.
  defineNode({ type: "split", execute: (input: { width: number }) => Array.from({ length: input.width }, (_, i) => i) }),
  defineNode({ type: "work", execute: () => null }),
  // The unites node: its inputs are the list of every branch's output, read from the run's keys.
  defineNode({ type: "merge", execute: (input: { outputs: unknown[] }) => input.outputs.length }),
];

const worker = new Worker({
  redis: process.env.REDIS_URL,
  prefix: process.env.BENCH_PREFIX,
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 50),
  blockMs: 1000,
  graph: graphWorker({ nodes }),
});
await worker.start();
process.stdout.write("ready\n");
process.on("SIGTERM", () => void worker.stop({ drainTimeoutMs: 2000 }).then(() => process.exit(0)));
