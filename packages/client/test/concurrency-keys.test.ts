// @cluster: three workers share each key's limit
import { Agent } from "@flotilla/agent";
import { type JsonValue, sleep, ValidationError } from "@flotilla/core";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import type { Executor } from "@flotilla/worker";
import { describe, expect, it } from "vitest";

// Concurrency keys across a fleet: 3 workers, the limit of each key holds across all of them.
const env = useFlotilla("concurrency-keys");
const agent = new Agent({ name: "tenant-work", model: "scripted:x" });

/** Runs each task for `ms`, honouring cancel. */
const busy = (ms: number): Executor => ({
  execute: (ctx) =>
    new Promise<JsonValue>((resolve, reject) => {
      const timer = setTimeout(() => resolve(null), ms);
      ctx.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(ctx.signal.reason);
      });
    }),
});

/** The most tasks whose [startedAt, completedAt) intervals overlap at one instant (Redis's clock). */
function maxOverlap(spans: Array<[number, number]>): number {
  const edges = spans.flatMap(([s, e]) => [
    [s, 1],
    [e, -1],
  ]) as Array<[number, number]>;
  // An end at the same instant as a start frees the slot first.
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) {
    now += d;
    most = Math.max(most, now);
  }
  return most;
}

describe("concurrency keys", () => {
  it("3 workers × 10: tenant A (60 tasks, limit 2) and B (30, limit 5) never exceed their limits; B does not wait behind A", async () => {
    const taskMs = 100;
    for (let i = 0; i < 3; i++) await env.worker({ queues: ["tenants"], concurrency: 10, executor: busy(taskMs) });
    const client = env.client();
    const submit = (tenant: string, limit: number, n: number) =>
      client.submitMany(
        Array.from({ length: n }, () => ({ agent, input: tenant, options: { queue: "tenants", concurrencyKey: tenant, concurrencyLimit: limit } })),
      );
    const started = Date.now();
    const [a, b] = await Promise.all([submit("tenant-a", 2, 60), submit("tenant-b", 5, 30)]);
    // Sampled from Redis while they run: the keys' running sets.
    const sampled = { a: 0, b: 0 };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const [na, nb] = await Promise.all([
          env.redis.scard(env.keys.concurrency("tenants", "tenant-a")),
          env.redis.scard(env.keys.concurrency("tenants", "tenant-b")),
        ]);
        sampled.a = Math.max(sampled.a, na);
        sampled.b = Math.max(sampled.b, nb);
        await sleep(5);
      }
    })();
    await Promise.all([...a!, ...b!].map((h) => h.result({ timeoutMs: 60_000 })));
    sampling = false;
    await sampler;
    const elapsed = Date.now() - started;
    const records = async (handles: typeof a) => (await env.store.getMany(handles!.map((h) => h.taskId))).map((t) => t!);
    const [ra, rb] = await Promise.all([records(a), records(b)]);
    // Exact, from the records: when each ran, on Redis's clock.
    expect(maxOverlap(ra.map((t) => [t.startedAt!, t.completedAt!]))).toBe(2);
    expect(maxOverlap(rb.map((t) => [t.startedAt!, t.completedAt!]))).toBeLessThanOrEqual(5);
    expect(sampled.a).toBeLessThanOrEqual(2);
    expect(sampled.b).toBeLessThanOrEqual(5);
    expect(sampled.a).toBeGreaterThan(0);
    // The bound is A's: 60 tasks, 2 at a time. Near it: a parked task starts as soon as a slot frees.
    const bound = (60 / 2) * taskMs;
    expect(elapsed).toBeGreaterThanOrEqual(bound);
    expect(elapsed).toBeLessThan(bound * 2.5);
    // B ran beside A, not behind it: its last task ended long before A's.
    const lastEnd = (rs: typeof ra) => Math.max(...rs.map((t) => t.completedAt!));
    const firstCreate = Math.min(...ra.map((t) => t.createdAt));
    expect(lastEnd(rb) - firstCreate).toBeLessThan((lastEnd(ra) - firstCreate) / 2);
    // Nothing of the keys is left behind.
    expect(await env.redis.exists(env.keys.concurrency("tenants", "tenant-a"), `${env.keys.concurrency("tenants", "tenant-a")}:waiting`)).toBe(0);
  });

  it("a parked task can be cancelled while it waits; the key's next task takes the slot", async () => {
    await env.worker({ queues: ["park"], concurrency: 4, executor: busy(300) });
    const client = env.client();
    const opts = { queue: "park", concurrencyKey: "solo" };
    const first = await client.submit(agent, 1, opts);
    const second = await client.submit(agent, 2, opts);
    const third = await client.submit(agent, 3, opts);
    await env.until(first.taskId, ["RUNNING"]);
    // Its status says why it waits.
    await waitFor(async () => (await second.status()).parked === true, { what: "the second task parked" });
    expect(await second.status()).toMatchObject({ status: "PENDING", concurrencyKey: "solo", concurrencyLimit: 1, parked: true });
    expect(await second.cancel("not wanted")).toMatchObject({ outcome: "cancelled" });
    await third.result({ timeoutMs: 10_000 });
    const [r1, r3] = await env.store.getMany([first.taskId, third.taskId]);
    expect(r3!.startedAt!).toBeGreaterThanOrEqual(r1!.completedAt!);
    expect((await second.status()).status).toBe("CANCELLED");
  });

  it("a queue's default limit (the client's concurrencyLimits) holds for tasks that give a key and no limit", async () => {
    await env.worker({ queues: ["defaults"], concurrency: 8, executor: busy(150) });
    const client = env.client({ concurrencyLimits: { defaults: 2 } });
    const handles = await client.submitMany(Array.from({ length: 6 }, (_, i) => ({ agent, input: i, options: { queue: "defaults", concurrencyKey: "t" } })));
    await Promise.all(handles.map((h) => h.result({ timeoutMs: 20_000 })));
    const records = await env.store.getMany(handles.map((h) => h.taskId));
    expect(maxOverlap(records.map((r) => [r!.startedAt!, r!.completedAt!]))).toBe(2);
    expect(() => env.client({ concurrencyLimits: { defaults: 0 } })).toThrow(/concurrencyLimits/);
  });

  it("refuses a limit without a key, and a key that is no key name", async () => {
    const client = env.client();
    await expect(client.submit(agent, 1, { concurrencyLimit: 2 })).rejects.toThrow(ValidationError);
    await expect(client.submit(agent, 1, { concurrencyKey: "a b" })).rejects.toThrow(/concurrencyKey/);
  });
});
