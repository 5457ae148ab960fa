// A flotilla-worker process for the demo and the dashboard command: the worker app (its source when
// run from source, its build otherwise) with the demo's tools, on the given Redis and prefix.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const fromSource = import.meta.url.endsWith(".ts");
const ext = fromSource ? "ts" : "js";
const workerMain = fileURLToPath(new URL(`../../worker/${fromSource ? "src" : "dist"}/main.${ext}`, import.meta.url));
/** A module of this folder, as the worker loads it (`--module`): its source when run from source, its build otherwise. */
export const demoModule = (name: string): string => fileURLToPath(new URL(`./${name}.${ext}`, import.meta.url));

/** Starts the worker process; `started` resolves once it is spawned, and rejects if it exits first. */
export function spawnWorker(
  url: string,
  prefix: string,
  name: string,
  env: Record<string, string> = {},
): { child: ChildProcess; started: Promise<ChildProcess> } {
  const args = fromSource ? ["--conditions=@flotilla/source", workerMain] : [workerMain];
  const child = spawn(process.execPath, args, {
    // A process group of its own: Ctrl-C reaches the parent alone, which stops its workers itself
    // (once each: a worker's second signal would exit it without draining).
    detached: true,
    env: {
      ...process.env,
      REDIS_URL: url,
      FLOTILLA_PREFIX: prefix,
      FLOTILLA_MODULE: demoModule("tools"),
      FLOTILLA_CONCURRENCY: "3",
      FLOTILLA_WORKER_ID: name,
      FLOTILLA_LOG_LEVEL: "warn",
      // Fleet figures are as of the last beat; beat often so what is shown is current.
      FLOTILLA_HEARTBEAT_TTL_MS: "900",
      // Stopped early (Ctrl-C), a worker hands its running tasks back after a second: the keys go anyway.
      FLOTILLA_DRAIN_TIMEOUT_MS: "1000",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const started = new Promise<ChildProcess>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.on("exit", (code) => reject(new Error(`worker ${name} exited with ${code}: ${out}`)));
    child.on("spawn", () => resolve(child));
  });
  return { child, started };
}
