// The tokens scenario's two runs, shaped alike: worker processes and follower processes on the
// harness's Redis, every follower subscribed before the first task starts, and the measured window
// from just before the tasks start to the last follower's last token. Flotilla: scripted agents
// through the real agent executor, followed with `handle.stream()`. Plain: the same pacing with
// `XADD` + `SPUBLISH` per token from plain ioredis, followed by `SSUBSCRIBE`.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FlotillaClient } from "@flotilla/client";
import { scripted } from "@flotilla/testing";
import type { BenchContext } from "./drain.ts";
import { machineTicks } from "./fleet-procs.ts";
import { callsPer } from "./graph-runs.ts";
import { commandStats, newAdmin, redisFigures } from "./harness.ts";
import { plainTaskKeys } from "./tokens-plain-keys.ts";
import { startTokenProc, stopAll, type TokenProc } from "./tokens-procs.ts";
import { reply } from "./tokens-samples.ts";
import { tokenFigures } from "./tokens-stats.ts";

export interface TokenOptions {
  tasks: number;
  tokensPerTask: number;
  tokenDelayMs: number;
  workerProcs: number;
  followerProcs: number;
  /** Time from submit (Flotilla) or the producers' start (plain) until the tasks start: the followers attach meanwhile. */
  leadMs: number;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

/** What every process of a run is told. */
const common = (ctx: BenchContext, o: TokenOptions, prefix: string, dir: string) => ({
  REDIS_URL: ctx.url,
  BENCH_PREFIX: prefix,
  BENCH_TASKS: String(o.tasks),
  BENCH_TOKENS: String(o.tokensPerTask),
  BENCH_SAMPLES_DIR: dir,
});

/** `n` processes of `name`, process i told BENCH_INDEX i of BENCH_OF n and named `<role>-<i>` (its samples' files). */
const startRole = (name: string, role: string, n: number, env: Record<string, string>) =>
  Promise.all(range(n).map((i) => startTokenProc(name, { ...env, BENCH_INDEX: String(i), BENCH_OF: String(n), BENCH_NAME: `${role}-${i}` })));

/**
 * The measured window: from just before `startsAt` (performance.now(); every process ready) until every
 * follower said "done" (or the deadline, after which they are stopped and what they had counts);
 * CPU of each side and of the whole machine, Redis's commands. Then every process is stopped, so
 * each writes its samples, and the samples are joined.
 */
async function measure(ctx: BenchContext, o: TokenOptions, dir: string, startsAt: number, workers: TokenProc[], followers: TokenProc[]) {
  const admin = newAdmin(ctx.url);
  try {
    // The idle wait for the start is left out of the window (its CPU figures and the machine's share).
    await new Promise((r) => setTimeout(r, Math.max(0, startsAt - 200 - performance.now())));
    const cpu = (procs: TokenProc[]) => procs.reduce((s, p) => s + p.cpuSeconds(), 0);
    const before = {
      redis: await redisFigures(admin),
      stats: await commandStats(admin),
      workers: cpu(workers),
      followers: cpu(followers),
      ticks: machineTicks(),
    };
    // Ten times the paced duration: an overloaded machine slows the pace (each token's sleep starts late).
    const deadlineMs = o.leadMs + o.tokensPerTask * o.tokenDelayMs * 10 + 60_000;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), deadlineMs);
    });
    const timedOut = await Promise.race([Promise.all(followers.map((f) => f.said("done"))).then(() => false), deadline]);
    clearTimeout(timer);
    const ticks = machineTicks();
    const after = { redis: await redisFigures(admin), stats: await commandStats(admin), workers: cpu(workers), followers: cpu(followers) };
    await stopAll([...followers, ...workers]);
    const figures = tokenFigures(dir, workers.length, followers.length, o.tasks, o.tokensPerTask);
    const events = figures.delivered.textEvents;
    const cpuSeconds = {
      workers: round(after.workers - before.workers),
      redis: round((after.redis.cpuMicros - before.redis.cpuMicros) / 1e6),
      followers: round(after.followers - before.followers),
    };
    const busy = (ticks.busy - before.ticks.busy) / (ticks.total - before.ticks.total);
    return {
      ...figures,
      ...(timedOut && { timedOut: true }),
      cpuSeconds,
      cpuMicrosPerEvent: Object.fromEntries(Object.entries(cpuSeconds).map(([k, s]) => [k, round((s * 1e6) / events, 1)])),
      // Share of the machine's CPU time (all cores) in use over the window, whoever used it.
      machineBusy: round(busy),
      redisCommandsPerEvent: round((after.redis.calls - before.redis.calls) / events),
      redisCommandsPerEventByCommand: callsPer(before.stats, after.stats, events),
      redisMicrosPerEventByCommand: callsPer(before.stats, after.stats, events, "usec"),
    };
  } finally {
    admin.disconnect();
  }
}

