// @cluster: worker processes, a bus subscription and the CLI meeting on queues and topics of several slots
// Issue 40.3: every entry point reads its settings from the environment by one rule (an option given
// wins, else its variable, else the default). Set side by side with FLOTILLA_PREFIX and REDIS_URL
// (or REDIS_CLUSTER_NODES) only, as the READMEs' snippets run: a `new Worker()`, `distributed()`,
// `new FlotillaClient()`, `new Bus()`, the flotilla CLI and flotilla-worker all meet under that
// prefix (before, `new Worker()` and `new FlotillaClient()` used "flotilla" and the task waited).
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { run as cli } from "@flotilla/cli";
import { purgePrefix, runToExit, testPrefix, testRedis, testRedisEnv } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";

const prefix = testPrefix("app-env");
const redis = testRedis();
/** The only settings any process below gets: where Redis is, and the prefix. */
const env = { ...testRedisEnv(), FLOTILLA_PREFIX: prefix };
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/env/${name}`, import.meta.url));
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await purgePrefix(redis, prefix);
  await redis.quit();
});

/** Starts a long-running process with `env` and resolves once it prints a line containing `ready`. */
function startProcess(args: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", ...args], {
    env: { ...process.env, REDIS_CLUSTER_NODES: "", ...env, FLOTILLA_LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (/ready/.test(out)) resolve(child);
    });
    child.on("exit", (code) => reject(new Error(`${args.join(" ")} exited (${code}) before it was ready: ${out}`)));
  });
}

/** Runs the submit fixture through one entry point; what it printed. */
async function submit(how: "distributed" | "client" | "bus", queue: string): Promise<Record<string, unknown>> {
  const r = await runToExit(fixture("submit.ts"), [how, queue], { env: { REDIS_CLUSTER_NODES: "", ...env }, timeoutMs: 50_000 });
  expect({ code: r.code, timedOut: r.timedOut }, r.stderr).toEqual({ code: 0, timedOut: false });
  return r.reports[0] as Record<string, unknown>;
}

// Child processes on a loaded machine: minutes, not the default 30 s; each child has its own deadline below.
describe("one rule for the environment, every entry point", { timeout: 120_000 }, () => {
  it("new Worker() and distributed(), new FlotillaClient(), new Bus() and the CLI, given only REDIS_URL and FLOTILLA_PREFIX, meet", async () => {
    await startProcess([fixture("library-worker.ts"), "env-lib"]);
    const viaDistributed = await submit("distributed", "env-lib");
    expect(viaDistributed.text).toBe("Echo: meet");
    expect((await submit("client", "env-lib")).text).toBe("Echo: meet");
    expect((await submit("bus", "env-lib")).reply).toEqual({ answered: "meet" });
    // The CLI reads the environment it is given by the same rule: it finds the task under the prefix.
    const out: string[] = [];
    const code = await cli(["task", String(viaDistributed.taskId), "--json"], {
      stdout: { write: (s: string) => out.push(s) },
      stderr: { write: () => 0 },
      env,
    });
    expect(code).toBe(0);
    expect(JSON.parse(out.join(""))).toMatchObject({ taskId: viaDistributed.taskId, status: "COMPLETED" });
  });

  it("flotilla-worker and distributed(), given only REDIS_URL and FLOTILLA_PREFIX, meet", async () => {
    await startProcess([fileURLToPath(new URL("../src/main.ts", import.meta.url)), "--queues", "env-app"]);
    expect((await submit("distributed", "env-app")).text).toBe("Echo: meet");
  });
});
