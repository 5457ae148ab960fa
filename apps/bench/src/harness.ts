import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";

export type System = "flotilla" | "bullmq";

/** Starts `n` worker processes of a system and resolves once all are ready; returns the function that stops them. */
export async function startWorkers(
  system: System,
  n: number,
  env: Record<string, string>,
): Promise<(() => Promise<void>) & { kill9: () => Promise<void>; cpuSeconds: () => number }> {
  const entry = fileURLToPath(new URL(`./procs/${system}-worker.ts`, import.meta.url));
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
  /** CPU seconds the worker processes have used so far (Linux /proc). */
  const cpuSeconds = () =>
    children.reduce((sum, c) => {
      try {
        const fields = readFileSync(`/proc/${c.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
        return sum + (Number(fields[11]) + Number(fields[12])) / 100;
      } catch {
        return sum;
      }
    }, 0);
  return Object.assign(stop, { kill9, cpuSeconds });
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

export function newAdmin(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 3 });
}
