// Self-fencing through real workers: one reaches Redis through the fault proxy, which can cut the
// network without closing a connection (a partition: writes held, delivered once healed); another
// reaches Redis directly. (apps/worker/test/partition.test.ts does the same with a real network
// namespace and worker processes.)
import { defineTool } from "@flotilla/agent";
import { ErrorCodes } from "@flotilla/core";
import type { FlotillaEvent } from "@flotilla/events";
import { FlotillaMetrics, METRICS } from "@flotilla/metrics";
import { type FaultProxy, onCluster, redisUrl, scripted, startFaultProxy, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";

const LEASE_MS = 1500;

interface Tick {
  worker: string;
  taskId: string;
  attempt: number;
  at: number;
}

/** A tool that works for `ticks` × 100 ms, noting each tick (and reporting it as progress) until its signal aborts. */
function ticking(worker: string, log: Tick[], aborts: unknown[], ticks = 30) {
  return defineTool({
    name: "work",
    description: "works for a while",
    inputSchema: z.object({}),
    execute: async (_args, { signal, taskId, attempt, progress }) => {
      for (let i = 0; i < ticks; i++) {
        if (signal.aborted) {
          aborts.push(signal.reason);
          throw signal.reason;
        }
        log.push({ worker, taskId, attempt, at: Date.now() });
        progress({ tick: i });
        await new Promise((r) => setTimeout(r, 100));
      }
      return "done";
    },
  });
}

const agent = scripted("worker-bee", { toolCalls: [{ name: "work", args: {} }], reply: "finished" }, { tools: ["work"] });

/** The events of `attempt` that came after the first event of a later attempt. */
function staleEvents(events: FlotillaEvent[], attempt: number): FlotillaEvent[] {
  const firstLater = events.findIndex((e) => (e as { attempt?: number }).attempt !== undefined && (e as { attempt: number }).attempt > attempt);
  if (firstLater < 0) return [];
  return events.slice(firstLater).filter((e) => (e as { attempt?: number }).attempt === attempt);
}

describe.skipIf(onCluster())("self-fencing", () => {
  const h = useFlotilla("self-fencing");
  let proxy: FaultProxy | undefined;
  const proxies: FaultProxy[] = [];
  // Healed after each test, so its workers can stop; closed only at the end, once they have.
  afterEach(() => proxy?.heal());
  afterAll(async () => {
    for (const p of proxies) await p.close();
  });
  const startProxy = async () => {
    proxy = await startFaultProxy({ host: "127.0.0.1", port: Number(new URL(redisUrl()).port || 6379) });
    proxies.push(proxy);
    return proxy;
  };

  it("stops the runs of a worker cut off from Redis before another worker starts them; each task completes once, with no stale event; healed, the worker serves again", async () => {
    const proxy = await startProxy();
    const ticks: Tick[] = [];
    const abortsA: unknown[] = [];
    const metricsA = new FlotillaMetrics();
    const queue = "partitioned";
    const a = await h.worker({
      redis: proxy.url,
      workerId: "cut-off",
      queues: [queue],
      concurrency: 3,
      leaseMs: LEASE_MS,
      metrics: metricsA,
      tools: { work: ticking("cut-off", ticks, abortsA) },
    });
    const ids = await Promise.all([1, 2, 3].map((i) => h.submit(agent, `job ${i}`, { queue })));
    await waitFor(async () => ids.every((id) => ticks.some((t) => t.taskId === id && t.worker === "cut-off")), { what: "the cut-off worker to run all three" });
    const cutAt = Date.now();
    proxy.partition();
    const b = await h.worker({ workerId: "other", queues: [queue], concurrency: 3, leaseMs: LEASE_MS, tools: { work: ticking("other", ticks, []) } });
    await waitFor(async () => !a.ready && a.readiness.reasons.some((r) => r.reason === "redis"), { what: "the cut-off worker to say it cannot reach Redis" });
    for (const id of ids) expect(await h.until(id, ["COMPLETED"], { timeoutMs: 20_000 })).toMatchObject({ status: "COMPLETED", attempt: 2, workerId: "other" });

    for (const id of ids) {
      const mine = ticks.filter((t) => t.taskId === id);
      const lastA = Math.max(...mine.filter((t) => t.worker === "cut-off").map((t) => t.at));
      const firstB = Math.min(...mine.filter((t) => t.worker === "other").map((t) => t.at));
      // The guarantee: the cut-off run stopped before the other worker's run began.
      expect(lastA).toBeLessThan(firstB);
      // And within the lease of the cut (its last renewal came before it).
      expect(lastA).toBeLessThanOrEqual(cutAt + LEASE_MS);
    }
    expect(abortsA).toHaveLength(3);
    for (const reason of abortsA) expect(reason).toMatchObject({ code: ErrorCodes.LEASE_EXPIRED });
    expect(metricsA.total(METRICS.selfFenced)).toBe(3);

    // Healed: what the cut-off worker queued meanwhile reaches Redis and is refused by the attempt fence.
    proxy.heal();
    await waitFor(async () => a.ready, { what: "the healed worker to be ready again" });
    for (const id of ids) {
      const events = await h.events(id);
      expect(staleEvents(events, 1)).toEqual([]);
      expect(events.filter((e) => e.type === "status" && (e as { status: string }).status === "completed")).toHaveLength(1);
    }
    await h.stopWorkers({ workers: [b] });
    const after = await h.submit(agent, "after the heal", { queue });
    expect(await h.until(after, ["COMPLETED"], { timeoutMs: 20_000 })).toMatchObject({ status: "COMPLETED", attempt: 1, workerId: "cut-off" });
  });

  it("never throws away a run that finished while cut off: its events and outcome land once healed, from its one attempt", async () => {
    const proxy = await startProxy();
    const metrics = new FlotillaMetrics();
    const queue = "finished-while-cut";
    let runs = 0;
    await h.worker({
      redis: proxy.url,
      workerId: "finisher",
      queues: [queue],
      leaseMs: LEASE_MS,
      metrics,
      executor: {
        execute: async ({ emit }) => {
          runs++;
          emit({ type: "text", delta: "all the work" });
          // The network goes as the run ends: its last events and its outcome wait, with its lease's renewals.
          proxy.partition();
          return "done";
        },
      },
    });
    const id = await h.submit(agent, "finish then lose Redis", { queue });
    await waitFor(async () => runs === 1, { what: "the run" });
    // Twice the lease: a run still going would have stopped itself by now (the first test); this one had finished.
    await new Promise((r) => setTimeout(r, 2 * LEASE_MS));
    proxy.heal();
    expect(await h.until(id, ["COMPLETED"], { timeoutMs: 20_000 })).toMatchObject({ status: "COMPLETED", attempt: 1, workerId: "finisher", result: "done" });
    expect(runs).toBe(1);
    expect(metrics.total(METRICS.selfFenced)).toBe(0);
    expect((await h.events(id)).some((e) => e.type === "text")).toBe(true);
  });

  it("aborts nothing when the network is cut for less than the lease", async () => {
    const proxy = await startProxy();
    const ticks: Tick[] = [];
    const aborts: unknown[] = [];
    const metrics = new FlotillaMetrics();
    const queue = "blip";
    await h.worker({ redis: proxy.url, workerId: "blip", queues: [queue], leaseMs: LEASE_MS, metrics, tools: { work: ticking("blip", ticks, aborts, 20) } });
    const id = await h.submit(agent, "short cut", { queue });
    await waitFor(async () => ticks.length > 0, { what: "the run to start" });
    proxy.partition();
    // Half the lease: renewals are held, not refused; the run's lease still has time when they land.
    await new Promise((r) => setTimeout(r, LEASE_MS / 2));
    proxy.heal();
    expect(await h.until(id, ["COMPLETED"], { timeoutMs: 20_000 })).toMatchObject({ status: "COMPLETED", attempt: 1 });
    expect(aborts).toEqual([]);
    expect(metrics.total(METRICS.selfFenced)).toBe(0);
    expect(ticks.filter((t) => t.taskId === id)).toHaveLength(20);
  });
});
