// Temporal mode's self-fencing, against a real Temporal dev server: a Temporal worker whose
// connection to the server is cut (through the fault proxy: bytes held both ways, nothing closed)
// stops its running tool before Temporal may retry the activity on another worker.
import { fileURLToPath } from "node:url";
import { Agent, defineTool } from "@flotilla/agent";
import { ErrorCodes, sleep } from "@flotilla/core";
import {
  type FaultProxy,
  freePort,
  purgePrefix,
  startFaultProxy,
  startTemporalServer,
  type TemporalServer,
  testConnection,
  testPrefix,
  testRedis,
  waitFor,
} from "@flotilla/testing";
import { useTemporalBinary } from "@flotilla/testing/vitest";
import { Context } from "@temporalio/activity";
import { Client, Connection } from "@temporalio/client";
import { bundleWorkflowCode, DefaultLogger, type LogEntry, NativeConnection, Runtime, Worker } from "@temporalio/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { SELF_FENCED_METRIC } from "../src/fence-activity.ts";
import { type AgentWorkflowInput, createActivities, webpackConfigHook } from "../src/index.ts";

const prefix = testPrefix("temporal-fence");
const redis = testRedis();
const taskQueue = `flotilla-fence-${process.pid}`;
const HEARTBEAT_TIMEOUT = 3000;
/** The default margin: a tenth of the heartbeat timeout. */
const MARGIN = HEARTBEAT_TIMEOUT / 10;

interface Tick {
  worker: string;
  /** Temporal's attempt of the activity. */
  attempt: number;
  at: number;
}

interface Running {
  worker: Worker;
  running: Promise<void>;
}

