// @cluster: the default client finds the suite's Redis from the environment (REDIS_CLUSTER_NODES on a cluster)
import { ErrorCodes, LifecycleError } from "@flotilla/core";
import { FlotillaMetrics, METRICS } from "@flotilla/metrics";
import { echo, startRedisServer, testConnection, testRedis, testRedisEnv } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterEach, describe, expect, it } from "vitest";
import { closeDefaultClient, DuplicateTaskError, defaultFlotillaClient, distributed, FlotillaClient } from "../src/index.ts";

describe("the default client", () => {
  const h = useFlotilla("default-client");
  // What the default client reads: the prefix, and the suite's Redis as a process's environment names it.
  const names = ["FLOTILLA_PREFIX", ...Object.keys(testRedisEnv())];
  const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]));
  afterEach(async () => {
    await closeDefaultClient();
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it("is made once from FLOTILLA_PREFIX and REDIS_URL (or REDIS_CLUSTER_NODES), used by distributed(), and made anew after closeDefaultClient()", async () => {
    Object.assign(process.env, testRedisEnv());
    process.env.FLOTILLA_PREFIX = h.prefix;
    const first = defaultFlotillaClient();
    expect(defaultFlotillaClient()).toBe(first);
    await h.worker();
    const handle = await distributed(echo(), "by default");
    expect(await handle.result()).toMatchObject({ text: "Echo: by default" });
    expect(await h.redis.exists(h.keys.task(handle.taskId))).toBe(1); // under the env's prefix
    await closeDefaultClient();
    await expect(first.submit(echo(), "x")).rejects.toBeInstanceOf(LifecycleError);
    const second = defaultFlotillaClient();
    expect(second).not.toBe(first);
    await closeDefaultClient();
    await closeDefaultClient(); // none open: nothing to do
  });

  it("takes the default prefix when FLOTILLA_PREFIX is unset", async () => {
    delete process.env.FLOTILLA_PREFIX;
    const client = defaultFlotillaClient();
    expect(client.keys.prefix).toBe("flotilla");
  });
});

describe("FlotillaClient lifecycle", () => {
  const h = useFlotilla("client-lifecycle");

  it("refuses every call once closed with a LifecycleError, and closes once however often asked", async () => {
    const client = new FlotillaClient({ redis: testConnection(), prefix: h.prefix });
    const handle = await client.submit(echo(), "x");
    await handle.result({ timeoutMs: 50 }).catch(() => {}); // opens the subscriber side too
    await client.close();
    await client.close();
    for (const call of [() => client.submit(echo(), "x"), () => client.submitMany([{ agent: echo(), input: "x" }]), () => handle.result()]) {
      await expect(call()).rejects.toMatchObject({ code: ErrorCodes.CLOSED });
    }
    // A client that never opened its subscriber closes too.
    await new FlotillaClient({ redis: testConnection(), prefix: h.prefix }).close();
  });

  it("counts what it submitted, by queue and agent", async () => {
    const metrics = new FlotillaMetrics();
    const client = new FlotillaClient({ redis: testConnection(), prefix: h.prefix, metrics });
    await client.submit(echo(), "a", { queue: "m1" });
    await client.submitMany([
      { agent: echo(), input: "b", options: { queue: "m1" } },
      { agent: echo(), input: "c", options: { queue: "m2" } },
    ]);
    expect(metrics.total(METRICS.submitted, { queue: "m1", agent: "echo" })).toBe(2);
    expect(metrics.total(METRICS.submitted, { queue: "m2", agent: "echo" })).toBe(1);
    await client.close();
  });

  it("makes a queue's group and registers it once, however many submits", async () => {
    const client = new FlotillaClient({ redis: testConnection(), prefix: h.prefix });
    await client.submit(echo(), "a", { queue: "once" });
    await h.redis.srem(h.keys.queues(), "once");
    await client.submit(echo(), "b", { queue: "once" });
    expect(await h.redis.sismember(h.keys.queues(), "once")).toBe(0); // not written again
    expect(await h.redis.xinfo("GROUPS", h.keys.queue("once"))).toHaveLength(1);
    await client.close();
  });

  it("closes its subscriber connection too", async () => {
    const server = await startRedisServer({ aof: false });
    const admin = testRedis(server.url);
    try {
      const client = new FlotillaClient({ redis: server.url, prefix: h.prefix });
      const handle = await client.submit(echo(), "x");
      await handle.result({ timeoutMs: 50 }).catch(() => {}); // opens the subscriber
      const names = async () => ((await admin.client("LIST")) as string).split("\n").filter((l) => /name=flotilla:/.test(l)).length;
      expect(await names()).toBe(2);
      await client.close();
      expect(await names()).toBe(0);
    } finally {
      await admin.quit();
      await server.stop();
    }
  });

  it("frees an idempotency key whose submit failed, so the next submit with it makes a new task", async () => {
    const client = new FlotillaClient({ redis: testConnection(), prefix: h.prefix });
    await client.submit(echo(), "x", { queue: "idem", taskId: "taken" });
    await expect(client.submit(echo(), "x", { queue: "idem", taskId: "taken", idempotencyKey: "k" })).rejects.toBeInstanceOf(DuplicateTaskError);
    const fresh = await client.submit(echo(), "x", { queue: "idem", idempotencyKey: "k" });
    expect(fresh.taskId).not.toBe("idem/taken");
    await client.close();
  });

  it("puts a queue back in the registry when a batch finds its lanes gone", async () => {
    const client = new FlotillaClient({ redis: testConnection(), prefix: h.prefix });
    await client.submitMany([{ agent: echo(), input: "a", options: { queue: "lost" } }]);
    // Redis lost the queue (as after a restart without persistence): its lanes and registry entry.
    await h.redis.del(h.keys.queue("lost"), h.keys.lane("lost", "high"), h.keys.lane("lost", "low"));
    await h.redis.srem(h.keys.queues(), "lost");
    await client.submitMany([{ agent: echo(), input: "b", options: { queue: "lost" } }]);
    expect(await h.redis.sismember(h.keys.queues(), "lost")).toBe(1);
    await client.close();
  });
});
