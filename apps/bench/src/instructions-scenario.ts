import { Broker } from "@flotilla/broker";
import { FlotillaClient } from "@flotilla/client";
import { createKeys, DEFAULT_RETENTION, newId, taskIdOf } from "@flotilla/core";
import { type NewTask, TaskStore } from "@flotilla/store";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { type CallgrindRedis, hasCallgrind, startCallgrindRedis } from "./callgrind-redis.ts";
import { type BenchContext, bySize, freshPrefix, noop } from "./drain.ts";
import { bullConnection, ratio, type System, startWorkers } from "./harness.ts";

/**
 * Redis instructions per no-op task (issue 19's Redis-CPU target, without the machine's noise): a
 * redis-server of its own under valgrind's callgrind, counted per phase. Both systems: create
 * (`submitMany` / `addBulk` of 1,000) and drain (one worker process at concurrency 50, as in
 * `throughput`). Flotilla also per script, called straight through the store: claim and start (50 a
 * call) and settle as COMPLETED (50 a call). Needs valgrind; skipped (with a reason) without it.
 */
export async function instructions(ctx: BenchContext) {
  if (!hasCallgrind()) return [{ scenario: "instructions", skipped: "valgrind (callgrind_control) is not on the PATH" }];
  const tasks = bySize(ctx, { smoke: 100, quick: 500, full: 2000 });
  const server = await startCallgrindRedis();
  try {
    const flotilla = { ...(await endToEnd(server, "flotilla", tasks)), ...(await perScript(server, tasks)) };
    const bullmq = await endToEnd(server, "bullmq", tasks);
    return [
      {
        scenario: "instructions",
        tasks,
        unit: "Redis instructions per task",
        flotilla,
        bullmq,
        ratio: ratio(flotilla.total, bullmq.total),
        note: "valgrind callgrind's instruction count of redis-server (Redis 7 as installed), create + drain; the same for the same work on any load",
      },
    ];
  } finally {
    await server.stop();
  }
}

async function endToEnd(server: CallgrindRedis, system: System, tasks: number) {
  const prefix = freshPrefix(system);
  const client = system === "flotilla" ? new FlotillaClient({ redis: server.url, prefix }) : undefined;
  const queue = system === "bullmq" ? new Queue("bench", { connection: bullConnection(server.url), prefix }) : undefined;
  // One task first, outside the count: the scripts are loaded, the queue made.
  if (client) await client.submit(noop, "warm", { queue: "bench" });
  else await queue!.add("warm", "warm");
  server.zero();
  for (let i = 0; i < tasks; i += 1000) {
    const n = Math.min(1000, tasks - i);
    if (client) await client.submitMany(Array.from({ length: n }, (_, j) => ({ agent: noop, input: i + j, options: { queue: "bench" } })));
    else await queue!.addBulk(Array.from({ length: n }, (_, j) => ({ name: "noop", data: i + j })));
  }
  const create = server.count();
  const stop = await startWorkers(system, 1, { REDIS_URL: server.url, BENCH_PREFIX: prefix, BENCH_CONCURRENCY: "50" });
  server.zero();
  for (;;) {
    if (client) {
      const d = await client.fleet.queueDepth("bench");
      if (d.waiting + d.inFlight + d.delayed === 0) break;
    } else if ((await queue!.getCompletedCount()) >= tasks + 1) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const drain = server.count();
  await stop();
  await client?.close();
  await queue?.close();
  const per = (n: number) => Math.round(n / tasks);
  return { create: per(create), drain: per(drain), total: per(create) + per(drain) };
}

/** Flotilla's scripts one at a time, called through the store: what each costs a task. */
async function perScript(server: CallgrindRedis, tasks: number) {
  const redis = new Redis(server.url);
  const keys = createKeys(freshPrefix("flotilla"));
  const store = new TaskStore(redis, keys, DEFAULT_RETENTION);
  await new Broker(redis, keys).ensureGroup("bench");
  const task = (i: number): NewTask => ({ taskId: taskIdOf("bench", newId()), queue: "bench", agent: "noop", payload: String(i), maxRetries: 0 }) as NewTask;
  const complete = (runs: Awaited<ReturnType<TaskStore["claim"]>>) =>
    runs.flatMap((r) =>
      r.kind === "run"
        ? [{ taskId: r.taskId, priority: r.priority, entryId: r.entryId, attempt: r.attempt, agent: "noop", status: "COMPLETED" as const, result: null }]
        : [],
    );
  // Warm: every script loaded once.
  await store.createMany("bench", [task(-1)]);
  await store.settle("bench", "w", complete(await store.claim("bench", "w", 1)));
  server.zero();
  for (let i = 0; i < tasks; i += 1000)
    await store.createMany(
      "bench",
      Array.from({ length: Math.min(1000, tasks - i) }, (_, j) => task(i + j)),
    );
  const create = server.count();
  server.zero();
  const started: Awaited<ReturnType<TaskStore["claim"]>> = [];
  for (let i = 0; i < tasks; i += 50) started.push(...(await store.claim("bench", "w", 50)));
  const claim = server.count();
  server.zero();
  for (let i = 0; i < started.length; i += 50) await store.settle("bench", "w", complete(started.slice(i, i + 50)));
  const settle = server.count();
  redis.disconnect();
  const per = (n: number) => Math.round(n / tasks);
  return { scripts: { create: per(create), claim: per(claim), settle: per(settle) } };
}
