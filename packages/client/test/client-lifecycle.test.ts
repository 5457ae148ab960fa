import { ErrorCodes, LifecycleError } from "@flotilla/core";
import { FlotillaMetrics, METRICS } from "@flotilla/metrics";
import { echo, redisUrl } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterEach, describe, expect, it } from "vitest";
import { closeDefaultClient, defaultFlotillaClient, distributed, FlotillaClient } from "../src/index.ts";

describe("the default client", () => {
  const h = useFlotilla("default-client");
  const saved = process.env.FLOTILLA_PREFIX;
  afterEach(async () => {
    await closeDefaultClient();
    if (saved === undefined) delete process.env.FLOTILLA_PREFIX;
    else process.env.FLOTILLA_PREFIX = saved;
  });

  it("is made once from FLOTILLA_PREFIX and REDIS_URL, used by distributed(), and made anew after closeDefaultClient()", async () => {
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
    const client = new FlotillaClient({ redis: redisUrl(), prefix: h.prefix });
    const handle = await client.submit(echo(), "x");
    await handle.result({ timeoutMs: 50 }).catch(() => {}); // opens the subscriber side too
    await client.close();
    await client.close();
    for (const call of [() => client.submit(echo(), "x"), () => client.submitMany([{ agent: echo(), input: "x" }]), () => handle.result()]) {
      await expect(call()).rejects.toMatchObject({ code: ErrorCodes.CLOSED });
    }
    // A client that never opened its subscriber closes too.
    await new FlotillaClient({ redis: redisUrl(), prefix: h.prefix }).close();
  });

  it("counts what it submitted, by queue and agent", async () => {
    const metrics = new FlotillaMetrics();
    const client = new FlotillaClient({ redis: redisUrl(), prefix: h.prefix, metrics });
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
    const client = new FlotillaClient({ redis: redisUrl(), prefix: h.prefix });
    await client.submit(echo(), "a", { queue: "once" });
    await h.redis.srem(h.keys.queues(), "once");
    await client.submit(echo(), "b", { queue: "once" });
    expect(await h.redis.sismember(h.keys.queues(), "once")).toBe(0); // not written again
    expect(await h.redis.xinfo("GROUPS", h.keys.queue("once"))).toHaveLength(1);
    await client.close();
  });
});
