// A Temporal dev server for tests: the `temporal` binary that tooling/scripts/temporal.sh builds
// and caches, started on free loopback ports, in memory, and stopped afterwards.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.ts";

export const TEMPORAL_VERSION = "v1.5.1";

/** The cached binary, or undefined when it was never built on this machine. */
export function temporalBinary(): string | undefined {
  const fromEnv = process.env.FLOTILLA_TEMPORAL_BIN;
  if (fromEnv) return existsSync(fromEnv) ? fromEnv : undefined;
  const path = join(process.env.FLOTILLA_CACHE ?? join(homedir(), ".cache", "flotilla"), "temporal", TEMPORAL_VERSION, "temporal");
  return existsSync(path) ? path : undefined;
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
  namespace: string;
  stop(): Promise<void>;
}

/** Starts `temporal server start-dev` (in memory, headless) on free loopback ports. */
export async function startTemporalServer(binary = temporalBinary()): Promise<TemporalServer> {
  if (!binary) throw new Error("no Temporal binary: run tooling/scripts/temporal.sh");
  const port = await freePort();
  const uiPort = await freePort();
  const metricsPort = await freePort();
  const child: ChildProcess = spawn(
    binary,
    ["server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", String(port), "--ui-port", String(uiPort), "--metrics-port", String(metricsPort), "--log-level", "error"],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const deadline = Date.now() + 60_000;
  while (!(await answers(port))) {
    if (child.exitCode !== null) throw new Error(`temporal server exited (${child.exitCode}): ${stderr.slice(-2000)}`);
    if (Date.now() > deadline) throw new Error("temporal server did not answer within 60 s");
    await new Promise((r) => setTimeout(r, 100));
  }
  // The frontend answers before the default namespace is ready: wait for it.
  const health = () => {
    try {
      execFileSync(binary, ["operator", "namespace", "describe", "--namespace", "default", "--address", `127.0.0.1:${port}`], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  };
  while (!health()) {
    if (Date.now() > deadline) throw new Error("temporal server's default namespace was not ready within 60 s");
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    address: `127.0.0.1:${port}`,
    namespace: "default",
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 5000).unref();
      }),
  };
}
