// Prototype: Redis instructions per task of each hot-path script, alone (redis-server under callgrind).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "@flotilla/broker";
import { createKeys, DEFAULT_RETENTION, newId, taskIdOf } from "@flotilla/core";

const newTaskId = (q: string) => taskIdOf(q, newId());

import { TaskStore } from "@flotilla/store";
import { Redis } from "ioredis";

const tasks = Number(process.env.TASKS ?? 2000);
const batch = Number(process.env.BATCH ?? 50);
const port = 7000 + Math.floor(Math.random() * 1000);
const dir = mkdtempSync(join(tmpdir(), "icount-"));
const child = spawn(
  "valgrind",
  [
    "--tool=callgrind",
    `--callgrind-out-file=${dir}/cg.out.%p`,
    process.env.REDIS_BIN ?? "redis-server",
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    dir,
  ],
  { stdio: "ignore" },
);
const url = `redis://127.0.0.1:${port}`;
for (;;) {
  const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  probe.on("error", () => {});
  const ok = await probe
    .connect()
    .then(() => probe.ping())
    .then(
      () => true,
      () => false,
    );
  probe.disconnect();
  if (ok) break;
  await new Promise((r) => setTimeout(r, 300));
}
const redis = new Redis(url);
const pid = child.pid!;
function phase(): number {
  const before = new Set(readdirSync(dir));
  execFileSync("callgrind_control", ["-d", String(pid)], { stdio: "ignore" });
  const file = readdirSync(dir).find((f) => f.startsWith("cg.out") && !before.has(f))!;
  return Number(/^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, file), "utf8"))![1]);
}
const zero = () => execFileSync("callgrind_control", ["-z", String(pid)], { stdio: "ignore" });
const keys = createKeys(`ip${Date.now()}`);
const store = new TaskStore(redis, keys, DEFAULT_RETENTION);
const broker = new Broker(redis, keys);
await broker.ensureGroup("bench");
// Warm the scripts (EVAL once) outside the measurement.
await store.createMany("bench", [{ taskId: newTaskId("bench"), queue: "bench", agent: "noop", payload: "0", maxRetries: 0 } as never]);
const warm = await store.claim("bench", "w1", 1);
await store.settle(
  "bench",
  "w1",
  warm.flatMap((r) =>
    r.kind === "run" ? [{ taskId: r.taskId, priority: r.priority, entryId: r.entryId, attempt: r.attempt, status: "COMPLETED", result: null } as never] : [],
  ),
);
const out: Record<string, number> = {};
zero();
for (let i = 0; i < tasks; i += 1000) {
  await store.createMany(
    "bench",
    Array.from(
      { length: Math.min(1000, tasks - i) },
      (_, j) => ({ taskId: newTaskId("bench"), queue: "bench", agent: "noop", payload: String(i + j), maxRetries: 0 }) as never,
    ),
  );
}
out.create = phase() / tasks;
zero();
const started = [];
for (let i = 0; i < tasks; i += batch) started.push(...(await store.claim("bench", "w1", batch)));
out.claim = phase() / tasks;
const runs = started.flatMap((r) => (r.kind === "run" ? [r] : []));
zero();
for (let i = 0; i < runs.length; i += batch) {
  await store.settle(
    "bench",
    "w1",
    runs
      .slice(i, i + batch)
      .map((r) => ({ taskId: r.taskId, priority: r.priority, entryId: r.entryId, attempt: r.attempt, status: "COMPLETED", result: null }) as never),
  );
}
out.settle = phase() / tasks;
redis.disconnect();
child.kill("SIGKILL");
if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
else console.log(dir);
console.log(
  JSON.stringify({
    tasks,
    batch,
    ran: runs.length,
    ...Object.fromEntries(Object.entries(out).map(([k, v]) => [k, Math.round(v)])),
    total: Math.round(out.create! + out.claim! + out.settle!),
  }),
);
process.exit(0);
