import { FlotillaClient } from "@flotilla/client";
import { scanPrefix } from "@flotilla/testing";
import { Queue, QueueEvents } from "bullmq";
import { agentTaskBytes } from "./agent-task-bytes.ts";
import { bus } from "./bus-scenario.ts";
import { type BenchContext, bySize, drain, freshPrefix, noop } from "./drain.ts";
import { fleet } from "./fleet-scenario.ts";
import { gateway } from "./gateway-scenario.ts";
import { graph } from "./graph-scenario.ts";
import { bullConnection, commandStats, newAdmin, percentiles, ratio, redisFigures, type System, startWorkers, waitUntil } from "./harness.ts";
import { instructions } from "./instructions-scenario.ts";
import { tokens } from "./tokens-scenario.ts";

export type { BenchContext } from "./drain.ts";

export async function throughput(ctx: BenchContext) {
  const tasks = bySize(ctx, { smoke: 400, quick: 2000, full: 20_000 });
  const out = [];
  for (const procs of [1, 4]) {
    const flotilla = await drain(ctx, "flotilla", tasks, procs, 50);
    const bullmq = await drain(ctx, "bullmq", tasks, procs, 50);
    out.push({ scenario: "throughput", tasks, procs, concurrency: 50, flotilla, bullmq, ratio: ratio(flotilla.tasksPerSec, bullmq.tasksPerSec) });
  }
  return out;
}

/** Single-call submit rate from one process (no workers running), and bulk submit. */
export async function submit(ctx: BenchContext) {
  const single = bySize(ctx, { smoke: 200, quick: 1000, full: 5000 });
  const bulk = bySize(ctx, { smoke: 1000, quick: 5000, full: 20_000 });
  const fPrefix = freshPrefix("flotilla");
  const client = new FlotillaClient({ redis: ctx.url, prefix: fPrefix });
  await client.submit(noop, "warm", { queue: "bench" });
  let t = performance.now();
  for (let i = 0; i < single; i++) await client.submit(noop, i, { queue: "bench" });
  const fSingle = single / ((performance.now() - t) / 1000);
  t = performance.now();
  for (let i = 0; i < bulk; i += 1000) {
    await client.submitMany(Array.from({ length: 1000 }, (_, j) => ({ agent: noop, input: i + j, options: { queue: "bench" } })));
  }
  const fBulk = bulk / ((performance.now() - t) / 1000);
  await client.close();

  const queue = new Queue("bench", { connection: bullConnection(ctx.url), prefix: freshPrefix("bullmq") });
  await queue.add("warm", "warm");
  t = performance.now();
  for (let i = 0; i < single; i++) await queue.add("noop", i);
  const bSingle = single / ((performance.now() - t) / 1000);
  t = performance.now();
  for (let i = 0; i < bulk; i += 1000) await queue.addBulk(Array.from({ length: 1000 }, (_, j) => ({ name: "noop", data: i + j })));
  const bBulk = bulk / ((performance.now() - t) / 1000);
  await queue.close();
  const result = (mode: string, tasks: number, ours: number, theirs: number) => ({
    scenario: "submit",
    mode,
    tasks,
    flotilla: { perSec: Math.round(ours) },
    bullmq: { perSec: Math.round(theirs) },
    ratio: ratio(ours, theirs),
  });
  return [result("single", single, fSingle, bSingle), result("bulk", bulk, fBulk, bBulk)];
}

