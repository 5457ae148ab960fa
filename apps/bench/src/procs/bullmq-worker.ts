// A BullMQ worker process doing the same no-op work, with BullMQ's defaults otherwise.
import { Worker } from "bullmq";

const url = new URL(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
const sleepMs = Number(process.env.BENCH_SLEEP_MS ?? 0);
const lease = process.env.BENCH_LEASE_MS ? Number(process.env.BENCH_LEASE_MS) : undefined;
const worker = new Worker("bench", async () => (sleepMs ? new Promise((r) => setTimeout(() => r(null), sleepMs)) : null), {
  connection: { host: url.hostname, port: Number(url.port || 6379) },
  prefix: process.env.BENCH_PREFIX,
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 50),
  // The same recovery window as Flotilla's lease: lock and stalled-job check.
  ...(lease && { lockDuration: lease, stalledInterval: lease }),
});
await worker.waitUntilReady();
process.stdout.write("ready\n");
process.on("SIGTERM", () => void worker.close().then(() => process.exit(0)));
