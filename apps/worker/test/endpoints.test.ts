import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Agent } from "@flotilla/agent";
import { FlotillaClient } from "@flotilla/client";
import { startRedisServer, testPrefix, waitFor } from "@flotilla/testing";
import { Redis } from "ioredis";
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

  it("answers /readyz 503 while claims fail after Redis came back empty, 200 once the groups are made again, and runs what comes after", async () => {
    // Redis reads its users from this file at every start: the second restart comes back refusing
    // XGROUP, so the worker cannot make its groups again until the test allows it.
    const dir = mkdtempSync(join(tmpdir(), "flotilla-acl-"));
    const acl = join(dir, "users.acl");
    writeFileSync(acl, "user default on nopass ~* &* +@all\n");
    const server = await startRedisServer({ aof: false, args: ["--aclfile", acl] });
    const admin = new Redis(server.url);
    const prefix = testPrefix("endpoints-empty");
    const client = new FlotillaClient({ redis: server.url, prefix });
    const agent = new Agent({ name: "probe", model: "scripted:x" });
    const lines: Array<Record<string, unknown>> = [];
    try {
      child = spawn(process.execPath, ["--conditions=@flotilla/source", main, "--metrics-port", "0", "--queues", "probe"], {
        env: { ...process.env, REDIS_URL: server.url, FLOTILLA_PREFIX: prefix },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        const complete = out.split("\n");
        out = complete.pop()!;
        for (const line of complete) if (line.startsWith("{")) lines.push(JSON.parse(line));
      });
      const ready = await waitFor(async () => lines.find((l) => l.msg === "ready") as { metricsPort: number } | undefined, { what: "the worker to start" });
      const base = `http://127.0.0.1:${ready.metricsPort}`;
      const readyz = async () => {
        const res = await fetch(`${base}/readyz`);
        return { status: res.status, body: (await res.json()) as { status: string; reasons?: Array<{ reason: string; detail: string }> } };
      };
      const claimsFailing = () => lines.filter((l) => l.msg === "worker not ready" && l.reason === "claiming");
      expect((await readyz()).status).toBe(200);

      // Emptied: the worker's read meets NOGROUP, it says so once, makes its groups and is ready again by itself.
      await server.down();
      await server.up();
      await waitFor(async () => claimsFailing().length === 1, { what: "the worker to log its claims failing", timeoutMs: 20_000 });
      expect(claimsFailing()[0]).toMatchObject({ level: "warn", detail: expect.stringMatching(/^NOGROUP/) });
      await waitFor(async () => (await readyz()).status === 200, { what: "readyz back to 200", timeoutMs: 20_000 });
      await expect((await client.submit(agent, "after the first restart", { queue: "probe" })).result({ timeoutMs: 20_000 })).resolves.toBeTruthy();

      // Emptied again, and the groups cannot be made: not ready for as long as that lasts, and why.
      writeFileSync(acl, "user default on nopass ~* &* +@all -xgroup\n");
      await server.down();
      await server.up();
      const failing = await waitFor(
        async () => {
          const r = await readyz();
          return r.status === 503 && r.body.reasons?.some((x) => x.reason === "claiming") ? r.body : undefined;
        },
        { what: "readyz to go 503 while claims fail", timeoutMs: 20_000 },
      );
      expect(failing).toMatchObject({ status: "not ready", reasons: [{ reason: "claiming", detail: expect.stringMatching(/^NOGROUP/) }] });
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      await waitFor(async () => lines.filter((l) => l.msg === "could not make the consumer groups again; retrying").length >= 2, {
        what: "the worker to try again",
        timeoutMs: 20_000,
      });
      expect((await readyz()).status).toBe(503);
      expect(claimsFailing()).toHaveLength(2); // once per change, not once per failed claim

      await admin.call("ACL", "SETUSER", "default", "+xgroup");
      await waitFor(async () => (await readyz()).status === 200, { what: "readyz back to 200 once the groups could be made", timeoutMs: 20_000 });
      await expect((await client.submit(agent, "after the second restart", { queue: "probe" })).result({ timeoutMs: 20_000 })).resolves.toBeTruthy();
      expect(lines.filter((l) => l.msg === "worker ready").length).toBeGreaterThanOrEqual(2);
    } finally {
      child?.kill("SIGTERM");
      await client.close();
      admin.disconnect();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
