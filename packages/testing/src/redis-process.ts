// One redis-server (or sentinel) process of a test setup: started, recognised as itself once it
// answers, stopped; and one-off commands to a port. Shared by the Sentinel and TLS helpers, whose
// servers the plain PING of `startRedisServer` cannot reach (a TLS-only port, a sentinel's view).
import { type ChildProcess, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import type { ConnectionOptions } from "node:tls";
import { sleep } from "@flotilla/core";
import { Redis } from "ioredis";
import { TestServerError } from "./errors.ts";

export const LOOPBACK = "127.0.0.1";

/** How a one-off command reaches a server: TLS options for a TLS port, credentials for an ACL user. */
export interface AskOptions {
  tls?: ConnectionOptions;
  username?: string;
  password?: string;
}

/** Sends one command over a connection of its own, closed afterwards (a plain one: no ready check, no retry). */
export async function askRedis(port: number, command: readonly string[], options: AskOptions = {}): Promise<unknown> {
  const r = new Redis({
    host: LOOPBACK,
    port,
    ...options,
    lazyConnect: true,
    enableReadyCheck: false,
    connectTimeout: 1000,
    commandTimeout: 2000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on("error", () => {}); // the rejected command carries it
  try {
    await r.connect();
    return await r.call(command[0]!, ...command.slice(1));
  } finally {
    r.disconnect();
  }
}

/** A started redis-server process. */
export interface RedisProcess {
  readonly port: number;
  alive(): boolean;
  /** The tail of its stdout and stderr (bind errors go to stdout, config errors to stderr). */
  output(): string;
  /** Stops it (SIGTERM by default; SIGKILL after 5 s if it hangs, so a stop always ends). */
  halt(signal?: NodeJS.Signals): Promise<void>;
}

/** What a setup leaves behind until it is stopped: its processes and its directory. */
export interface Leftovers {
  processes: RedisProcess[];
  dir?: string;
}

/** Setups not cleaned up yet: a test process that crashes or forgets them kills and removes them on exit. */
const leftovers = new Set<Leftovers>();
let exitHooked = false;

/** Kills `entry.processes` (as they are then) and removes `entry.dir` if the test process exits first; `forget` it once cleaned up. */
export function cleanUpOnExit(entry: Leftovers): { forget(): void } {
  if (!exitHooked) {
    exitHooked = true;
    // "exit" allows only synchronous work: kill and rmSync are. A process killed by a signal never gets here.
    process.on("exit", () => {
      for (const e of leftovers) {
        // halt() sends the signal synchronously, before its first await.
        for (const p of e.processes) if (p.alive()) void p.halt("SIGKILL");
        if (e.dir) rmSync(e.dir, { recursive: true, force: true });
      }
    });
  }
  leftovers.add(entry);
  return { forget: () => leftovers.delete(entry) };
}

export interface LaunchOptions {
  binary: string;
  args: readonly string[];
  /** The port it listens on (a TLS port for a TLS-only server). */
  port: number;
  cwd: string;
  /** Absolute time (ms) by which it must answer. */
  deadline: number;
  /** How the readiness probe reaches it. */
  ask?: AskOptions;
}

/**
 * Starts redis-server with `args` and waits until the server on `port` answers as this process
 * (its INFO names our pid): another server could hold the port.
 */
export async function launchRedis(options: LaunchOptions): Promise<RedisProcess> {
  const { binary, port } = options;
  const child: ChildProcess = spawn(binary, options.args, { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-2000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const alive = () => child.pid !== undefined && child.exitCode === null && child.signalCode === null;
  const proc: RedisProcess = {
    port,
    alive,
    output: () => output,
    async halt(signal = "SIGTERM") {
      if (!alive()) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill(signal);
      const stuck = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(stuck);
    },
  };
  let failure: Error | undefined;
  child.once("error", (err) => {
    failure = new TestServerError(`could not start ${binary}: ${err.message}`, err);
  });
  // "close", not "exit": by then all of its output has been read.
  child.once("close", (code, signal) => {
    failure ??= new TestServerError(`${binary} on port ${port} exited (${code ?? signal}) while starting: ${output.trim()}`);
  });
  const own = (info: unknown) => String(info).includes(`process_id:${child.pid}\r`);
  while (!(await askRedis(port, ["INFO", "server"], options.ask).then(own, () => false))) {
    if (failure) throw failure;
    if (Date.now() > options.deadline) {
      await proc.halt("SIGKILL");
      throw new TestServerError(`${binary} on port ${port} did not answer in time: ${output.trim()}`);
    }
    await sleep(50);
  }
  return proc;
}
