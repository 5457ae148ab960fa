import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { processCpuSeconds, type System } from "./harness.ts";

const READY_TIMEOUT_MS = 180_000;

/** What a fleet process prints when stopped: the tasks it ran. */
export interface ProcReport {
  done: number;
}

export interface Fleet {
  /** Lets every process start working, at once. */
  go(): void;
  /** CPU seconds the processes have used so far. */
  cpuSeconds(): number;
  /** Stops every process and resolves with their reports in start order (undefined: one exited without reporting). Idempotent. */
  stop(): Promise<Array<ProcReport | undefined>>;
}

/**
 * Starts `n` gated worker processes of the fleet scenario (`procs/<system>-fleet-worker.ts`, `env(i)`
 * for process i) and resolves once every one is ready: holding a full load of tasks at its gate (see
 * fleet-gate.ts). A process that fails to get ready in time stops the rest.
 */
export async function startFleet(system: System, n: number, env: (index: number) => Record<string, string>): Promise<Fleet> {
  const entry = fileURLToPath(new URL(`./procs/${system}-fleet-worker.ts`, import.meta.url));
  const children: ChildProcess[] = [];
  const reports: Array<ProcReport | undefined> = [];
  const ready = Array.from({ length: n }, (_, i) => {
    const child = spawn(process.execPath, ["--conditions=@flotilla/source", entry], {
      env: { ...process.env, ...env(i) },
      stdio: ["pipe", "pipe", "inherit"],
    });
    children.push(child);
    // A process that died has no stdin to write "go" to: its exit is reported, not the broken pipe.
    child.stdin!.on("error", () => {});
    let out = "";
    return new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("ready\n")) resolve();
        const report = /done (\{.*\})\n/.exec(out);
        if (report) reports[i] = JSON.parse(report[1]!) as ProcReport;
      });
      child.once("exit", (code) => reject(new Error(`${system} fleet worker ${i} exited (${code}) before it was ready`)));
    });
  });
  let stopping: Promise<Array<ProcReport | undefined>> | undefined;
  const stop = () => {
    stopping ??= Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.removeAllListeners("exit");
            c.once("exit", () => resolve());
            c.kill("SIGTERM");
            setTimeout(() => c.kill("SIGKILL"), 10_000).unref();
          }),
      ),
    ).then(() => Array.from({ length: n }, (_, i) => reports[i]));
    return stopping;
  };
  let timer: NodeJS.Timeout | undefined;
  // Never ready: fewer tasks queued than the fleet's slots, or a process stuck connecting.
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${system} fleet not ready within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
  });
  try {
    await Promise.race([Promise.all(ready), late]);
  } catch (err) {
    await stop();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return {
    go: () => {
      for (const c of children) c.stdin!.write("go\n");
    },
    cpuSeconds: () => children.reduce((sum, c) => sum + processCpuSeconds(c.pid), 0),
    stop,
  };
}

/**
 * The machine's CPU time so far, all cores, in clock ticks (Linux /proc/stat): `busy` (user, system
 * and interrupts, whoever's), of which `irq` (hard and soft interrupt time), `steal` (taken by the
 * hypervisor) and `total`.
 */
export function machineTicks(): { busy: number; irq: number; steal: number; total: number } {
  // user nice system idle iowait irq softirq steal (guest time is counted in user already).
  const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync("/proc/stat", "utf8")
    .split("\n")[0]!
    .trim()
    .split(/\s+/)
    .slice(1, 9)
    .map(Number) as [number, number, number, number, number, number, number, number];
  const busy = user + nice + system + irq + softirq;
  return { busy, irq: irq + softirq, steal, total: busy + idle + iowait + steal };
}

export const coreCount = () => cpus().length;
