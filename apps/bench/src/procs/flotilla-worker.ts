// A Flotilla worker process doing no-op work, for the benchmarks.
import type { ExecutionContext } from "@flotilla/worker";
import { Worker } from "@flotilla/worker";

const events = Number(process.env.BENCH_EVENTS ?? 0);
const sleepMs = Number(process.env.BENCH_SLEEP_MS ?? 0);
/** No-op work, or (BENCH_EVENTS) that many text events as fast as possible, yielding every 10 as a model would. */
async function work(ctx: ExecutionContext) {
  if (sleepMs) await new Promise((r) => setTimeout(r, sleepMs));
  for (let i = 0; i < events; i++) {
    ctx.emit({ type: "text", delta: "x" });
    if (i % 10 === 9) await new Promise((r) => setImmediate(r));
  }
  return null;
}

const worker = new Worker({
  redis: process.env.REDIS_URL,
  prefix: process.env.BENCH_PREFIX,
  queues: ["bench"],
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 50),
  executor: { execute: work },
  blockMs: 1000,
  ...(process.env.BENCH_LEASE_MS && { leaseMs: Number(process.env.BENCH_LEASE_MS) }),
});
await worker.start();
process.stdout.write("ready\n");
process.on("SIGTERM", () => void worker.stop({ drainTimeoutMs: 2000 }).then(() => process.exit(0)));
