// A Flotilla worker process serving the bus scenario's subscriptions: one consumer in each of
// BENCH_GROUPS on BENCH_TOPIC, a handler that records publish → handler latency and does nothing else.
import { busWorker, subscribe } from "@flotilla/bus";
import { Worker } from "@flotilla/worker";
import { type BusBenchPayload, SampleRecorder } from "../bus-samples.ts";

const samples = new SampleRecorder();
const topic = process.env.BENCH_TOPIC ?? "bench.events";
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 50);
const subscriptions = (process.env.BENCH_GROUPS ?? "g1,g2,g3").split(",").map((name) =>
  subscribe(
    topic,
    (event) => {
      samples.record(event.payload as BusBenchPayload, event.publishedAt);
      return null;
    },
    { name, concurrency, from: "start" },
  ),
);

const worker = new Worker({
  redis: process.env.REDIS_URL,
  prefix: process.env.BENCH_PREFIX,
  // The worker also claims tasks from a queue (it needs one); nothing is submitted to it.
  blockMs: 1000,
  bus: busWorker({ webhooks: false, subscriptions }),
});
await worker.start();
process.stdout.write("ready\n");
process.on(
  "SIGTERM",
  () =>
    void worker
      .stop({ drainTimeoutMs: 2000 })
      .then(() => samples.report(process.env.REDIS_URL, process.env.BENCH_SAMPLES_KEY ?? "bench:bus:samples"))
      .then(() => process.exit(0)),
);
