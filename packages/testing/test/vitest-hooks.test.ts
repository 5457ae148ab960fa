import type { Worker } from "@flotilla/worker";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { echo, keysUnder, testRedis } from "../src/index.ts";
import { useFlotilla } from "../src/vitest.ts";

let closedPrefix = "";
const seen: Worker[] = [];

describe("useFlotilla", () => {
  const env = useFlotilla("vitest-hooks");
  let long: Worker;
  beforeAll(async () => {
    closedPrefix = env.prefix;
    long = await env.worker({ queues: ["long"] });
  });
  beforeEach(async () => {
    seen.push(await env.worker({ queues: ["each"] }));
  });

  it("gives a test the env, its workers started in beforeAll and beforeEach", async () => {
    const own = await env.worker();
    seen.push(own);
    expect(env.workers).toEqual([long, seen[0], own]);
    expect(seen.every((w) => w.ready)).toBe(true);
    expect((await env.until(await env.submit(echo(), "leaves keys behind"))).status).toBe("COMPLETED");
  });

  it("stopped the workers the previous test started, and kept the beforeAll one", async () => {
    expect(seen).toHaveLength(3);
    expect(seen[0]!.ready).toBe(false);
    expect(seen[1]!.ready).toBe(false);
    expect(await env.redis.exists(env.keys.worker(seen[1]!.workerId))).toBe(0);
    expect(seen[2]!.ready).toBe(true); // this test's beforeEach worker
    expect(long.ready).toBe(true);
    expect(env.workers).toEqual([long, seen[2]]);
  });
});

describe("after a useFlotilla suite", () => {
  it("closed its env: no key left under its prefix", async () => {
    expect(closedPrefix).not.toBe("");
    const redis = testRedis();
    const left = await keysUnder(redis, closedPrefix);
    await redis.quit();
    expect(left).toEqual([]);
    expect(seen[2]!.ready).toBe(false);
  });
});
