// A Flotilla worker process doing no-op work, for the benchmarks.
import { Worker } from "@flotilla/worker";

const worker = new Worker({
  redis: process.env.REDIS_URL,
  prefix: process.env.BENCH_PREFIX,
  queues: ["bench"],
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 50),
  executor: { execute: async () => null },
  blockMs: 1000,
});
await worker.start();
process.stdout.write("ready\n");
process.on("SIGTERM", () => void worker.stop({ drainTimeoutMs: 2000 }).then(() => process.exit(0)));
