// BullMQ workers for the graph scenario's flow: no-op children on "work", and the parent on "merge"
// reading its children's values (the list a unites node gets), with BullMQ's defaults otherwise.
import { Worker } from "bullmq";

const url = new URL(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
const options = {
  connection: { host: url.hostname, port: Number(url.port || 6379) },
  prefix: process.env.BENCH_PREFIX,
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 50),
};
const work = new Worker("work", async () => null, options);
// One job: the parent (its slot is the only one beside the children's 50).
const merge = new Worker("merge", async (job) => Object.keys(await job.getChildrenValues()).length, { ...options, concurrency: 1 });
await Promise.all([work.waitUntilReady(), merge.waitUntilReady()]);
process.stdout.write("ready\n");
process.on("SIGTERM", () => void Promise.all([work.close(), merge.close()]).then(() => process.exit(0)));
