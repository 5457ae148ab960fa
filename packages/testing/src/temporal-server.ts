// A Temporal dev server for tests: the `temporal` CLI (the one tooling/scripts/temporal.sh builds
// and caches, or FLOTILLA_TEMPORAL_BIN), started on free loopback ports, in memory, and stopped afterwards.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { TestServerError } from "./errors.ts";
import { freePort } from "./ports.ts";

export const TEMPORAL_VERSION = "v1.5.1";

/** The one command that builds the `temporal` CLI into the cache `temporalBinary()` looks in (run from the repository root). */
export const TEMPORAL_SETUP_COMMAND = "bash tooling/scripts/temporal.sh";

/** The note a Temporal test skips with when there is no binary; the run's summary counts skipped tests by note and prints it. */
export const NO_TEMPORAL_NOTE: string = `no Temporal dev server binary: \`${TEMPORAL_SETUP_COMMAND}\` builds it and enables these tests (in CI they fail instead)`;

/**
 * The `temporal` CLI to run: FLOTILLA_TEMPORAL_BIN when set (undefined when that file is missing),
 * else the cached build under $FLOTILLA_CACHE (default ~/.cache/flotilla)/temporal/<version>/, or
 * undefined when it was never built on this machine: tests skip on undefined.
 */
export function temporalBinary(): string | undefined {
  const path = expectedTemporalBinary();
  return existsSync(path) ? path : undefined;
}

/** Where the `temporal` CLI is looked for, built or not: FLOTILLA_TEMPORAL_BIN, else the cache tooling/scripts/temporal.sh builds into. */
export function expectedTemporalBinary(): string {
  const fromEnv = process.env.FLOTILLA_TEMPORAL_BIN;
  if (fromEnv) return fromEnv;
  return join(process.env.FLOTILLA_CACHE ?? join(homedir(), ".cache", "flotilla"), "temporal", TEMPORAL_VERSION, "temporal");
}

const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

export interface TemporalServer {
  /** host:port of its frontend. */
  address: string;
  /** host:port of its HTTP API. */
  httpAddress: string;
  namespace: string;
  stop(): Promise<void>;
}

/** Starts `temporal server start-dev` (in memory, headless) on free loopback ports; killed again if it does not come up. */
export async function startTemporalServer(binary: string | undefined = temporalBinary(), options: { startTimeoutMs?: number } = {}): Promise<TemporalServer> {
  if (!binary) throw new TestServerError(`no Temporal binary: run ${TEMPORAL_SETUP_COMMAND} or set FLOTILLA_TEMPORAL_BIN`);
  // Every port chosen here: left to pick its own, the server's choice can collide with another suite's.
  const port = await freePort();
  const uiPort = await freePort();
  const httpPort = await freePort();
  const metricsPort = await freePort();
  const child: ChildProcess = spawn(
    binary,
    [
      "server",
      "start-dev",
      "--headless",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--ui-port",
      String(uiPort),
      "--http-port",
      String(httpPort),
      "--metrics-port",
      String(metricsPort),
      "--log-level",
      "error",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  let spawnError: Error | undefined;
  child.once("error", (err) => {
    spawnError = err;
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null || spawnError) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 5000).unref();
    });
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const fail = async (why: string): Promise<never> => {
    await stop();
    throw new TestServerError(why);
  };
  while (!(await answers(port))) {
    if (spawnError) return fail(`temporal server could not start: ${spawnError.message}`);
    if (child.exitCode !== null) return fail(`temporal server exited (${child.exitCode}): ${stderr.slice(-2000)}`);
    if (Date.now() > deadline) return fail(`temporal server did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
  // The frontend answers before the default namespace is ready: wait for it.
  const ready = () =>
    new Promise<boolean>((resolve) => {
      execFile(binary, ["operator", "namespace", "describe", "--namespace", "default", "--address", `127.0.0.1:${port}`], (err) => resolve(!err));
    });
  while (!(await ready())) {
    if (Date.now() > deadline) return fail(`temporal server's default namespace was not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { address: `127.0.0.1:${port}`, httpAddress: `127.0.0.1:${httpPort}`, namespace: "default", stop };
}
