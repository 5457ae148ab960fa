import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { testRedisEnv } from "@flotilla/testing";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

/**
 * A flotilla-worker process on the test Redis (or cluster) with a module of its own (a fixture
 * under ./fixtures), logging errors only; `env` adds or overrides settings.
 */
export function spawnApp(options: { prefix: string; fixture: string; workerId: string; env?: Record<string, string> }): ChildProcess {
  return spawn(process.execPath, ["--conditions=@flotilla/source", main], {
    env: {
      ...process.env,
      ...testRedisEnv(),
      FLOTILLA_PREFIX: options.prefix,
      FLOTILLA_MODULE: fileURLToPath(new URL(`./fixtures/${options.fixture}`, import.meta.url)),
      FLOTILLA_WORKER_ID: options.workerId,
      FLOTILLA_LOG_LEVEL: "error",
      ...options.env,
    },
    stdio: "ignore",
  });
}
