// SSE fan-out through one gateway: many HTTP clients following streaming tasks as Server-Sent
// Events, against the same followers reading the tasks' streams straight through FlotillaClient
// (the reference: what the gateway adds on top). Events/s delivered, publish → receive latency
// (the worker's event `ts` to the moment a follower parsed it, one machine, one clock), CPU.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { FlotillaClient, type TaskHandle } from "@flotilla/client";
import { type BenchContext, bySize, freshPrefix, noop } from "./drain.ts";
import { newAdmin, percentiles, redisFigures, startWorkers } from "./harness.ts";

/** Followers per task, tasks, text events per task. */
const FOLLOWERS = 5;
/** Tasks are submitted due this far ahead, so every follower is connected before they start. */
const LEAD_MS = 3_000;

interface Tally {
  received: number;
  broken: number;
  latencies: number[];
  firstAt: number;
  lastAt: number;
}

const newTally = (): Tally => ({ received: 0, broken: 0, latencies: [], firstAt: Number.POSITIVE_INFINITY, lastAt: 0 });

/** Counts one follower's events: seqs 1, 2, … with no gap; text events' latency; the stream's end. */
function follower(tally: Tally, perTask: number) {
  let expected = 1;
  let texts = 0;
  return {
    event(e: { seq: number; type: string; ts: number }) {
      const now = Date.now();
      tally.firstAt = Math.min(tally.firstAt, performance.now());
      if (e.seq !== expected++) tally.broken++;
      if (e.type === "text") {
        texts++;
        tally.latencies.push(now - e.ts);
      }
      tally.received++;
    },
    end() {
      tally.lastAt = Math.max(tally.lastAt, performance.now());
      if (texts !== perTask) tally.broken++;
    },
  };
}

/** Reads one task's event stream from the gateway, parsing Server-Sent Events as they come. */
async function followSse(url: string, taskId: string, count: ReturnType<typeof follower>): Promise<void> {
  const res = await fetch(`${url}/v1/tasks/${encodeURIComponent(taskId)}/events`);
  if (!res.ok || !res.body) throw new Error(`GET events of ${taskId}: ${res.status}`);
  let buffer = "";
  for await (const chunk of res.body.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf("\n\n");
      const data = block.split("\n").find((line) => line.startsWith("data: "));
      if (data) count.event(JSON.parse(data.slice(6)) as { seq: number; type: string; ts: number });
    }
  }
  count.end();
}

/** Starts the gateway process; resolves with its URL, its pid and how to stop it. */
async function startGateway(env: Record<string, string>): Promise<{ url: string; child: ChildProcess; stop: () => Promise<void> }> {
  const entry = fileURLToPath(new URL("./procs/flotilla-gateway.ts", import.meta.url));
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", entry], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      const m = /ready (\d+)/.exec(d.toString());
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`gateway exited (${code}) before it was ready`)));
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      child.removeAllListeners("exit");
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 5000).unref();
    });
  return { url: `http://127.0.0.1:${port}`, child, stop };
}

/** CPU seconds a process has used so far (Linux /proc). */
function cpuOf(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

function summary(tally: Tally, followers: number, cpu: Record<string, number>) {
  const seconds = (tally.lastAt - tally.firstAt) / 1000;
  return {
    followers,
    eventsDelivered: tally.received,
    eventsPerSec: Math.round(tally.received / seconds),
    seconds: round(seconds, 3),
    latencyMs: percentiles(tally.latencies),
    lostOrOutOfOrder: tally.broken,
    cpuSeconds: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, round(v)])),
  };
}

/**
 * 500 SSE clients (5 per task) following 100 tasks of 200 text events each through one gateway,
 * then the same followers through FlotillaClient.stream() in this process.
 */
export async function gateway(ctx: BenchContext) {
  const tasks = bySize(ctx, { smoke: 4, quick: 20, full: 100 });
  const perTask = 200;
  const prefix = freshPrefix("flotilla");
  const workers = await startWorkers("flotilla", 2, {
    REDIS_URL: ctx.url,
    BENCH_PREFIX: prefix,
    BENCH_CONCURRENCY: String(tasks),
    BENCH_EVENTS: String(perTask),
  });
  const gw = await startGateway({ REDIS_URL: ctx.url, BENCH_PREFIX: prefix });
  const client = new FlotillaClient({ redis: ctx.url, prefix });
  const admin = newAdmin(ctx.url);
  const submit = () => client.submitMany(Array.from({ length: tasks }, (_, i) => ({ agent: noop, input: i, options: { queue: "bench", delayMs: LEAD_MS } })));
  try {
    // Through the gateway: HTTP clients, Server-Sent Events.
    const viaGateway = newTally();
    const handles = await submit();
    let before = { gateway: cpuOf(gw.child.pid), workers: workers.cpuSeconds(), redis: (await redisFigures(admin)).cpuMicros / 1e6, here: process.cpuUsage() };
    await Promise.all(handles.flatMap((h) => Array.from({ length: FOLLOWERS }, () => followSse(gw.url, h.taskId, follower(viaGateway, perTask)))));
    let here = process.cpuUsage(before.here);
    const gatewayRun = summary(viaGateway, tasks * FOLLOWERS, {
      gateway: cpuOf(gw.child.pid) - before.gateway,
      followers: (here.user + here.system) / 1e6,
      workers: workers.cpuSeconds() - before.workers,
      redis: (await redisFigures(admin)).cpuMicros / 1e6 - before.redis,
    });

    // The reference: the same followers reading the streams straight from Redis through the client.
    const direct = newTally();
    const again: TaskHandle[] = await submit();
    before = { gateway: 0, workers: workers.cpuSeconds(), redis: (await redisFigures(admin)).cpuMicros / 1e6, here: process.cpuUsage() };
    await Promise.all(
      again.flatMap((h) =>
        Array.from({ length: FOLLOWERS }, async () => {
          const count = follower(direct, perTask);
          for await (const e of h.stream()) count.event(e);
          count.end();
        }),
      ),
    );
    here = process.cpuUsage(before.here);
    const directRun = summary(direct, tasks * FOLLOWERS, {
      followers: (here.user + here.system) / 1e6,
      workers: workers.cpuSeconds() - before.workers,
      redis: (await redisFigures(admin)).cpuMicros / 1e6 - before.redis,
    });
    return [
      {
        scenario: "gateway",
        tasks,
        followersPerTask: FOLLOWERS,
        eventsPerTask: perTask,
        gateway: { ...gatewayRun, gatewayCpuMicrosPerEvent: round((gatewayRun.cpuSeconds.gateway! * 1e6) / viaGateway.received) },
        direct: directRun,
        note: "gateway: HTTP clients following Server-Sent Events through one flotilla-gateway process; direct: the same followers on FlotillaClient.stream() in the bench process (no HTTP)",
      },
    ];
  } finally {
    admin.disconnect();
    await client.close();
    await gw.stop();
    await workers();
  }
}
