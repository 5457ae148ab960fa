// A Flotilla worker process of the fleet scenario: one Worker over every queue of BENCH_QUEUES at
// BENCH_CONCURRENCY, doing no-op work behind the fleet's gate (see fleet-gate.ts); on SIGTERM it
// reports what it ran and exits.
import { Worker } from "@flotilla/worker";
import { fleetGate } from "../fleet-gate.ts";

const nodes = process.env.REDIS_CLUSTER_NODES;
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 50);
const listed = (process.env.BENCH_QUEUES ?? "bench").split(",");
// A worker claims from its queues in their listed order; BENCH_ROTATE starts process i's list at queue i.
const first = process.env.BENCH_ROTATE ? Number(process.env.BENCH_INDEX ?? 0) % listed.length : 0;
const gate = fleetGate(concurrency);
const worker = new Worker({
  redis: nodes ? { cluster: nodes.split(",") } : process.env.REDIS_URL,
  prefix: process.env.BENCH_PREFIX,
  queues: [...listed.slice(first), ...listed.slice(0, first)],
  concurrency,
  executor: { execute: gate.work },
  blockMs: 1000,
});
await worker.start();
process.on(
  "SIGTERM",
  () =>
    void worker.stop({ drainTimeoutMs: 2000 }).then(() => {
      gate.report();
      process.exit(0);
    }),
);
