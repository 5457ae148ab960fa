// @serial: bounds how soon a worker is back after a Redis restart (its runs must not stop themselves): other files' load stretches it
// A worker's connections after Redis goes away, on a private redis-server: they try it again every
// quarter second, and the leases are renewed first thing when it is back, so a restart shorter than
// what the lease rides out stops no run (each completes as its one attempt).
import net from "node:net";
import { FlotillaMetrics, METRICS } from "@flotilla/metrics";
import { createTestEnv, scripted, startRedisServer, type TestEnv, type TestRedisServer, waitFor } from "@flotilla/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WORKER_RECONNECT } from "../src/reconnect.ts";

describe("a worker when Redis goes away and comes back", () => {
  let server: TestRedisServer;
  let env: TestEnv;
  beforeAll(async () => {
    server = await startRedisServer();
    env = createTestEnv("reconnect", { redis: server.url });
    // The test's own connection goes through the restarts too: its refused tries are no news.
    env.redis.on("error", () => {});
  });
  afterAll(async () => {
    await env?.close();
    await server?.stop();
  });

  it("tries Redis again at most a quarter second apart, however long it is gone", async () => {
    const worker = await env.worker({ queues: ["tries"], leaseMs: 5000 });
    await server.down();
    // Something that accepts on Redis's port and hangs up at once: each of the worker's tries, timed.
    const tries: number[] = [];
    const listener = net.createServer((socket) => {
      tries.push(performance.now());
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(server.port, "127.0.0.1", () => resolve()));
    const from = performance.now();
    await new Promise((r) => setTimeout(r, 4000));
    await new Promise<void>((resolve) => listener.close(() => resolve()));
    const until = performance.now();
    await server.up();
    await waitFor(async () => worker.ready, { what: "the worker to be ready again" });
    // Past the first tries (100 and 200 ms apart), no gap between two tries of any of its connections is
    // longer than the longest pause (250 ms), with as much again for a loaded machine: a worker comes back
    // within about a quarter second of Redis, not after a backoff of seconds.
    const limit = 2 * WORKER_RECONNECT.maxMs!;
    const start = from + 1000;
    const times = [start, ...tries.filter((t) => t >= start), until];
    const gaps = times.slice(1).map((t, i) => Math.round(t - times[i]!));
    expect(Math.max(...gaps), JSON.stringify(gaps)).toBeLessThan(limit);
    await env.stopWorkers();
  }, 30_000);

  it("stops no run when Redis restarts for a little less than the lease less a renewal (3.2 s at a 5 s lease): leases are renewed first thing when it is back", async () => {
    const metrics = new FlotillaMetrics();
    const queue = "restarted";
    let runs = 0;
    const worker = await env.worker({
      queues: [queue],
      concurrency: 3,
      leaseMs: 5000,
      metrics,
      executor: {
        execute: async ({ signal }) => {
          runs++;
          // 9 s of work, heeding the signal: a run stopped (self-fenced) ends here and is run again.
          for (let i = 0; i < 90; i++) {
            signal.throwIfAborted();
            await new Promise((r) => setTimeout(r, 100));
          }
          return "done";
        },
      },
    });
    const agent = scripted("steady");
    const ids = await Promise.all([1, 2, 3].map((i) => env.submit(agent, `run ${i}`, { queue })));
    await waitFor(async () => runs === 3, { what: "the three runs to start" });
    // Just after a renewal (Redis says the entries are fresh): the whole outage is then counted against
    // the lease, from a known start, whatever the phase of the renewal timer.
    await waitFor(
      async () => {
        const pending = (await env.redis.xpending(env.keys.lane(queue, "normal"), "flotilla", "-", "+", 10)) as Array<[string, string, number, number]>;
        return pending.length === 3 && pending.every(([, , idleMs]) => idleMs < 40);
      },
      { what: "a renewal", intervalMs: 5 },
    );
    await server.restart(3200);
    for (const id of ids) expect(await env.until(id, ["COMPLETED", "FAILED"], { timeoutMs: 30_000 })).toMatchObject({ status: "COMPLETED", attempt: 1 });
    expect(metrics.total(METRICS.selfFenced)).toBe(0);
    expect(runs).toBe(3);
    expect(worker.ready).toBe(true);
    await env.stopWorkers();
  }, 60_000);
});
