// @cluster: closing cluster connections (a Cluster's own disconnect) must let the process exit too
// Issue 39.11: a process that made a Bus against a Redis that is down, then closed it, never exited.
// Each case runs a child (fixtures/exit-after-close.ts) that works, closes, and must then exit by
// itself, against the suite's Redis and against a port where nothing listens.
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

const child = new URL("./fixtures/exit-after-close.ts", import.meta.url).pathname;
const prefix = testPrefix("bus-exit");
const redis = testRedis();
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

async function run(scenario: string, env: Record<string, string>, args: string[] = [], onReport?: (report: unknown) => void) {
  const r = await runToExit(child, [scenario, ...args], { env: { ...env, FLOTILLA_PREFIX: prefix }, timeoutMs: 40_000, ...(onReport && { onReport }) });
  // What held the process, when it did, is in stderr: shown by the assertion's message.
  expect(exitSummary(r), r.stderr).toEqual({ timedOut: false, code: 0, held: false });
  return exitSteps(r);
}

// Child processes on a loaded machine: minutes, not the default 30 s; each child has its own deadline below.
describe("a process with a Bus exits by itself once it is closed", { timeout: 60_000 }, () => {
  it.each(["idle", "publish", "request", "in-flight", "worker"])("%s, Redis up", async (scenario) => {
    const steps = await run(scenario, testRedisEnv());
    expect(steps.closed).toBe("ok");
    if (scenario === "publish") expect(steps.publish).toBe("ok");
    if (scenario === "request") expect(steps.request).toBe("WAIT_TIMEOUT");
    if (scenario === "in-flight") expect(steps.request).toBe("CLOSED");
  });

  it.each(["idle", "publish", "request", "in-flight", "worker"])("%s, Redis down", async (scenario) => {
    const steps = await run(scenario, await downRedisEnv(), ["60000"]);
    expect(steps.closed).toBe("ok");
    // Flotilla's error, with its stable code, not ioredis's.
    if (scenario === "publish" || scenario === "request") expect(steps[scenario]).toBe("REDIS_UNAVAILABLE");
    if (scenario === "in-flight") expect([steps.publish, steps.request]).toEqual(["CLOSED", "CLOSED"]);
    if (scenario === "worker") expect(steps.start).toBe("REDIS_UNAVAILABLE");
  });

  // One Redis behind a proxy that the test closes: not a cluster's several nodes.
  it.skipIf(onCluster())("worker, Redis lost while it ran", async () => {
    const { hostname, port } = new URL(redisUrl());
    const proxy = await startFaultProxy({ host: hostname, port: Number(port) });
    try {
      const steps = await run("worker-lost", { REDIS_URL: proxy.url, REDIS_CLUSTER_NODES: "" }, [], (report) => {
        if ((report as { step?: string }).step === "start") void proxy.close();
      });
      expect(steps).toMatchObject({ start: "ok", lost: "ok", closed: "ok" });
    } finally {
      await proxy.close().catch(() => {});
    }
  });
});
