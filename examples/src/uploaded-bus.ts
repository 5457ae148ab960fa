// The topic event bus: one "file.uploaded" event reaches two agents — an indexer and a virus
// scanner, each its own subscription (consumer group) — and each one's reply comes back on the
// "file.processed" topic with the upload's correlationId. Offline with the scripted model; with a
// real provider when OPENAI_API_KEY or ANTHROPIC_API_KEY is set (or FLOTILLA_EXAMPLE_MODEL names any model).
//   pnpm --filter @flotilla/examples uploaded-bus
import { Agent } from "@flotilla/agent";
import { Bus, type BusEvent, busWorker, subscribe } from "@flotilla/bus";
import { purgePrefix } from "@flotilla/testing";
import { Worker } from "@flotilla/worker";
import { Redis } from "ioredis";
import { exampleModel } from "./setup.ts";

const model = exampleModel();
const indexer = new Agent({
  name: "indexer",
  model,
  instructions: "You index an uploaded file: answer with three keywords for it, comma-separated.",
  options: { scripted: { reply: "keywords for {input}: quarterly, revenue, forecast" } },
});
const scanner = new Agent({
  name: "virus-scan",
  model,
  instructions: "You check an uploaded file name for signs of malware and answer clean or suspicious, with one reason.",
  options: { scripted: { reply: "{input}: clean (a PDF from a known sender)" } },
});

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const prefix = `flotilla-example-${process.pid}`;
// One worker serving both subscriptions (each event of each becomes an agent task, run by this worker
// or any other), and a third subscription that prints every reply as it arrives.
const replies: BusEvent[] = [];
let allIn: () => void = () => {};
const done = new Promise<void>((resolve) => {
  allIn = resolve;
});
const worker = new Worker({
  redis: url,
  prefix,
  agents: [indexer, scanner],
  bus: busWorker({
    subscriptions: [
      subscribe("file.uploaded", indexer, { name: "indexer" }),
      subscribe("file.uploaded", scanner, { name: "virus-scan" }),
      subscribe(
        "file.processed",
        (reply) => {
          replies.push(reply);
          console.log(`← ${reply.source ?? "?"} answered ${reply.correlationId}: ${(reply.payload as { text: string }).text}`);
          if (replies.length === 2) allIn();
          return null;
        },
        { name: "printer", from: "start" },
      ),
    ],
  }),
});
await worker.start();
const bus = new Bus({ redis: url, prefix, source: "uploads-service" });

try {
  const id = await bus.publish("file.uploaded", "q3-report.pdf", { correlationId: "upload-42", replyTo: "file.processed" });
  console.log(`→ published file.uploaded ${id} (correlationId upload-42)`);
  await done;
  // Each reply names the event it answers (causationId) and came from its subscription's agent task.
  for (const r of replies) console.log(`  reply ${r.id}: causationId ${r.causationId === id ? "= the upload" : r.causationId}`);
  // A reply is published before its event is acknowledged: wait for both acks before printing counts.
  while (!(await bus.groups("file.uploaded")).every((g) => g.counts.acked === 1)) await new Promise((r) => setTimeout(r, 50));
  for (const g of await bus.groups("file.uploaded"))
    console.log(`subscription ${g.name}: delivered ${g.counts.delivered}, acked ${g.counts.acked}, dead ${g.counts.dead}`);
  // request(): publish and wait for the correlated reply (the first subscription to answer).
  const answer = await bus.request("file.uploaded", "holiday-photos.zip", { timeoutMs: 30_000 });
  console.log(`request → ${(answer.payload as { text: string }).text}`);
} finally {
  await bus.close();
  await worker.stop();
  const redis = new Redis(url);
  await purgePrefix(redis, prefix);
  redis.disconnect();
}
