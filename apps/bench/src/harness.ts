import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";

export type System = "flotilla" | "bullmq";

/**
 * Starts `n` worker processes of a system (`procs/<system>-<kind>.ts`: the no-op task worker, or
 * another kind such as the graph scenario's; `redis`: the bus scenario's plain-ioredis peer) and
 * resolves once all are ready; returns the function that stops them.
 */
export async function startWorkers(
  system: System | "redis",
  n: number,
  env: Record<string, string>,
  kind: "worker" | "graph-worker" | "flow-worker" | "bus-worker" | "stream-worker" = "worker",
): Promise<(() => Promise<void>) & { kill9: () => Promise<void>; cpuSeconds: () => number }> {
  const entry = fileURLToPath(new URL(`./procs/${system}-${kind}.ts`, import.meta.url));
  const children: ChildProcess[] = [];
  await Promise.all(
    Array.from({ length: n }, () => {
      const child = spawn(process.execPath, ["--conditions=@flotilla/source", entry], {
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "inherit"],
      });
      children.push(child);
      return new Promise<void>((resolve, reject) => {
        child.stdout!.on("data", (d: Buffer) => {
          if (d.toString().includes("ready")) resolve();
        });
        child.once("exit", (code) => reject(new Error(`${system} worker exited (${code}) before it was ready`)));
      });
    }),
  );
  // Sends every child `signal` and resolves once all have exited (SIGTERM escalates to SIGKILL after 5 s).
  const signalAll = (signal: NodeJS.Signals) =>
    Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            c.removeAllListeners("exit");
            c.once("exit", () => resolve());
            c.kill(signal);
            if (signal !== "SIGKILL") setTimeout(() => c.kill("SIGKILL"), 5000).unref();
          }),
      ),
    ).then(() => {});
  const stop = () => signalAll("SIGTERM");
  const kill9 = () => signalAll("SIGKILL");
  /** CPU seconds the worker processes have used so far. */
  const cpuSeconds = () => children.reduce((sum, c) => sum + processCpuSeconds(c.pid), 0);
  return Object.assign(stop, { kill9, cpuSeconds });
}

/** CPU seconds (user + system) a live process has used so far (Linux /proc); 0 once it is gone. */
export function processCpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** Commands Redis has executed (Lua's inner calls included), the CPU time its process used, and its memory. */
export async function redisFigures(redis: Redis): Promise<{ calls: number; cpuMicros: number; memory: number }> {
  const stats = (await redis.info("commandstats")) as string;
  let calls = 0;
  for (const m of stats.matchAll(/calls=(\d+)/g)) calls += Number(m[1]);
  const cpu = (await redis.info("cpu")) as string;
  const seconds = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(cpu)?.[1] ?? 0);
  const memory = Number(/used_memory:(\d+)/.exec((await redis.info("memory")) as string)?.[1] ?? 0);
  return { calls, cpuMicros: (seconds("used_cpu_user") + seconds("used_cpu_sys")) * 1e6, memory };
}

/** Calls and µs of each command Redis has executed (INFO commandstats; a script's line includes the commands it runs). */
export async function commandStats(redis: Redis): Promise<Map<string, [calls: number, usec: number]>> {
  const out = new Map<string, [number, number]>();
  for (const m of ((await redis.info("commandstats")) as string).matchAll(/cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/g)) {
    out.set(m[1]!, [Number(m[2]), Number(m[3])]);
  }
  return out;
}

export function percentiles(samples: number[]): { p50: number; p90: number; p99: number; mean: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return { p50: round(at(0.5)), p90: round(at(0.9)), p99: round(at(0.99)), mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length) };
}

export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`benchmark timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export const ratio = (ours: number, theirs: number) => Math.round((ours / theirs) * 100) / 100;

/** BullMQ's connection options for a Redis URL. */
export const bullConnection = (url: string) => {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 6379) };
};

export function newAdmin(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 3 });
}