/** One task at a time: submit → result resolved (and, for Flotilla, submit → first streamed event). */
export async function latency(ctx: BenchContext) {
  const runsCount = bySize(ctx, { smoke: 50, quick: 200, full: 2000 });
  const fPrefix = freshPrefix("flotilla");
  let stop = await startWorkers("flotilla", 1, { REDIS_URL: ctx.url, BENCH_PREFIX: fPrefix, BENCH_CONCURRENCY: "1" });
  const client = new FlotillaClient({ redis: ctx.url, prefix: fPrefix });
  const admin = newAdmin(ctx.url);
  const fResult: number[] = [];
  const fFirst: number[] = [];
  let fCalls = 0;
  for (let i = 0; i < runsCount + 20; i++) {
    // Commands per task with the worker idle between tasks (each submitted after the last ended),
    // counted over the timed runs: every command either side sends, the client's included.
    const before = i === 20 ? await redisFigures(admin) : undefined;
    const t = performance.now();
    const handle = await client.submit(noop, i, { queue: "bench" });
    await handle.result();
    if (i >= 20) fResult.push(performance.now() - t);
    if (before) fCalls -= before.calls;
  }
  fCalls += (await redisFigures(admin)).calls;
  for (let i = 0; i < Math.min(runsCount, 500); i++) {
    const t = performance.now();
    const handle = await client.submit(noop, i, { queue: "bench" });
    for await (const _ of handle.stream()) {
      fFirst.push(performance.now() - t);
      break;
    }
    await handle.result();
  }
  await client.close();
  await stop();

  const bPrefix = freshPrefix("bullmq");
  stop = await startWorkers("bullmq", 1, { REDIS_URL: ctx.url, BENCH_PREFIX: bPrefix, BENCH_CONCURRENCY: "1" });
  const queue = new Queue("bench", { connection: bullConnection(ctx.url), prefix: bPrefix });
  const events = new QueueEvents("bench", { connection: bullConnection(ctx.url), prefix: bPrefix });
  await events.waitUntilReady();
  const bResult: number[] = [];
  let bCalls = 0;
  for (let i = 0; i < runsCount + 20; i++) {
    const before = i === 20 ? await redisFigures(admin) : undefined;
    const t = performance.now();
    const job = await queue.add("noop", i);
    await job.waitUntilFinished(events);
    if (i >= 20) bResult.push(performance.now() - t);
    if (before) bCalls -= before.calls;
  }
  bCalls += (await redisFigures(admin)).calls;
  admin.disconnect();
  await events.close();
  await queue.close();
  await stop();
  const f = percentiles(fResult);
  const b = percentiles(bResult);
  return [
    {
      scenario: "latency",
      runs: runsCount,
      unit: "ms",
      // The INFO reads that count them are 3 commands each side, left in (under 0.01 a task over 500 runs).
      flotilla: { submitToResult: f, submitToFirstEvent: percentiles(fFirst), commandsPerTask: Math.round((fCalls / runsCount) * 100) / 100 },
      bullmq: { submitToResult: b, commandsPerTask: Math.round((bCalls / runsCount) * 100) / 100 },
      ratioP50: ratio(f.p50, b.p50),
      ratioP99: ratio(f.p99, b.p99),
    },
  ];
}

/** 1,000 concurrent tasks each emitting 200 text events, all consumed by stream() in this one process. */
export async function streaming(ctx: BenchContext) {
  const tasks = bySize(ctx, { smoke: 50, quick: 200, full: 1000 });
  const perTask = 200;
  const prefix = freshPrefix("flotilla");
  const stop = await startWorkers("flotilla", 2, {
    REDIS_URL: ctx.url,
    BENCH_PREFIX: prefix,
    BENCH_CONCURRENCY: String(tasks / 2),
    BENCH_EVENTS: String(perTask),
  });
  const client = new FlotillaClient({ redis: ctx.url, prefix });
  const latencies: number[] = [];
  let received = 0;
  let broken = 0;
  const admin = newAdmin(ctx.url);
  const redisBefore = await redisFigures(admin);
  const workersBefore = stop.cpuSeconds();
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  const handles = await client.submitMany(Array.from({ length: tasks }, (_, i) => ({ agent: noop, input: i, options: { queue: "bench" } })));
  await Promise.all(
    handles.map(async (h) => {
      let expected = 1;
      let texts = 0;
      for await (const e of h.stream()) {
        if (e.seq !== expected++) broken++;
        if (e.type === "text") {
          texts++;
          latencies.push(Date.now() - e.ts);
        }
        received++;
      }
      if (texts !== perTask) broken++;
    }),
  );
  const clientCpu = process.cpuUsage(clientBefore);
  const cpuSeconds = {
    redis: Math.round(((await redisFigures(admin)).cpuMicros - redisBefore.cpuMicros) / 1e4) / 100,
    workers: Math.round((stop.cpuSeconds() - workersBefore) * 100) / 100,
    client: Math.round((clientCpu.user + clientCpu.system) / 1e4) / 100,
  };
  admin.disconnect();
  const seconds = (performance.now() - started) / 1000;
  await client.close();
  await stop();
  const textEvents = tasks * perTask;
  return [
    {
      scenario: "streaming",
      tasks,
      eventsPerTask: perTask,
      flotilla: {
        eventsPerSec: Math.round(received / seconds),
        textEventsPerSec: Math.round(textEvents / seconds),
        seconds: Math.round(seconds * 1000) / 1000,
        eventLatencyMs: percentiles(latencies),
        lostOrOutOfOrder: broken,
        received,
        cpuSeconds,
      },
      bullmq: null,
      note: "BullMQ has no per-job event stream to compare with",
    },
  ];
}

