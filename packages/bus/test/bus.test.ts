// @cluster: publish and consume across topics and groups, each topic its own slot
import { ErrorCodes, type JsonValue } from "@flotilla/core";
import { createTestEnv, type TestEnv, waitFor } from "@flotilla/testing";
import type { Worker } from "@flotilla/worker";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { Bus, type BusWorkerOptions, busWorker, type Handler, subscribe } from "../src/index.ts";

let env: TestEnv;
let bus: Bus;

beforeEach(() => {
  env = createTestEnv("bus");
  bus = new Bus({ redis: env.connection, prefix: env.prefix });
});
afterEach(async () => {
  await bus.close();
  await env.close();
});

/** A worker serving only these subscriptions (and webhooks unless told otherwise). */
function serve(options: BusWorkerOptions, workerId?: string): Promise<Worker> {
  return env.worker({ bus: busWorker(options), ...(workerId && { workerId }) });
}

/** A handler that counts each event it handles in a Redis hash (`<field>` → times), a side effect outside the process. */
function counting(hash: string, field: (payload: { n: number }) => string = (p) => String(p.n)): Handler {
  return async (event) => {
    await env.redis.hincrby(`${env.prefix}:${hash}`, field(event.payload as { n: number }), 1);
    return { seen: (event.payload as { n: number }).n };
  };
}

