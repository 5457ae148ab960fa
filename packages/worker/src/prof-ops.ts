import { Agent } from "@flotilla/agent";
import { createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { TaskStore } from "@flotilla/store";
import { Redis } from "ioredis";
import { FlotillaClient } from "../../client/src/index.ts";

const url = "redis://127.0.0.1:6379";
const admin = new Redis(url);
const redis = new Redis(url);
const evalsha = async () => { const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec((await admin.info("commandstats")) as string)!; return Number(m[2]); };
const prefix = `prof-${Date.now()}`;
const keys = createKeys(prefix);
const store = new TaskStore(redis, keys, DEFAULT_RETENTION);
const client = new FlotillaClient({ redis: url, prefix });
const noop = new Agent({ name: "noop", model: "scripted:noop" });
await client.submit(noop, 0, { queue: "bench" });
await store.claim("bench", "w", 10);
const tasks = 20000;
let u = await evalsha();
for (let i = 0; i < tasks; i += 1000) await client.submitMany(Array.from({ length: 1000 }, (_, j) => ({ agent: noop, input: i + j, options: { queue: "bench" } })));
let v = await evalsha(); console.log("create µs/task", ((v - u) / tasks).toFixed(2)); u = v;
const runs = [];
for (let i = 0; i < tasks; i += 50) runs.push(...(await store.claim("bench", "w", 50)));
v = await evalsha(); console.log("claim+start µs/task", ((v - u) / tasks).toFixed(2), runs.length); u = v;
for (let i = 0; i < runs.length; i += 50) {
  await store.settle("bench", "w", runs.slice(i, i + 50).map((r) => ({ taskId: (r as { taskId: string }).taskId, priority: r.priority, entryId: r.entryId, attempt: 1, agent: "noop", status: "COMPLETED" as const, result: null })));
}
v = await evalsha(); console.log("settle µs/task", ((v - u) / tasks).toFixed(2));
console.log(await admin.memory("USAGE", keys.task((runs[5] as { taskId: string }).taskId)), await admin.object("ENCODING", keys.task((runs[5] as { taskId: string }).taskId)));
console.log(await admin.hgetall(keys.task((runs[5] as { taskId: string }).taskId)));
await client.close();
for (;;) { const [c, ks] = await admin.scan(0, "MATCH", `${prefix}*`, "COUNT", 10000); if (ks.length) await admin.del(...ks); if (c === "0") break; }
admin.disconnect(); redis.disconnect();
