// A `flotilla` run in this process, held to what a process would show. What its code writes past
// the streams it was given (console.*, process.stdout and process.stderr: a library's warning, a
// stray log) is its output too, as it would be a process's. And what a process would have taken
// with it when it exited must be gone once it resolves: the sockets and timers it opened (in a
// process they hold the exit back, or hide a missing close; here they pile up) and changes to
// process.env, process.exitCode or the process's listeners. The run's code is told apart from the
// rest of the test process (its workers, its clients, other runs) by an AsyncLocalStorage: what
// happens in the run's async context is the run's.
import { AsyncLocalStorage, createHook, type HookCallbacks } from "node:async_hooks";
import { format } from "node:util";

/** Where a run's output goes. */
export interface Sinks {
  stdout(text: string): void;
  stderr(text: string): void;
}

interface Handle {
  type: string;
  resource: { hasRef?: () => boolean };
}

interface Run extends Sinks {
  handles: Map<number, Handle>;
}

/** Connections: open is a leak, referenced or not. */
const SOCKETS: ReadonlySet<string> = new Set(["TCPWRAP", "TLSWRAP", "PIPEWRAP"]);
/** Timers and signal handlers: a leak while they keep the event loop alive. */
const REFERENCED: ReadonlySet<string> = new Set(["Timeout", "SIGNALWRAP"]);

const current = new AsyncLocalStorage<Run>();
/** Each tracked handle's run, for its destroy. */
const runOf = new Map<number, Run>();
// Promises are not followed (trackPromises, Node 24): following them makes every await in the test process several times slower.
const hook = createHook({
  trackPromises: false,
  init(asyncId: number, type: string, _trigger: number, resource: Handle["resource"]) {
    if (!SOCKETS.has(type) && !REFERENCED.has(type)) return;
    const run = current.getStore();
    if (!run) return;
    run.handles.set(asyncId, { type, resource });
    runOf.set(asyncId, run);
  },
  destroy(asyncId: number) {
    runOf.get(asyncId)?.handles.delete(asyncId);
    runOf.delete(asyncId);
  },
} as HookCallbacks);

const CONSOLE = { log: "stdout", info: "stdout", debug: "stdout", warn: "stderr", error: "stderr" } as const;

/** Sends what a run's code writes to the console or the process's streams to the run's sinks; returns the undo. */
function divert(): () => void {
  const undo: Array<() => void> = [];
  for (const [method, to] of Object.entries(CONSOLE) as Array<[keyof typeof CONSOLE, keyof Sinks]>) {
    const original = console[method];
    console[method] = (...args: unknown[]) => {
      const run = current.getStore();
      if (run) run[to](`${format(...args)}\n`);
      else original.apply(console, args);
    };
    undo.push(() => {
      console[method] = original;
    });
  }
  for (const to of ["stdout", "stderr"] as const) {
    const stream = process[to];
    const original = stream.write;
    stream.write = function (this: NodeJS.WriteStream, chunk: string | Uint8Array, ...rest: unknown[]): boolean {
      const run = current.getStore();
      if (!run) return (original as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
      run[to](typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"));
      const callback = rest.find((r) => typeof r === "function") as (() => void) | undefined;
      if (callback) queueMicrotask(callback);
      return true;
    } as typeof stream.write;
    undo.push(() => {
      stream.write = original;
    });
  }
  return () => {
    for (const u of undo) u();
  };
}

/** Runs under way: the hook and the diversion are on only while there are some. */
let active = 0;
let undivert: (() => void) | undefined;

const openNow = (run: Run): string[] => [...run.handles.values()].filter((h) => SOCKETS.has(h.type) || h.resource.hasRef?.() !== false).map((h) => h.type);

/** What a run must leave as it found it. */
function processState(): string {
  const listeners = process
    .eventNames()
    .map((name) => `${String(name)}×${process.listenerCount(name)}`)
    .sort();
  return JSON.stringify({ env: process.env, exitCode: process.exitCode ?? null, listeners });
}

/**
 * Runs `fn` (one run of the command) with what its code writes sent to `sinks`, and resolves with
 * its result once everything it opened is closed; rejects, naming what is left, when something
 * still is `graceMs` after it resolved (a timer about to fire gets that long), or when it changed
 * the process's state.
 */
export async function likeAProcess<T>(what: string, sinks: Sinks, fn: () => Promise<T>, graceMs = 5000): Promise<T> {
  const run: Run = { stdout: sinks.stdout, stderr: sinks.stderr, handles: new Map() };
  const before = processState();
  if (active++ === 0) {
    hook.enable();
    undivert = divert();
  }
  try {
    const value = await current.run(run, fn);
    const deadline = Date.now() + graceMs;
    while (openNow(run).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const left = openNow(run);
    if (left.length > 0) throw new Error(`${what} left open after it ended: ${left.join(", ")}`);
    const after = processState();
    if (after !== before) throw new Error(`${what} changed the process's state:\nbefore ${before}\nafter  ${after}`);
    return value;
  } finally {
    if (--active === 0) {
      hook.disable();
      undivert?.();
      undivert = undefined;
    }
  }
}
