// @cluster: the test environment itself on a cluster: its purge and readers ask every master
import { describe, expect, it } from "vitest";
import { collect, createTestEnv, echo, keysUnder, scripted, startRedisServer, testRedis } from "../src/index.ts";

/** Every key under a prefix, from a connection of the test's own. */
async function keysLeft(prefix: string): Promise<string[]> {
  const redis = testRedis();
  try {
    return await keysUnder(redis, prefix);
  } finally {
    await redis.quit();
  }
}

describe("createTestEnv", () => {
  it("runs a task submitted through the env on an env worker; until and events see it", async () => {
    const env = createTestEnv("env-run");
    try {
      const w = await env.worker();
      expect(env.workers).toEqual([w]);
      const id = await env.submit(scripted("greeter"), "ping");
      expect(id).toMatch(/^default\//);
      const record = await env.until(id);
      expect(record).toMatchObject({ status: "COMPLETED", attempt: 1, workerId: w.workerId, detailed: true, result: { text: "Echo: ping" } });
      const events = await env.events(id);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events[0]).toMatchObject({ type: "status", status: "running" });
      expect(events.at(-1)).toMatchObject({ type: "status", status: "completed" });
      // detailed by default: more than the summary (status and text) is kept.
      expect(new Set(events.map((e) => e.type))).toContain("usage");
      expect(await env.redis.xlen(env.keys.queue("default"))).toBe(0);
    } finally {
      await env.close();
    }
  });

  it("submit takes the client's options; until waits for the statuses asked for", async () => {
    const env = createTestEnv("env-options");
    try {
      const id = await env.submit(echo(), "x", { queue: "idle", detailed: false, maxRetries: 2 });
      expect(id).toMatch(/^idle\//);
      expect(await env.until(id, ["PENDING"])).toMatchObject({ status: "PENDING", maxRetries: 2 });
      await expect(env.until(id, ["COMPLETED"], { timeoutMs: 200 })).rejects.toThrow(/gave up waiting for task idle\/.* to reach COMPLETED after 200 ms/);
      await env.worker({ queues: ["idle"] });
      await env.until(id);
      expect(new Set((await env.events(id)).map((e) => e.type))).toEqual(new Set(["status", "text"]));
    } finally {
      await env.close();
    }
  });

  it("client() streams a run; record() writes a PENDING task without a queue entry, for broker.enqueue", async () => {
    const env = createTestEnv("env-record");
    try {
      await env.worker({ queues: ["raw"] });
      const handle = await env.client().submit(echo({ reply: "a b c" }), "x", { queue: "raw", detailed: true });
      const texts = (await collect(handle.stream())).flatMap((e) => (e.type === "text" ? [e.delta] : []));
      expect(texts.join("")).toBe("a b c");

      const name = await env.record("raw/by-hand", { payload: JSON.stringify({ agent: echo().toJSON(), input: "hand-made" }), agent: "echo" });
      expect(name).toBe("by-hand");
      expect(await env.store.get("raw/by-hand")).toMatchObject({ status: "PENDING" });
      // No queue entry: nothing runs it until the test enqueues it.
      await new Promise((r) => setTimeout(r, 300));
      expect((await env.store.get("raw/by-hand"))?.status).toBe("PENDING");
      await env.broker.enqueue("raw", name);
      expect(await env.until("raw/by-hand")).toMatchObject({ status: "COMPLETED", result: { text: "Echo: hand-made" } });
    } finally {
      await env.close();
    }
  });

  it("stopWorkers stops the env's workers (or the ones named) and takes them off its list", async () => {
    const env = createTestEnv("env-stop");
    try {
      const [a, b] = [await env.worker(), await env.worker()];
      await env.stopWorkers({ workers: [a] });
      expect(env.workers).toEqual([b]);
      expect(a.ready).toBe(false);
      expect(b.ready).toBe(true);
      await env.stopWorkers();
      expect(env.workers).toEqual([]);
      expect(b.ready).toBe(false);
    } finally {
      await env.close();
    }
  });

  it("close() stops workers, closes clients and leaves no key behind; the env cannot be used after", async () => {
    const env = createTestEnv("env-close");
    const w = await env.worker({ queues: ["q1", "q2"] });
    const client = env.client();
    const done = await client.submit(echo(), "done", { queue: "q1" });
    await done.result();
    await env.submit(echo(), "never run", { queue: "elsewhere", idempotencyKey: "k" }); // an idempotency key too
    await env.submit(echo(), "later", { queue: "q2", delayMs: 60_000 });
    await env.record("q1/raw");
    expect((await keysLeft(env.prefix)).length).toBeGreaterThan(5);

    await env.close();
    expect(await keysLeft(env.prefix)).toEqual([]);
    expect(w.ready).toBe(false);
    expect(env.redis.status).toBe("end");
    await expect(client.submit(echo(), "x")).rejects.toThrow();
    expect(() => env.client()).toThrow(/closed/);
    await expect(env.worker()).rejects.toThrow(/closed/);
    await env.close(); // again: nothing to do
  });

  it("runs on another Redis and prefix when told", async () => {
    const server = await startRedisServer({ aof: false });
    const env = createTestEnv("unused", { redis: server.url, prefix: "custom-prefix" });
    const shared = testRedis();
    const own = testRedis(server.url);
    try {
      expect(env.prefix).toBe("custom-prefix");
      await env.worker();
      expect((await env.until(await env.submit(echo(), "custom"))).status).toBe("COMPLETED");
      expect((await own.keys("custom-prefix:*")).length).toBeGreaterThan(0);
      expect(await shared.keys("custom-prefix:*")).toEqual([]);
      await env.close();
      expect(await own.keys("*")).toEqual([]);
    } finally {
      await env.close();
      shared.disconnect();
      own.disconnect();
      await server.stop();
    }
  });
});
