// Ctrl-C in the middle of `npm run demo`: the terminal sends SIGINT to the whole foreground process
// group. The demo must stop its worker processes (none left running) and remove its keys (none left
// behind, with or without a TTL), then exit 130 like any interrupted command.
// @single: the demo's own admin connection is a plain one
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { FlotillaClient } from "@flotilla/client";
import { keysUnder, testConnection, testRedis, testRedisEnv, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const redis = testRedis();
afterAll(() => redis.quit());

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("the demo, interrupted", () => {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    it(`${signal} mid-run stops every worker process and leaves no key behind`, async () => {
      // detached: the demo leads a process group of its own, as a shell's foreground job does.
      const demo = spawn(process.execPath, ["--conditions=@flotilla/source", main], {
        env: { ...process.env, ...testRedisEnv() },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      let out = "";
      demo.stdout.on("data", (d: Buffer) => {
        out += d.toString();
      });
      demo.stderr.on("data", (d: Buffer) => {
        out += d.toString();
      });
      const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => demo.on("exit", (code, sig) => resolve({ code, signal: sig })));
      let client: FlotillaClient | undefined;
      try {
        await waitFor(() => out.includes("Streaming"), { timeoutMs: 30_000, what: `the demo to start streaming:\n${out}` });
        const prefix = /prefix (flotilla-demo-[0-9a-f]+)/.exec(out)![1]!;
        client = new FlotillaClient({ redis: testConnection(), prefix });
        const pids = (await client.fleet.status()).workers.flatMap((w) => (w.pid === undefined ? [] : [w.pid]));
        expect(pids).toHaveLength(2);
        expect((await scanKeys(prefix)).length).toBeGreaterThan(0);

        process.kill(-demo.pid!, signal); // the whole group, as the terminal does
        expect(await exited, out).toEqual({ code: signal === "SIGINT" ? 130 : 143, signal: null });
        expect(pids.filter(alive), "worker processes still running").toEqual([]);
        expect(await scanKeys(prefix)).toEqual([]);
        expect(out).not.toMatch(/demo failed|EPIPE/);
      } finally {
        await client?.close();
        if (demo.exitCode === null && demo.signalCode === null) process.kill(-demo.pid!, "SIGKILL");
      }
    }, 90_000);
  }
});

const scanKeys = (prefix: string): Promise<string[]> => keysUnder(redis, prefix);
