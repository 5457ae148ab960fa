// A Redis at its maxmemory (noeviction), on a private redis-server: the worker stays up, takes no
// new work, finishes what it runs, says why it is not ready, and carries on by itself once memory
// frees; a submit is refused whole with REDIS_FULL.
import { ErrorCodes, isRedisFull, RedisFullError } from "@flotilla/core";
import { readRedisMemory } from "@flotilla/core/redis";
import type { WorkerRecord } from "@flotilla/health";
import { type AlertEvent, AlertManager } from "@flotilla/metrics";
import { createTestEnv, echo, startRedisServer, type TestEnv, type TestRedisServer, waitFor } from "@flotilla/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Worker } from "../src/index.ts";

describe("a full Redis (maxmemory reached, noeviction)", () => {
  let server: TestRedisServer;
  let env: TestEnv;
  beforeAll(async () => {
    server = await startRedisServer({ aof: false, args: ["--maxmemory-policy", "noeviction"] });
    env = createTestEnv("redis-full", { redis: server.url });
  });
  afterAll(async () => {
    await env?.close();
    await server?.stop();
  });

  /** Sets maxmemory well under what Redis uses now: every write that grows memory is refused from here on. */
  const fill = async () => {
    const { usedBytes } = await readRedisMemory(env.redis);
    await env.redis.config("SET", "maxmemory", String(Math.floor(usedBytes * 0.8)));
  };
  const unfill = () => env.redis.config("SET", "maxmemory", "0");

  it("refuses a submit whole, with REDIS_FULL: no record, no queue entry, no index entry", async () => {
    const client = env.client();
    // The queue's keys exist, and this client has registered the queue: the submit below is the create script alone.
    await client.submit(echo(), "before");
    const lane = env.keys.lane("default", "normal");
    const before = { entries: await env.redis.xlen(lane), indexed: await env.redis.zcard(env.keys.taskIndex("default")), keys: await env.redis.dbsize() };
    await fill();
    try {
      const err = await client.submit(echo(), "refused", { taskId: "default/refused" }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(RedisFullError);
      expect(err).toMatchObject({ code: ErrorCodes.REDIS_FULL });
      expect(isRedisFull(err)).toBe(true);
      expect(await env.redis.exists(env.keys.task("default/refused"))).toBe(0);
      expect({ entries: await env.redis.xlen(lane), indexed: await env.redis.zcard(env.keys.taskIndex("default")), keys: await env.redis.dbsize() }).toEqual(
        before,
      );
    } finally {
      await unfill();
    }
  });

  it("stays up, takes no new work, finishes what it runs, is not ready (redis-full) and alerts; carries on alone once memory frees: nothing lost, nothing run twice", async () => {
    const runs = new Map<string, number>();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const worker: Worker = await env.worker({
      queues: ["full"],
      concurrency: 4,
      executor: {
        execute: async (ctx) => {
          runs.set(ctx.taskId, (runs.get(ctx.taskId) ?? 0) + 1);
          await gate;
          return "done";
        },
      },
    });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await env.submit(echo(), i, { queue: "full" }));
    await waitFor(() => runs.size === 4);
    await fill();
    await waitFor(() => worker.readiness.reasons.some((r) => r.reason === "redis-full"), { timeoutMs: 5000 });
    expect(worker.ready).toBe(false);
    expect(worker.readiness.reasons.find((r) => r.reason === "redis-full")!.detail).toMatch(/Redis at .* is full/);
    // The fleet sees it too: the heartbeat (a script that runs on a full Redis) says why.
    const record = async () => JSON.parse((await env.redis.get(env.keys.worker(worker.workerId)))!) as WorkerRecord;
    await waitFor(async () => (await record()).state === "not-ready", { timeoutMs: 5000 });
    expect((await record()).reasons).toEqual(
      expect.arrayContaining([expect.objectContaining({ reason: "redis-full", detail: expect.stringMatching(/is full/) })]),
    );
    const alerts: AlertEvent[] = [];
    const manager = new AlertManager({ redis: env.redis, prefix: env.prefix, queues: ["full"], sinks: [(e) => void alerts.push(e)] });
    await manager.evaluate();
    expect(alerts).toMatchObject([{ id: "redis_memory_near_limit:*", rule: "redis_memory_near_limit", state: "firing", severity: "critical" }]);

    // The running tasks finish and are recorded (their settles are let through); none starts after
    // them. The worker's heartbeat goes on: it is alive, only full.
    const lastBeat = async () => (JSON.parse((await env.redis.get(env.keys.worker(worker.workerId)))!) as { lastBeat: number }).lastBeat;
    const beatWhenFull = await lastBeat();
    release();
    for (const id of [...runs.keys()]) expect((await env.until(id)).status).toBe("COMPLETED");
    await new Promise((r) => setTimeout(r, 1500));
    expect(runs.size).toBe(4);
    expect(worker.readiness.reasons.map((r) => r.reason)).toContain("redis-full");
    expect(await lastBeat()).toBeGreaterThan(beatWhenFull);

    // Memory frees: the worker is ready again by itself and runs the rest, each task once.
    await unfill();
    for (const id of ids) expect(await env.until(id)).toMatchObject({ status: "COMPLETED", attempt: 1 });
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(runs.size).toBe(12);
    await waitFor(() => worker.ready, { timeoutMs: 5000 });
    await waitFor(async () => (await record()).state === "running", { timeoutMs: 5000 });
    expect((await record()).reasons).toBeUndefined();
    await manager.evaluate();
    expect(alerts.at(-1)).toMatchObject({ id: "redis_memory_near_limit:*", state: "resolved" });
    await manager.stop();
  }, 60_000);
});
