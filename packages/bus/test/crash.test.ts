import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { testRedisEnv, waitFor } from "@flotilla/testing";
import { afterEach, describe, expect, it } from "vitest";
import { subscribe } from "../src/index.ts";
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
    const survivor = startProcess("survivor", { HANDLE_MS: "50" });
    void survivor;
    await waitFor(async () => Object.keys(await t.counts("done")).length === 12, { timeoutMs: 30_000 });
    const started = await t.counts("started");
    const done = await t.counts("done");
    // Each event done exactly once; the victim's five were started twice (once by each), the rest once.
    expect(Object.values(done).every((c) => c === 1)).toBe(true);
    expect(Object.values(started).filter((c) => c === 2)).toHaveLength(5);
    expect(Object.values(started).filter((c) => c === 1)).toHaveLength(7);
    await waitFor(async () => (await t.bus.groups("crash"))[0]?.pending === 0, { timeoutMs: 10_000 });
    expect((await t.bus.groups("crash"))[0]!.counts).toMatchObject({ reclaimed: 5, acked: 12, dead: 0 });
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