describe("Temporal mode: an activity cut off from the server stops itself (real Temporal dev server)", () => {
  const binary = useTemporalBinary();
  let server: TemporalServer;
  let proxy: FaultProxy;
  let temporal: Client;
  let connection: Connection;
  let metricsPort: number;
  const natives: NativeConnection[] = [];
  const workers: Running[] = [];
  const logs: LogEntry[] = [];
  let bundle: { code: string };
  const ticks: Tick[] = [];
  const stops: Array<{ worker: string; at: number; code: string | undefined }> = [];

  /** `work`: ticks every 50 ms for `ms`, then returns; stops at its signal, noting why. */
  const workTool = (worker: string) =>
    defineTool({
      name: "work",
      description: "Works for a while",
      inputSchema: z.object({ ms: z.number() }),
      async execute({ ms }, { signal }) {
        const end = performance.now() + ms;
        try {
          while (performance.now() < end) {
            ticks.push({ worker, attempt: Context.current().info.attempt, at: performance.now() });
            await sleep(50, signal);
          }
        } catch (err) {
          stops.push({ worker, at: performance.now(), code: (signal.reason as { code?: string } | undefined)?.code });
          throw err;
        }
        return `worked on ${worker}`;
      },
    });

  /**
   * A Temporal worker that runs only the activities, one at a time: while it runs one it has no
   * poll out, so Temporal cannot hand a task to it while it is cut off (that case has a test of its own).
   */
  const activityWorker = async (name: string, address: string): Promise<Running> => {
    const connection = await NativeConnection.connect({ address });
    natives.push(connection);
    const activities = createActivities({ redis: testConnection(), prefix, tools: [workTool(name)] });
    const worker = await Worker.create({ connection, taskQueue, activities: activities.activities, maxConcurrentActivityTaskExecutions: 1 });
    const running = worker.run().finally(() => activities.close());
    workers.push({ worker, running });
    return { worker, running };
  };
  const stopWorker = async ({ worker, running }: Running) => {
    worker.shutdown();
    await running;
  };

  const input = (taskId: string, ms: number): AgentWorkflowInput => ({
    taskId,
    agent: new Agent({
      name: "worker",
      model: "scripted:x",
      tools: ["work"],
      options: { scripted: { toolCalls: [{ name: "work", args: { ms } }], reply: "done" } },
    }).toJSON(),
    input: "go",
    activity: { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT },
  });

  beforeAll(async () => {
    if (!binary) return;
    metricsPort = await freePort();
    Runtime.install({
      logger: new DefaultLogger("WARN", (entry) => logs.push(entry)),
      telemetryOptions: {
        logging: { filter: { core: "ERROR", other: "ERROR" } },
        metrics: { prometheus: { bindAddress: `127.0.0.1:${metricsPort}` } },
      },
    });
    server = await startTemporalServer(binary);
    const [host, port] = server.address.split(":");
    proxy = await startFaultProxy({ host: host!, port: Number(port) });
    connection = await Connection.connect({ address: server.address });
    temporal = new Client({ connection });
    bundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL("./fixtures/fence-workflows.ts", import.meta.url)),
      webpackConfigHook: webpackConfigHook as never,
      logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
    });
    // The workflow's own tasks, on a connection never cut.
    const direct = await NativeConnection.connect({ address: server.address });
    natives.push(direct);
    const workflows = await Worker.create({ connection: direct, taskQueue, workflowBundle: bundle });
    workers.push({ worker: workflows, running: workflows.run() });
  }, 120_000);

  afterAll(async () => {
    proxy?.heal();
    for (const { worker } of workers) if (worker.getState() === "RUNNING") worker.shutdown();
    await Promise.all(workers.map((w) => w.running.catch(() => {})));
    for (const n of natives) await n.close().catch(() => {});
    await connection?.close();
    await proxy?.close();
    await server?.stop();
    await purgePrefix(redis, prefix);
    await redis.quit();
  }, 60_000);

  it("stops the tool within the heartbeat timeout - the margin of the cut, before the retry starts elsewhere; serves again after the heal", async () => {
    await activityWorker("cut", `127.0.0.1:${proxy.port}`);
    const handle = await temporal.workflow.start("flotillaAgent", { taskQueue, workflowId: "fence/1", args: [input("fence/1", 8000)] });
    await waitFor(() => ticks.some((t) => t.worker === "cut"), { timeoutMs: 30_000 });
    await sleep(500);
    const cut = performance.now();
    proxy.partition();
    // The other side of the partition: a worker that reaches the server.
    const other = await activityWorker("other", server.address);
    await waitFor(() => stops.some((s) => s.worker === "cut"), { timeoutMs: HEARTBEAT_TIMEOUT * 2 });
    const stop = stops.find((s) => s.worker === "cut")!;
    expect(stop.code).toBe(ErrorCodes.LEASE_EXPIRED);
    // The last heartbeat answered before the cut was sent before it: the fence is due at most
    // timeout - margin after the cut (plus a check's tick and a loaded machine's delay).
    expect(stop.at - cut).toBeLessThan(HEARTBEAT_TIMEOUT - MARGIN + 500);
    const lastCut = Math.max(...ticks.filter((t) => t.worker === "cut").map((t) => t.at));
    expect(lastCut).toBeLessThanOrEqual(stop.at);

    // Temporal retries the activity on the other worker once the heartbeat timeout has passed.
    expect(await handle.result()).toMatchObject({ text: "done" });
    const firstOther = Math.min(...ticks.filter((t) => t.worker === "other").map((t) => t.at));
    expect(firstOther).toBeGreaterThan(stop.at);
    expect(logs.some((l) => l.message.includes("heartbeat not acknowledged in time") && l.meta?.taskId === "fence/1")).toBe(true);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`${SELF_FENCED_METRIC}\\S*\\s+1\\b`));

    // Healed, the cut-off worker serves again: with the other one gone, it runs the next task.
    proxy.heal();
    await stopWorker(other);
    const before = ticks.length;
    const next = await temporal.workflow.start("flotillaAgent", { taskQueue, workflowId: "fence/2", args: [input("fence/2", 200)] });
    expect(await next.result()).toMatchObject({ text: "done" });
    expect(ticks.slice(before).every((t) => t.worker === "cut")).toBe(true);
    expect(ticks.length).toBeGreaterThan(before);
  }, 90_000);

  it("a heartbeat timeout's worth of silence shorter than it (the server paused, not gone) stops nothing", async () => {
    const before = stops.length;
    const handle = await temporal.workflow.start("flotillaAgent", { taskQueue, workflowId: "fence/3", args: [input("fence/3", 3000)] });
    const seen = ticks.length;
    await waitFor(() => ticks.length > seen, { timeoutMs: 30_000 });
    proxy.partition();
    await sleep(HEARTBEAT_TIMEOUT / 3);
    proxy.heal();
    expect(await handle.result()).toMatchObject({ text: "done" });
    expect(stops.slice(before)).toEqual([]);
  }, 60_000);

  it("a task handed to the cut-off worker's poll and delivered after the heal, long timed out, never runs", async () => {
    // The cut worker is idle, its poll out: the server hands it the next task (the tool call's),
    // which the partition holds.
    const before = ticks.length;
    proxy.partition();
    const handle = await temporal.workflow.start("workOnce", { taskQueue, workflowId: "fence/4", args: ["fence/4", 200, HEARTBEAT_TIMEOUT] });
    // Attempt 1 times out on the server (no heartbeat); attempt 2 waits for a poll.
    await sleep(HEARTBEAT_TIMEOUT + 1000);
    proxy.heal();
    expect(await handle.result()).toMatchObject({ result: "worked on cut" });
    const ran = ticks.slice(before);
    expect(ran.length).toBeGreaterThan(0);
    expect(ran.filter((t) => t.attempt === 1)).toEqual([]);
  }, 60_000);
});