/** kill -9 a worker holding 50 in-flight tasks: time until all 50 complete on another worker. */
export async function recovery(ctx: BenchContext) {
  const tasks = 50;
  const leaseMs = 2000;
  const sleepMs = 3000;
  const measure = async (system: System) => {
    const prefix = freshPrefix(system);
    const env = {
      REDIS_URL: ctx.url,
      BENCH_PREFIX: prefix,
      BENCH_CONCURRENCY: String(tasks),
      BENCH_SLEEP_MS: String(sleepMs),
      BENCH_LEASE_MS: String(leaseMs),
    };
    const victim = await startWorkers(system, 1, env);
    let inFlight: () => Promise<number>;
    let done: () => Promise<boolean>;
    let close: () => Promise<void>;
    if (system === "flotilla") {
      const client = new FlotillaClient({ redis: ctx.url, prefix });
      const handles = await client.submitMany(Array.from({ length: tasks }, (_, i) => ({ agent: noop, input: i, options: { queue: "bench" } })));
      inFlight = async () => (await client.fleet.queueDepth("bench")).inFlight;
      done = async () => (await Promise.all(handles.map((h) => h.status()))).every((s) => s.status === "COMPLETED");
      close = () => client.close();
    } else {
      const queue = new Queue("bench", { connection: bullConnection(ctx.url), prefix });
      await queue.addBulk(Array.from({ length: tasks }, (_, i) => ({ name: "noop", data: i })));
      inFlight = () => queue.getActiveCount();
      done = async () => (await queue.getCompletedCount()) >= tasks;
      close = () => queue.close();
    }
    await waitUntil(async () => (await inFlight()) === tasks, 30_000, `${system}: every task in flight`);
    await victim.kill9();
    const killedAt = performance.now();
    const rescuer = await startWorkers(system, 1, env);
    await waitUntil(done, 120_000, `${system}: recovery`);
    const seconds = (performance.now() - killedAt) / 1000;
    await rescuer();
    await close();
    return { secondsToRecoverAll: Math.round(seconds * 1000) / 1000 };
  };
  const flotilla = await measure("flotilla");
  const bullmq = await measure("bullmq");
  return [
    {
      scenario: "recovery",
      tasks,
      leaseMs,
      taskMs: sleepMs,
      flotilla,
      bullmq,
      ratio: ratio(bullmq.secondsToRecoverAll, flotilla.secondsToRecoverAll),
      note: "ratio is BullMQ's time ÷ Flotilla's (above 1: Flotilla recovers sooner); both given the same lease / lock and stalled-check window",
    },
  ];
}

/**
 * What a completed task leaves in Redis: memory and commands per task (INFO deltas), keys without a
 * TTL once every task ended, and memory per stored event.
 */
