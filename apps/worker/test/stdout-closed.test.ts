// A worker whose stdout reader goes away (the parent that piped its logs died, or `| head` ended)
// must keep working and still drain on SIGTERM: a log line written into the closed pipe fails with
// EPIPE, which must not crash the process.
// @single: a process's stdout going away; nothing Redis-side
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Agent } from "@flotilla/agent";
import { FlotillaClient } from "@flotilla/client";
import { purgePrefix, testConnection, testPrefix, testRedis, testRedisEnv } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const prefix = testPrefix("stdout-closed");
const redis = testRedis();
const client = new FlotillaClient({ redis: testConnection(), prefix });

afterAll(async () => {
  await client.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

describe("a worker whose stdout is closed", () => {
  it("keeps running tasks, then drains on SIGTERM and exits 0", async () => {
    const child = spawn(process.execPath, ["--conditions=@flotilla/source", main], {
      env: { ...process.env, ...testRedisEnv(), FLOTILLA_PREFIX: prefix, FLOTILLA_WORKER_ID: "no-reader" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
    try {
      await new Promise<void>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          if (out.includes('"msg":"ready"')) resolve();
        });
        void exited.then(({ code }) => reject(new Error(`worker exited (${code}) before ready: ${out}${stderr}`)));
      });
      // The reader goes away: every log line from now on is written into a closed pipe.
      child.stdout.destroy();

      const agent = new Agent({ name: "echo", model: "scripted:echo" });
      for (const input of ["first", "second", "third"]) {
        // Each task logs "task ended" on completion; the first such write fails with EPIPE.
        const handle = await client.submit(agent, input);
        expect(await handle.result({ timeoutMs: 15_000 })).toMatchObject({ text: `Echo: ${input}` });
      }
      expect(child.exitCode, stderr).toBeNull();

      child.kill("SIGTERM"); // logs "draining" and "worker stopped" into the closed pipe
      expect(await exited, stderr).toEqual({ code: 0, signal: null });
      expect(stderr).not.toMatch(/EPIPE/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  }, 60_000);
});
