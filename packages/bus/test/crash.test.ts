// @cluster: a consumer process killed mid-handling: its entries reclaimed on the topic's slot
import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { FlotillaMetrics, METRICS } from "@flotilla/metrics";
import { testRedisEnv, waitFor } from "@flotilla/testing";
import { afterEach, describe, expect, it } from "vitest";
import { busWorker, subscribe } from "../src/index.ts";
import { CRASH_GROUP, CRASH_TOPIC, crashSubscription } from "./fixtures/crash-subscription.ts";
import { useBus } from "./helpers.ts";

const fixture = fileURLToPath(new URL("./fixtures/bus-worker-process.ts", import.meta.url));
const t = useBus("bus-crash");
const children = new Set<ChildProcess>();
afterEach(() => {
  for (const c of children) c.kill("SIGKILL");
  children.clear();
});

function startProcess(workerId: string, env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", fixture], {
    env: { ...process.env, ...testRedisEnv(), FLOTILLA_PREFIX: t.env.prefix, FLOTILLA_WORKER_ID: workerId, ...env },
    stdio: "ignore",
  });
  children.add(child);
  return child;
}

describe("consumers that die and consumers that are slow", () => {
  it("a consumer killed (kill -9) mid-handling: its deliveries are taken over after its lease and handled once more; nothing is lost", async () => {
    const victim = startProcess("victim", { HANDLE_MS: "60000" });
    await waitFor(async () => (await t.env.redis.zscore(t.env.keys.workers(), "victim")) !== null, { timeoutMs: 20_000 });
    await t.bus.publishMany(Array.from({ length: 12 }, (_, n) => ({ topic: "crash", payload: { n } })));
    // The victim holds 5 (its concurrency) and never finishes them.
    await waitFor(async () => Object.keys(await t.counts("started")).length === 5, { timeoutMs: 10_000 });
    victim.kill("SIGKILL");
    // The survivor runs here, with metrics of its own to read: the same subscription as the victim's.
    const metrics = new FlotillaMetrics();
    await t.env.worker({
      workerId: "survivor",
      metrics,
      bus: busWorker({ webhooks: false, subscriptions: [crashSubscription(t.env.redis, t.env.prefix, { handleMs: 50, leaseMs: 1000 })] }),
    });
    await waitFor(async () => Object.keys(await t.counts("done")).length === 12, { timeoutMs: 30_000 });
    const started = await t.counts("started");
    const done = await t.counts("done");
    // Each event done exactly once; the victim's five were started twice (once by each), the rest once.
    expect(Object.values(done).every((c) => c === 1)).toBe(true);
    expect(Object.values(started).filter((c) => c === 2)).toHaveLength(5);
    expect(Object.values(started).filter((c) => c === 1)).toHaveLength(7);
    await waitFor(async () => (await t.bus.groups("crash"))[0]?.pending === 0, { timeoutMs: 10_000 });
    expect((await t.bus.groups("crash"))[0]!.counts).toMatchObject({ reclaimed: 5, acked: 12, dead: 0 });
    // The OpenTelemetry counters agree: five taken over from the victim, twelve delivered to the survivor (the victim's five again and seven new).
    const attrs = { topic: CRASH_TOPIC, group: CRASH_GROUP };
    expect(metrics.total(METRICS.busReclaimed, attrs)).toBe(5);
    expect(metrics.total(METRICS.busDelivered, attrs)).toBe(12);
  }, 60_000);

  it("a dead consumer's 300 deliveries, behind a live holder's 120 and more than a reclaim scan reads: the cursor pages through the whole list; each is handled once", async () => {
    const stream = t.env.keys.topic("backlog");
    await t.env.redis.xgroup("CREATE", stream, "g", "0", "MKSTREAM");
    await t.bus.publishMany(Array.from({ length: 420 }, (_, n) => ({ topic: "backlog", payload: { n } })));
    // The first 120 are delivered to a consumer whose lease is an hour (alive: they never lapse in this
    // test), the next 300 to one that died holding them (its lease 200 ms, long since lapsed).
    await t.env.redis.xreadgroup("GROUP", "g", "alive", "COUNT", 120, "STREAMS", stream, ">");
    await t.env.redis.xreadgroup("GROUP", "g", "dead", "COUNT", 300, "STREAMS", stream, ">");
    await t.env.redis.hset(t.env.keys.topicLeases("backlog", "g"), "alive", 3_600_000, "dead", 200);
    const metrics = new FlotillaMetrics();
    // Concurrency 10: a reclaim call takes at most 10 and scans at most 100 pending entries, fewer than
    // the live holder's 120 at the head of the list; only a cursor that goes on reaches the dead one's.
    // (A lease of 500 ms: reclaims every 250 ms; the heir's own deliveries, renewed, never lapse.)
    await t.env.worker({
      workerId: "heir",
      metrics,
      bus: busWorker({ webhooks: false, subscriptions: [subscribe("backlog", t.counting("handled"), { name: "g", concurrency: 10, reclaimAfterMs: 500 })] }),
    });
    await waitFor(async () => Object.keys(await t.counts("handled")).length >= 300, { timeoutMs: 45_000 });
    await waitFor(async () => (await t.bus.groups("backlog"))[0]?.counts.acked === 300, { timeoutMs: 10_000 });
    const handled = await t.counts("handled");
    // The dead consumer's 300 (n 120…419), each exactly once; none of the live holder's.
    expect(
      Object.keys(handled)
        .map(Number)
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 300 }, (_, i) => 120 + i));
    expect(Object.values(handled).every((c) => c === 1)).toBe(true);
    expect(await t.env.redis.xpending(stream, "g")).toEqual([120, expect.any(String), expect.any(String), [["alive", "120"]]]);
    expect((await t.bus.groups("backlog"))[0]!.counts).toMatchObject({ reclaimed: 300, acked: 300 });
    expect(metrics.total(METRICS.busReclaimed, { topic: "backlog", group: "g" })).toBe(300);
  }, 60_000);

  it("a slow but live consumer (a handler running 3x its lease) keeps its deliveries: another consumer never takes them", async () => {
    const leaseMs = 600;
    const starts: string[] = [];
    const slow = subscribe(
      "slow",
      async (event, ctx) => {
        starts.push(`${ctx.consumer}:${(event.payload as { n: number }).n}`);
        await sleep(leaseMs * 3);
        return null;
      },
      { name: "g", reclaimAfterMs: leaseMs, concurrency: 2 },
    );
    await t.serve({ subscriptions: [slow] }, "first");
    await t.bus.publishMany([1, 2].map((n) => ({ topic: "slow", payload: { n } })));
    await waitFor(() => starts.length === 2, { timeoutMs: 10_000 });
    // A second consumer of the group, reclaiming every half lease, while the first one works.
    await t.serve({ subscriptions: [slow] }, "second");
    await waitFor(async () => (await t.bus.groups("slow"))[0]?.counts.acked === 2, { timeoutMs: 20_000 });
    expect(starts.sort()).toEqual(["first:1", "first:2"]);
    expect((await t.bus.groups("slow"))[0]!.counts.reclaimed).toBe(0);
  }, 30_000);

  it("a stopping consumer keeps renewing through its drain: an event it finishes while draining is not taken over", async () => {
    const starts: string[] = [];
    const sub = subscribe(
      "draining",
      async (_event, ctx) => {
        starts.push(ctx.consumer);
        await sleep(2000);
        return null;
      },
      { name: "d", reclaimAfterMs: 600 },
    );
    const first = await t.serve({ subscriptions: [sub] }, "first");
    await t.bus.publish("draining", { n: 1 });
    await waitFor(() => starts.length === 1, { timeoutMs: 10_000 });
    await t.serve({ subscriptions: [sub] }, "second");
    await t.env.stopWorkers({ workers: [first], drainTimeoutMs: 5000 });
    await waitFor(async () => (await t.bus.groups("draining"))[0]?.counts.acked === 1, { timeoutMs: 10_000 });
    expect(starts).toEqual(["first"]);
  }, 30_000);
});