/** Flotilla: worker processes idle on the queue; tasks submitted due `leadMs` later; followers attach meanwhile. */
export async function flotillaTokens(ctx: BenchContext, o: TokenOptions, prefix: string, dir: string) {
  const env = common(ctx, o, prefix, dir);
  const procs: TokenProc[] = [];
  const client = new FlotillaClient({ redis: ctx.url, prefix });
  try {
    const workers = await startRole("flotilla-token-worker", "worker", o.workerProcs, {
      ...env,
      BENCH_CONCURRENCY: String(Math.ceil(o.tasks / o.workerProcs)),
    });
    procs.push(...workers);
    const agent = scripted("tokens", { reply: reply(o.tokensPerTask), tokenDelayMs: o.tokenDelayMs });
    const submittedAt = performance.now();
    const handles = await client.submitMany(range(o.tasks).map((i) => ({ agent, input: i, options: { queue: "tokens", delayMs: o.leadMs } })));
    const tasksFile = join(dir, "tasks.json");
    writeFileSync(tasksFile, JSON.stringify(handles.map((h) => h.taskId)));
    const followers = await startRole("flotilla-token-follower", "follower", o.followerProcs, { ...env, BENCH_TASKS_FILE: tasksFile });
    procs.push(...followers);
    const attachedMs = performance.now() - submittedAt;
    // A token delivered before its follower subscribed would come from the replay: not what is measured.
    if (attachedMs > o.leadMs - 500)
      throw new Error(`tokens: the followers took ${Math.round(attachedMs)} ms to attach, too close to the tasks' start; raise leadMs`);
    // Due at submit + leadMs; a worker moves due tasks into the queue within its promote interval (1 s) after.
    return { followersAttachedMs: Math.round(attachedMs), ...(await measure(ctx, o, dir, submittedAt + o.leadMs, workers, followers)) };
  } finally {
    await stopAll(procs);
    await client.close();
  }
}

/** Plain: followers subscribed first; then the producers, told to start `leadMs` later, their tasks' starts spread over `spreadMs`. */
export async function plainTokens(ctx: BenchContext, o: TokenOptions, prefix: string, dir: string, spreadMs: number) {
  const env = common(ctx, o, prefix, dir);
  const procs: TokenProc[] = [];
  try {
    const followers = await startRole("redis-token-follower", "follower", o.followerProcs, env);
    procs.push(...followers);
    const startAt = Date.now() + o.leadMs;
    const startsAt = performance.now() + o.leadMs;
    const workers = await startRole("redis-token-worker", "worker", o.workerProcs, {
      ...env,
      BENCH_TOKEN_DELAY_MS: String(o.tokenDelayMs),
      BENCH_START_AT: String(startAt),
      BENCH_SPREAD_MS: String(Math.round(spreadMs)),
    });
    procs.push(...workers);
    if (Date.now() > startAt - 200) throw new Error("tokens: the plain producers took too long to start; raise leadMs");
    // Awaited here: the finally below stops the processes.
    return await measure(ctx, o, dir, startsAt, workers, followers);
  } finally {
    await stopAll(procs);
    const admin = newAdmin(ctx.url);
    // Its streams have no TTL (the peer keeps no retention policy): removed so later scenarios start clean.
    const pipeline = admin.pipeline();
    for (let i = 0; i < o.tasks; i++) pipeline.del(plainTaskKeys(prefix, i).stream);
    await pipeline.exec();
    admin.disconnect();
  }
}