/** A payload of `levels` nested arrays around a 0. */
function nested(levels: number): JsonValue {
  let value: JsonValue = 0;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

const counts = async (hash: string) => Object.values(await env.redis.hgetall(`${env.prefix}:${hash}`)).map(Number);

describe("publish", () => {
  it("returns ordered event ids; publishMany writes many topics in one call; a bad item rejects the call before anything is written", async () => {
    const a = await bus.publish("orders.created", { n: 1 });
    const [b, c, d] = await bus.publishMany([
      { topic: "orders.created", payload: { n: 2 } },
      { topic: "orders.paid", payload: { n: 3 } },
      { topic: "orders.created", payload: { n: 4 }, options: { correlationId: "c-1", headers: { tenant: "t1" } } },
    ]);
    expect(a < b!).toBe(true);
    expect(b! < d!).toBe(true);
    expect(c).toMatch(/^\d+-\d+$/);
    const events = await bus.inspect("orders.created");
    expect(events.map((e) => ("payload" in e ? e.payload : null))).toEqual([{ n: 4 }, { n: 2 }, { n: 1 }]);
    expect(events[0]).toMatchObject({ correlationId: "c-1", headers: { tenant: "t1" } });
    expect(await bus.topics()).toEqual(["orders.created", "orders.paid"]);

    await expect(
      bus.publishMany([
        { topic: "orders.created", payload: { n: 5 } },
        { topic: "bad topic", payload: 1 },
      ]),
    ).rejects.toMatchObject({
      code: ErrorCodes.VALIDATION,
      field: "items.1.topic",
    });
    await expect(bus.publish("orders.created", { n: 6 }, { replyTo: "no spaces allowed" })).rejects.toMatchObject({ code: ErrorCodes.VALIDATION });
    await expect(bus.publish("orders.created", { big: "x".repeat(1_100_000) })).rejects.toMatchObject({ code: ErrorCodes.EVENT_TOO_LARGE });
    // Nested deeper than a consumer reads (maxJsonDepth, 128 levels): refused here, not dead-lettered as MALFORMED_EVENT later.
    await expect(bus.publish("orders.created", nested(200))).rejects.toMatchObject({ code: ErrorCodes.VALIDATION, field: "payload" });
    await expect(
      bus.publishMany([
        { topic: "orders.paid", payload: { n: 7 } },
        { topic: "orders.created", payload: { deep: nested(200) } },
      ]),
    ).rejects.toMatchObject({ code: ErrorCodes.VALIDATION, field: "items.1.payload" });
    expect(await env.redis.xlen(env.keys.topic("orders.created"))).toBe(3);
    expect(await env.redis.xlen(env.keys.topic("orders.paid"))).toBe(1);
    // At the limit is fine.
    await expect(bus.publish("orders.deep", nested(128))).resolves.toMatch(/^\d+-\d+$/);
  });

  it("an idempotency key publishes once within its window and returns the first id", async () => {
    const first = await bus.publish("t", { n: 1 }, { idempotencyKey: "k1" });
    const again = await bus.publish("t", { n: 2 }, { idempotencyKey: "k1" });
    const other = await bus.publish("t", { n: 3 }, { idempotencyKey: "k2" });
    expect(again).toBe(first);
    expect(other).not.toBe(first);
    expect(await env.redis.xlen(env.keys.topic("t"))).toBe(2);
    expect((await bus.stats("t"))[0]!.published).toBe(2);
  });
});

describe("subscriptions", () => {
  it("two subscriptions on a topic each get all 1,000 events; three consumers of one subscription split them with none handled twice", async () => {
    const splitters = ["s-1", "s-2", "s-3"];
    const countSplit = counting("split");
    // Also counts who handled each event (ctx.consumer: the worker id).
    const split: Handler = async (event, ctx) => {
      await env.redis.hincrby(`${env.prefix}:split-by`, ctx.consumer, 1);
      return countSplit(event, ctx);
    };
    for (const id of splitters) {
      await serve({ subscriptions: [subscribe("load", split, { name: "split", concurrency: 20 })], webhooks: false }, id);
    }
    await serve({ subscriptions: [subscribe("load", counting("audit"), { name: "audit", concurrency: 50 })], webhooks: false });
    const n = 1000;
    for (let i = 0; i < n; i += 100) await bus.publishMany(Array.from({ length: 100 }, (_, k) => ({ topic: "load", payload: { n: i + k } })));
    await waitFor(async () => (await counts("split")).length === n && (await counts("audit")).length === n, { timeoutMs: 30_000 });
    // Every event once per subscription: no event handled twice, none missed.
    expect((await counts("split")).every((c) => c === 1)).toBe(true);
    expect((await counts("audit")).every((c) => c === 1)).toBe(true);
    await waitFor(async () => (await bus.groups("load")).every((g) => g.pending === 0 && g.counts.acked === n), { timeoutMs: 10_000 });
    const groups = await bus.groups("load");
    expect(groups.map((g) => g.name).sort()).toEqual(["audit", "split"]);
    expect(groups.find((g) => g.name === "split")).toMatchObject({ consumers: 3, lag: 0, counts: { delivered: n, acked: n, dead: 0 } });
    // The three consumers shared the work: each handled some.
    const by = await env.redis.hgetall(`${env.prefix}:split-by`);
    expect(Object.keys(by).sort()).toEqual(splitters);
    expect(Object.values(by).every((c) => Number(c) >= 1)).toBe(true);
    expect(Object.values(by).reduce((sum, c) => sum + Number(c), 0)).toBe(n);
    const perConsumer = (await env.redis.xinfo("CONSUMERS", env.keys.topic("load"), "split")) as unknown[][];
    expect(perConsumer).toHaveLength(3);
    // The heartbeats list what each worker serves.
    const fleet = await env.client().getFleetStatus();
    expect(fleet.workers.find((w) => w.workerId === "s-1")?.subscriptions).toEqual(["load/split"]);
  });

  it('from: "start" gets what was published before the subscription existed; from: "new" (the default) does not', async () => {
    await bus.publishMany([0, 1, 2].map((n) => ({ topic: "history", payload: { n } })));
    await serve({
      subscriptions: [
        subscribe("history", counting("start"), { name: "from-start", from: "start" }),
        subscribe("history", counting("new"), { name: "from-new" }),
      ],
      webhooks: false,
    });
    await bus.publish("history", { n: 3 });
    await waitFor(async () => (await counts("start")).length === 4 && (await counts("new")).length === 1, { timeoutMs: 10_000 });
    expect(Object.keys(await env.redis.hgetall(`${env.prefix}:new`))).toEqual(["3"]);
  });
});

afterAll(() => {});
