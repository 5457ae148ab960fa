// A BullMQ worker process doing the same no-op work, with BullMQ's defaults otherwise.
import { Worker } from "bullmq";

const url = new URL(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
const worker = new Worker("bench", async () => null, {
  connection: { host: url.hostname, port: Number(url.port || 6379) },
  prefix: process.env.BENCH_PREFIX,
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 50),
});
await worker.waitUntilReady();
process.stdout.write("ready\n");
process.on("SIGTERM", () => void worker.close().then(() => process.exit(0)));
