// The bus scenario's peer: plain ioredis consumers, one in each of BENCH_GROUPS on the stream
// BENCH_STREAM. Each reads up to BENCH_CONCURRENCY entries (XREADGROUP … BLOCK), parses each
// payload, records its publish → handler latency (the entry id's ms) and acknowledges the batch
// with one XACK: the least a consumer group consumer does.
import { hostname } from "node:os";
import { Redis } from "ioredis";
import { type BusBenchPayload, SampleRecorder } from "../bus-samples.ts";

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const stream = process.env.BENCH_STREAM ?? "bench:stream";
const count = Number(process.env.BENCH_CONCURRENCY ?? 50);
const groups = (process.env.BENCH_GROUPS ?? "g1,g2,g3").split(",");
const consumer = `${hostname()}-${process.pid}`;
const samples = new SampleRecorder();
const commands = new Redis(url);
let running = true;

for (const group of groups) {
  await commands.xgroup("CREATE", stream, group, "0", "MKSTREAM").catch((err: Error) => {
    if (!err.message.startsWith("BUSYGROUP")) throw err;
  });
}

/** One group's consumer: its own connection for the blocking reads, acknowledgements on the shared one. */
async function consume(group: string, reader: Redis): Promise<void> {
  while (running) {
    const reply = (await reader.xreadgroup("GROUP", group, consumer, "COUNT", count, "BLOCK", 1000, "STREAMS", stream, ">").catch(() => null)) as Array<
      [string, Array<[string, string[]]>]
    > | null;
    const entries = reply?.[0]?.[1] ?? [];
    if (entries.length === 0) continue;
    for (const [id, fields] of entries) {
      samples.record(JSON.parse(fields[fields.indexOf("d") + 1]!) as BusBenchPayload, Number(id.slice(0, id.indexOf("-"))));
    }
    await commands.xack(stream, group, ...entries.map(([id]) => id));
  }
}

const readers = groups.map(() => new Redis(url));
const loops = groups.map((group, i) => consume(group, readers[i]!));
process.stdout.write("ready\n");
process.on("SIGTERM", () => {
  running = false;
  for (const r of readers) r.disconnect();
  void Promise.all(loops)
    .then(() => samples.report(url, process.env.BENCH_SAMPLES_KEY ?? "bench:bus:samples"))
    .then(() => {
      commands.disconnect();
      process.exit(0);
    });
});
