// A BullMQ worker process of the fleet scenario: one BullMQ Worker per queue of BENCH_QUEUES, their
// concurrencies summing to BENCH_CONCURRENCY (50 over 8 queues: two get 7, six get 6, which two
// rotating with BENCH_INDEX so every queue gets the same share of the fleet), doing no-op work
// behind the fleet's gate (see fleet-gate.ts). Each queue has its own prefix,
// `<BENCH_PREFIX>:{<queue>}`, so on a cluster its keys share the slot of Flotilla's queue of that
// name. On SIGTERM it reports what it ran and exits.
import { Worker } from "bullmq";
import { Cluster } from "ioredis";
import { fleetGate } from "../fleet-gate.ts";

const queues = (process.env.BENCH_QUEUES ?? "bench").split(",");
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 50);
const index = Number(process.env.BENCH_INDEX ?? 0);
const nodes = process.env.REDIS_CLUSTER_NODES;
const url = new URL(process.env.REDIS_URL || "redis://127.0.0.1:6379");
// BullMQ duplicates a Cluster it is given for each Worker's own and blocking connections.
const connection = nodes
  ? new Cluster(nodes.split(","), { redisOptions: { maxRetriesPerRequest: null } })
  : { host: url.hostname, port: Number(url.port || 6379) };
const n = queues.length;
const share = (j: number) => Math.floor(concurrency / n) + ((((j - index) % n) + n) % n < concurrency % n ? 1 : 0);
const gate = fleetGate(concurrency);
const workers = queues
  .map((queue, j) => ({ queue, slots: share(j) }))
  .filter((q) => q.slots > 0)
  .map(({ queue, slots }) => new Worker(queue, gate.work, { connection, prefix: `${process.env.BENCH_PREFIX}:{${queue}}`, concurrency: slots }));
process.on(
  "SIGTERM",
  () =>
    void Promise.all(workers.map((w) => w.close())).then(() => {
      if (connection instanceof Cluster) connection.disconnect();
      gate.report();
      process.exit(0);
    }),
);
