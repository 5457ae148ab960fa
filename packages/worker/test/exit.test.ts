// @cluster: closing cluster connections (a Cluster's own disconnect) must let the process exit too
// Issue 39.11: a worker's stop() lets the process exit at once — started or still starting, with
// Redis up, down (nothing listens) or hung (it accepts the connection and never answers) — or, when
// Redis went away while it ran, at its drain deadline. Each case is a child process
// (fixtures/exit-after-stop.ts) that must exit by itself.
import {
  downRedisEnv,
  exitSteps,
  exitSummary,
  onCluster,
  purgePrefix,
  redisUrl,
  runToExit,
  startFaultProxy,
  startHungRedis,
  testPrefix,
  testRedis,
  testRedisEnv,
} from "@flotilla/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const child = new URL("./fixtures/exit-after-stop.ts", import.meta.url).pathname;
const prefix = testPrefix("worker-exit");
const redis = testRedis();
let hung: Awaited<ReturnType<typeof startHungRedis>>;
beforeAll(async () => {
  hung = await startHungRedis();
});
afterAll(async () => {
  await hung.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const envs = {
  up: async () => testRedisEnv(),
  down: downRedisEnv,
  hung: async () => hung.env(),
};

// Child processes on a loaded machine: minutes, not the default 30 s; each child has its own deadline below.
describe("a process with a worker exits by itself once it is stopped", { timeout: 60_000 }, () => {
  it.each([
    ["started", "up", undefined],
    ["starting", "up", undefined],
    ["started", "down", "REDIS_UNAVAILABLE"],
    ["starting", "down", "REDIS_UNAVAILABLE"],
    ["started", "hung", "REDIS_UNAVAILABLE"],
  ] as const)("%s, Redis %s", async (scenario, where, startCode) => {
    const r = await runToExit(child, [scenario], { env: { ...(await envs[where]()), FLOTILLA_PREFIX: prefix }, timeoutMs: 40_000 });
    // What held the process, when it did, is in stderr: shown by the assertion's message.
    expect(exitSummary(r), r.stderr).toEqual({ timedOut: false, code: 0, held: false });
    const steps = exitSteps(r);
    expect(steps.stopped).toBe("ok");
    // Stopped while starting, a start may end either way; a start that could not connect says why.
    if (scenario === "started") expect(steps.start).toBe(startCode ?? "ok");
    else expect(steps.start).toBeDefined();
  });

  // One Redis behind a proxy that the test closes: not a cluster's several nodes.
  it.skipIf(onCluster())("started, then Redis lost: stop() ends the connections at the drain deadline", async () => {
    const { hostname, port } = new URL(redisUrl());
    const proxy = await startFaultProxy({ host: hostname, port: Number(port) });
    try {
      const r = await runToExit(child, ["lost"], {
        env: { REDIS_URL: proxy.url, REDIS_CLUSTER_NODES: "", FLOTILLA_PREFIX: prefix },
        timeoutMs: 40_000,
        onReport: (report) => {
          if ((report as { step?: string }).step === "start") void proxy.close();
        },
      });
      expect(exitSummary(r), r.stderr).toEqual({ timedOut: false, code: 0, held: false });
      expect((r.reports as Array<{ step: string }>).map((s) => s.step)).toEqual(["start", "lost", "stopped"]);
    } finally {
      await proxy.close().catch(() => {});
    }
  });
});
