import { Agent } from "@flotilla/agent";
import { FlotillaClient } from "@flotilla/client";
import { Redis } from "ioredis";
import { startWorkers, waitUntil } from "./harness.ts";

const url = "redis://127.0.0.1:6379";
const admin = new Redis(url);
const stats = async () => {
  const out: Record<string, [number, number]> = {};
  for (const m of ((await admin.info("commandstats")) as string).matchAll(/cmdstat_(\w+(?:\|\w+)?):calls=(\d+),usec=(\d+)/g)) out[m[1]!] = [Number(m[2]), Number(m[3])];
  return out;
};
const prefix = `prof-${Date.now()}`;
const drainOnly = !!process.env.DRAIN_ONLY;
const startW = () => startWorkers("flotilla", Number(process.env.PROCS ?? 1), { REDIS_URL: url, BENCH_PREFIX: prefix, BENCH_CONCURRENCY: "50", ...(process.env.PROF && { NODE_OPTIONS: "--cpu-prof --cpu-prof-dir=/tmp/prof" }) });
let stop = drainOnly ? undefined : await startW();
const client = new FlotillaClient({ redis: url, prefix });
const noop = new Agent({ name: "noop", model: "scripted:noop" });
const before = await stats();
const t = performance.now();
const tasks = Number(process.env.TASKS ?? 20000);
for (let i = 0; i < tasks; i += 1000) await client.submitMany(Array.from({ length: 1000 }, (_, j) => ({ agent: noop, input: i + j, options: { queue: "bench" } })));
let submitted = performance.now();
if (drainOnly) { stop = await startW(); submitted = performance.now(); }
await waitUntil(async () => { const d = await client.queueDepth("bench"); return d.waiting + d.inFlight + d.delayed === 0; }, 600000, "drain");
const end = performance.now();
const after = await stats();
const rows = Object.entries(after).map(([k, [c, u]]) => [k, (c - (before[k]?.[0] ?? 0)) / tasks, (u - (before[k]?.[1] ?? 0)) / tasks] as const).filter((r) => r[1] > 0.001).sort((a, b) => b[2] - a[2]);
for (const r of rows) console.log(r[0].padEnd(22), r[1].toFixed(3), r[2].toFixed(2));
console.log(JSON.stringify({ submitMs: Math.round(submitted - t), totalMs: Math.round(end - t), perSec: Math.round(tasks / ((end - t) / 1000)), drainPerSec: Math.round(tasks / ((end - submitted) / 1000)) }));
await client.close();
await stop!();
for (;;) { const [c, keys] = await admin.scan(0, "MATCH", `${prefix}*`, "COUNT", 10000); if (keys.length) await admin.del(...keys); if (c === "0") break; }
admin.disconnect();
