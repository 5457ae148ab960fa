// Does a process exit by itself once it has closed what it opened? Both halves of that test: the
// child records every timer and socket it makes (with the code that made it) and, if it is still
// alive a while after its close(), says what holds it; the parent runs the child with a deadline.
import { createHook } from "node:async_hooks";
import { spawn } from "node:child_process";

/** What `runToExit` saw of the child. */
export interface ExitRun {
  /** The exit code, or null when a signal ended it (the deadline's SIGKILL). */
  code: number | null;
  /** True when the child had not exited by the deadline and was killed. */
  timedOut: boolean;
  stdout: string;
  stderr: string;
  /** Each stdout line that is JSON, parsed (what the child reports). */
  reports: unknown[];
  /** How long the child ran, in ms. */
  ms: number;
}

/** What `reportIfHeld` writes first on stderr: a test asserts it is absent. */
export const HELD_MARK = "[exit-probe] still alive";

/**
 * Runs `script` (TypeScript, from the sources) with `args` and waits for it to exit by itself; past
 * `timeoutMs` it is killed and `timedOut` set. Its stderr then holds `reportIfHeld`'s account of
 * what kept it alive. `onReport` hears each JSON line the child prints, as it comes (to act on a step).
 */
export function runToExit(
  script: string,
  args: readonly string[] = [],
  options: { env?: Record<string, string>; timeoutMs?: number; onReport?: (report: unknown) => void } = {},
): Promise<ExitRun> {
  const started = performance.now();
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", script, ...args], {
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let pending = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    pending += d.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) if (line.startsWith("{")) options.onReport?.(JSON.parse(line));
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, options.timeoutMs ?? 30_000);
  return new Promise((resolve, reject) => {
    child.on("error", (err) => {
      clearTimeout(deadline);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(deadline);
      const reports = stdout
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as unknown);
      resolve({ code, timedOut, stdout, stderr, reports, ms: Math.round(performance.now() - started) });
    });
  });
}

/**
 * How a child ended, as the exit tests compare it: `{ timedOut: false, code: 0, held: false }` is a
 * child that exited by itself, cleanly, and never said what held it.
 */
export function exitSummary(run: ExitRun): { timedOut: boolean; code: number | null; held: boolean } {
  return { timedOut: run.timedOut, code: run.code, held: run.stderr.includes(HELD_MARK) };
}

/** The steps a child reported (`{ step, code? }` lines), by name: `"ok"`, or the error code of a failed one. */
export function exitSteps(run: ExitRun): Record<string, string> {
  return Object.fromEntries((run.reports as Array<{ step: string; code?: string }>).map((s) => [s.step, s.code ?? "ok"]));
}

/** A timer or socket the child made and has not released, with the code that made it. */
interface Made {
  type: string;
  resource: object;
  stack: string;
}

const live = new Map<number, Made>();
let recording = false;

/** The async resources that can keep a process alive. */
const HOLDERS = new Set(["Timeout", "Immediate", "TCPWRAP", "TCPCONNECTWRAP", "PIPEWRAP", "TLSWRAP", "GETADDRINFOREQWRAP", "TCPSERVERWRAP"]);

/** Call first in a child: from here on, the timers and sockets it makes are recorded with their stacks. */
export function recordHandles(): void {
  if (recording) return;
  recording = true;
  createHook({
    init(id, type, _trigger, resource) {
      if (!HOLDERS.has(type)) return;
      // The frames of the code that made it, not node's own.
      const stack = (new Error().stack ?? "")
        .split("\n")
        .slice(1)
        .filter((line) => !/node:|async_hooks|exit-probe/.test(line))
        .slice(0, 4)
        .map((line) => line.trim())
        .join(" < ");
      live.set(id, { type, resource: resource as object, stack });
    },
    destroy(id) {
      live.delete(id);
    },
  }).enable();
}

/** Whether a recorded resource still holds the process (a ref'd timer, an open socket). */
function holds(made: Made): boolean {
  const r = made.resource as { hasRef?: () => boolean; _destroyed?: boolean; destroyed?: boolean };
  if (typeof r.hasRef === "function") return r.hasRef() && r._destroyed !== true;
  return true;
}

/**
 * Call once everything is closed: if the process is still alive `afterMs` later, writes HELD_MARK to
 * stderr (again every `afterMs`) with what keeps it alive — Node's active resources and, from
 * `recordHandles`, each timer or socket still held with the code that made it. The timer itself holds
 * nothing. 1.5 s by default: an exit that takes longer is no longer prompt, and ioredis's own timers
 * on a closing connection (2 s) still fire after it, so they are caught.
 */
export function reportIfHeld(afterMs = 1500): void {
  report(afterMs, HELD_MARK, "close() returned");
}

/**
 * For a close() that never returns: if the process still runs `afterMs` after this call, writes what
 * it waits on to stderr, as `reportIfHeld` does but without HELD_MARK (a slow start on a loaded
 * machine is no failure; the test's deadline is).
 */
export function reportIfSlow(afterMs = 10_000): void {
  report(afterMs, "[exit-probe] still running", "the start");
}

function report(afterMs: number, mark: string, since: string): void {
  const from = performance.now();
  const timer = setInterval(() => {
    const resources = process.getActiveResourcesInfo();
    const made = [...live.values()].filter(holds).map((m) => `  ${m.type} made at ${m.stack || "(no frame outside node)"}`);
    process.stderr.write(
      `${mark} ${Math.round(performance.now() - from)} ms after ${since}, held by ${JSON.stringify(resources)}${made.length ? `\n${made.join("\n")}` : ""}\n`,
    );
  }, afterMs);
  timer.unref();
}
