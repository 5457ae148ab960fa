// @cluster: closing cluster connections (a Cluster's own disconnect) must let the process exit too
// Issues 39.11 and 40.7: every client's close() (and closeDefaultClient()) lets the process exit at
// once, with Redis up, down (nothing listens) or hung (it accepts the connection and never answers);
// and a client that finds no Redis says so in Flotilla's words, not ioredis's. Each case is a child
// process (fixtures/exit-after-close.ts) that must exit by itself.
import { downRedisEnv, exitSummary, purgePrefix, runToExit, startHungRedis, testPrefix, testRedis, testRedisEnv } from "@flotilla/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const child = new URL("./fixtures/exit-after-close.ts", import.meta.url).pathname;
const prefix = testPrefix("client-exit");
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
  up: () => testRedisEnv(),
  down: downRedisEnv,
  hung: () => hung.env(),
};

async function run(scenario: string, redisEnv: Record<string, string>) {
  const r = await runToExit(child, [scenario], { env: { ...redisEnv, FLOTILLA_PREFIX: prefix }, timeoutMs: 40_000 });
  // What held the process, when it did, is in stderr: shown by the assertion's message.
  expect(exitSummary(r), r.stderr).toEqual({ timedOut: false, code: 0, held: false });
  return Object.fromEntries((r.reports as Array<{ step: string; code?: string; message?: string }>).map((s) => [s.step, s]));
}

// Child processes on a loaded machine: minutes, not the default 30 s; each child has its own deadline below.
describe("a process with a client exits by itself once it is closed", { timeout: 60_000 }, () => {
  it.each(["idle", "submit", "result", "stream", "watch", "graphs", "in-flight", "distributed"])("%s, Redis up", async (scenario) => {
    const steps = await run(scenario, envs.up());
    expect(steps.closed).toEqual({ step: "closed" });
    if (scenario === "result") expect(steps.result?.code).toBe("WAIT_TIMEOUT");
    if (["submit", "stream", "watch", "graphs", "distributed"].includes(scenario))
      expect(steps[scenario === "distributed" ? "submit" : scenario]).toEqual({ step: expect.any(String) });
  });

  it.each(["idle", "submit", "in-flight", "distributed"])("%s, Redis down", async (scenario) => {
    const steps = await run(scenario, await envs.down());
    expect(steps.closed).toEqual({ step: "closed" });
    if (scenario === "in-flight") expect([steps.submit?.code, steps.list?.code]).toEqual(["CLOSED", "CLOSED"]);
  });

  it.each(["idle", "submit"])("%s, Redis hung", async (scenario) => {
    const steps = await run(scenario, envs.hung());
    expect(steps.closed).toEqual({ step: "closed" });
  });
});

// Child processes on a loaded machine: minutes, not the default 30 s; each child has its own deadline below.
describe("a client that finds no Redis", { timeout: 60_000 }, () => {
  it("fails with REDIS_UNAVAILABLE in Flotilla's words, naming where the address came from", async () => {
    const env = await envs.down();
    const steps = await run("distributed", env);
    const address = env.REDIS_URL.slice("redis://".length);
    expect(steps.submit).toEqual({
      step: "submit",
      code: "REDIS_UNAVAILABLE",
      message: `Redis at ${address} (REDIS_URL) is unreachable: connect ECONNREFUSED ${address}`,
    });
  });
});
