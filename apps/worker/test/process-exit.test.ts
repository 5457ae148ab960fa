// @cluster: closing cluster connections (a Cluster's own disconnect) must let the process exit too
// Issue 39.11, for the packages whose own test folders are not this app's: each one's close() or
// stop() (the graph client, the gateway, a heartbeat, the alert manager) lets the process exit by
// itself, with Redis up and down (nothing listens). Each case is a child process importing the
// package by name (fixtures/exit/close-package.ts). The client, the worker (with its scheduler,
// heartbeat and cancel listener), the bus and core's connections have their own in their packages.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import {
  downRedisEnv,
  exitSteps,
  exitSummary,
  onCluster,
  purgePrefix,
  redisUrl,
  runToExit,
  startFaultProxy,
  testPrefix,
  testRedis,
  testRedisEnv,
} from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";

const child = fileURLToPath(new URL("./fixtures/exit/close-package.ts", import.meta.url));
const prefix = testPrefix("app-exit");
const redis = testRedis();
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const envs = {
  up: async () => testRedisEnv(),
  down: downRedisEnv,
};

/** Runs the child for `pkg` and checks it exited by itself; its steps, by name (the error code of a failed one). */
async function closes(pkg: string, where: keyof typeof envs, timeoutMs = 40_000): Promise<Record<string, string>> {
  const r = await runToExit(child, [pkg], { env: { ...(await envs[where]()), FLOTILLA_PREFIX: prefix }, timeoutMs });
  // What held the process, when it did, is in stderr: shown by the assertion's message.
  expect(exitSummary(r), r.stderr).toEqual({ timedOut: false, code: 0, held: false });
  return exitSteps(r);
}

// Child processes on a loaded machine: minutes, not the default 30 s; each child has its own deadline below.
describe("a process exits by itself once the package it used is closed", { timeout: 60_000 }, () => {
  it.each([
    ["graph", "up"],
    ["graph", "down"],
    ["gateway", "up"],
    ["gateway", "down"],
    ["health", "up"],
    ["health", "down"],
    ["alerts", "up"],
  ] as const)("%s, Redis %s", async (pkg, where) => {
    const steps = await closes(pkg, where);
    expect(steps.closed).toBe("ok");
    if (where === "up") expect(steps.use).toBe("ok");
  });

  // AlertManager.stop() awaits the round in flight: its reads fail fast (the connection is opened
  // with failFast), so a manager stopped while Redis is down stops, and its process exits.
  it("alerts, Redis down", async () => {
    // The default deadline, like the others: at 5 s a loaded machine (load 12) failed it while the child was still starting.
    expect((await closes("alerts", "down")).closed).toBe("ok");
  });
});

// Child processes on a loaded machine: minutes, not the default 30 s; each child has its own deadline below.
describe("flotilla-worker", { timeout: 60_000 }, () => {
  // One Redis behind a proxy that the test closes: not a cluster's several nodes.
  it.skipIf(onCluster())("drains and exits on SIGTERM when Redis went away while it ran: its connections end at the drain deadline", async () => {
    const { hostname, port } = new URL(redisUrl());
    const proxy = await startFaultProxy({ host: hostname, port: Number(port) });
    const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
    const child = spawn(process.execPath, ["--conditions=@flotilla/source", main, "--queues", "app-exit", "--drain-timeout", "1000"], {
      env: { ...process.env, REDIS_URL: proxy.url, REDIS_CLUSTER_NODES: "", FLOTILLA_PREFIX: prefix, FLOTILLA_MODULE: "", FLOTILLA_LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      await new Promise<void>((resolve) =>
        child.stdout.on("data", (d: Buffer) => {
          stdout += d.toString();
          if (stdout.includes('"msg":"ready"')) resolve();
        }),
      );
      await proxy.close();
      child.kill("SIGTERM");
      // Without the deadline's end of the connections it waited for Redis for ever; 1 s of drain, far from 20.
      const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve("still running"), 20_000))]);
      expect(code, `${stdout}\n${stderr}`).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
      await proxy.close().catch(() => {});
    }
  });
});