export async function footprint(ctx: BenchContext) {
  const tasks = bySize(ctx, { smoke: 200, quick: 1000, full: 5000 });
  const admin = newAdmin(ctx.url);
  const prefix = freshPrefix("flotilla");
  const flotilla = await drain(ctx, "flotilla", tasks, 1, 50, { prefix });
  const bullmq = await drain(ctx, "bullmq", tasks, 1, 50);
  // Keys of the Flotilla run with no TTL: per-task keys must have none; the rest are per queue.
  const noTtl: string[] = [];
  let perTaskNoTtl = 0;
  for await (const keys of scanPrefix(admin, prefix)) {
    const pipeline = admin.pipeline();
    for (const k of keys) pipeline.pttl(k);
    const ttls = (await pipeline.exec()) ?? [];
    keys.forEach((k, i) => {
      if (ttls[i]?.[1] !== -1) return;
      if (/:(task|stream):\{/.test(k)) perTaskNoTtl++;
      else noTtl.push(k.slice(prefix.length + 1));
    });
  }
  // Memory per stored event: tasks that each publish 200 text events, kept in their event streams.
  const eventsPrefix = freshPrefix("flotilla");
  const stop = await startWorkers("flotilla", 1, { REDIS_URL: ctx.url, BENCH_PREFIX: eventsPrefix, BENCH_CONCURRENCY: "50", BENCH_EVENTS: "200" });
  const client = new FlotillaClient({ redis: ctx.url, prefix: eventsPrefix });
  const eventTasks = bySize(ctx, { smoke: 20, quick: 50, full: 200 });
  const before = await redisFigures(admin);
  const handles = await client.submitMany(Array.from({ length: eventTasks }, (_, i) => ({ agent: noop, input: i, options: { queue: "bench" } })));
  await Promise.all(handles.map((h) => h.result()));
  const after = await redisFigures(admin);
  await client.close();
  await stop();
  const bytesPerTaskWithEvents = (after.memory - before.memory) / eventTasks;
  const agentTask = await agentTaskBytes(ctx.url, freshPrefix("flotilla"), admin, bySize(ctx, { smoke: 100, quick: 500, full: 2000 }));
  admin.disconnect();
  return [
    {
      scenario: "footprint",
      tasks,
      flotilla: {
        commandsPerTask: flotilla.commandsPerTask,
        bytesPerTask: flotilla.bytesPerTask,
        perTaskKeysWithoutTtl: perTaskNoTtl,
        // The queue's own tag becomes {queue}; the fleet-wide tags ({fleet}, {health}) stay as they are.
        longLivedKeys: [...new Set(noTtl.map((k) => k.replace(/\{(?!fleet\}|health\})[^}]*\}/, "{queue}")))].sort(),
        bytesPerStoredEvent: Math.round((bytesPerTaskWithEvents - flotilla.bytesPerTask) / 200),
        // What users pay: a real agent task (scripted:noop) through the flotilla-worker app, record
        // and event stream kept as by default.
        bytesPerAgentTask: agentTask.bytes,
        // The same once the streams expire (1 h): what each of those tasks costs for the rest of its 24 h.
        bytesPerAgentTaskOnceStreamsExpire: agentTask.onceStreamsExpire,
      },
      bullmq: { commandsPerTask: bullmq.commandsPerTask, bytesPerTask: bullmq.bytesPerTask },
      ratioCommands: ratio(flotilla.commandsPerTask, bullmq.commandsPerTask),
      ratioBytes: ratio(flotilla.bytesPerTask, bullmq.bytesPerTask),
    },
  ];
}

/**
 * Where Redis time goes for Flotilla: submit 20,000 no-op tasks, drain them with one worker, and
 * report calls and µs per task of each command (INFO commandstats deltas; a script's own line
 * includes the commands it runs).
 */
export async function profile(ctx: BenchContext) {
  const tasks = bySize(ctx, { smoke: 1000, quick: 5000, full: 20_000 });
  const admin = newAdmin(ctx.url);
  const before = await commandStats(admin);
  const result = await drain(ctx, "flotilla", tasks, 1, 50);
  const after = await commandStats(admin);
  admin.disconnect();
  const perTask = [...after]
    .map(([cmd, [calls, usec]]) => ({ cmd, calls: (calls - (before.get(cmd)?.[0] ?? 0)) / tasks, usec: (usec - (before.get(cmd)?.[1] ?? 0)) / tasks }))
    .filter((r) => r.calls >= 0.005 && !["info", "scan", "pttl"].includes(r.cmd))
    .sort((a, b) => b.usec - a.usec)
    .map((r) => ({ cmd: r.cmd, callsPerTask: Math.round(r.calls * 1000) / 1000, usecPerTask: Math.round(r.usec * 100) / 100 }));
  return [{ scenario: "profile", tasks, flotilla: { ...result, commands: perTask }, note: "evalsha's µs include the commands its scripts run" }];
}

export const scenarios = { throughput, submit, latency, streaming, recovery, footprint, profile, instructions, graph, bus, gateway, fleet, tokens } as const;
