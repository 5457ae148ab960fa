import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { processCpuSeconds } from "./harness.ts";

/** One process of the tokens scenario (`procs/<name>.ts`), started and ready. */
export interface TokenProc {
  /** CPU seconds it has used so far (0 once it has exited). */
  cpuSeconds(): number;
  /** Resolves when it has printed `line` (at once if it has already). */
  said(line: string): Promise<void>;
  /** SIGTERM (SIGKILL after 10 s); resolves once it exited. Idempotent. */
  stop(): Promise<void>;
}

/** Starts `procs/<name>.ts` with `env` and resolves once it printed "ready"; rejects if it exits first. */
export async function startTokenProc(name: string, env: Record<string, string>): Promise<TokenProc> {
  const entry = fileURLToPath(new URL(`./procs/${name}.ts`, import.meta.url));
  // BENCH_CPU_PROF=<dir>: each process writes a CPU profile there (node --cpu-prof) when it exits.
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child: ChildProcess = spawn(process.execPath, ["--conditions=@flotilla/source", ...profile, entry], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  const waiting: Array<{ line: string; resolve: () => void; reject: (err: Error) => void }> = [];
  const settle = (err?: Error) => {
    for (let i = waiting.length - 1; i >= 0; i--) {
      const w = waiting[i]!;
      if (out.includes(`${w.line}\n`)) w.resolve();
      else if (err) w.reject(err);
      else continue;
      waiting.splice(i, 1);
    }
  };
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
    settle();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  void exited.then(() => settle(new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before saying what was awaited`)));
  const said = (line: string) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ line, resolve, reject });
      settle(child.exitCode !== null || child.signalCode !== null ? new Error(`${name} has exited`) : undefined);
    });
  let stopping: Promise<void> | undefined;
  const proc: TokenProc = {
    cpuSeconds: () => processCpuSeconds(child.pid),
    said,
    stop: () => {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGTERM");
          setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
        }
        await exited;
      })();
      return stopping;
    },
  };
  try {
    await said("ready");
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return proc;
}

/** Stops every process given, together. */
export const stopAll = (procs: readonly TokenProc[]) => Promise.all(procs.map((p) => p.stop())).then(() => {});
