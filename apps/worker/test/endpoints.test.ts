import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Agent } from "@flotilla/agent";
import { FlotillaClient } from "@flotilla/client";
import { startRedisServer, testPrefix, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

describe("worker endpoints (--metrics-port)", () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
  });

  it("serves /healthz, /readyz (503 while Redis is down) and /metrics in Prometheus text", async () => {
    // A Redis of its own, to take down and bring back.
    const server = await startRedisServer({ aof: false });
    const prefix = testPrefix("endpoints");
    const client = new FlotillaClient({ redis: server.url, prefix });
    try {
      child = spawn(process.execPath, ["--conditions=@flotilla/source", main, "--metrics-port", "0", "--queues", "probe"], {
        env: { ...process.env, REDIS_URL: server.url, FLOTILLA_PREFIX: prefix },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const ready = await new Promise<{ metricsPort: number }>((resolve, reject) => {
        let out = "";
        child!.stdout!.on("data", (d: Buffer) => {
          out += d.toString();
          const line = out.split("\n").find((l) => l.includes('"msg":"ready"'));
          if (line) resolve(JSON.parse(line));
        });
        child!.once("exit", (code) => reject(new Error(`worker exited (${code}): ${out}`)));
      });
      const base = `http://127.0.0.1:${ready.metricsPort}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);

      const agent = new Agent({ name: "probe", model: "scripted:x" });
      await (await client.submit(agent, "count me", { queue: "probe" })).result();
      const text = await waitFor(
        async () => {
          const body = await (await fetch(`${base}/metrics`)).text();
          return /flotilla_tasks_completed\S*\{[^}]*queue="probe"[^}]*\} 1/.test(body) ? body : undefined;
        },
        { what: "the completed task in /metrics" },
      );
      expect(text).toMatch(/# TYPE flotilla_tasks_completed\S* counter/);
      expect(text).toMatch(/flotilla_task_duration\S*_count\{[^}]*queue="probe"/);
      expect(text).toMatch(/flotilla_workers_live\S* \d/);

      await server.down();
      await waitFor(async () => (await fetch(`${base}/readyz`)).status === 503, { what: "readyz to go 503 while Redis is down" });
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      await server.up();
      await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, { what: "readyz to come back", timeoutMs: 20_000 });
    } finally {
      child?.kill("SIGTERM");
      await client.close();
      await server.stop();
    }
  }, 60_000);
});
