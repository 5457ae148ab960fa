// Temporal mode is indistinguishable from Redis mode: the same scenarios run through a Redis-mode
// Worker and a Temporal-mode Worker (scripted models, no network), and what a client sees of each —
// every event, the result or error, the task record — and what a tool sees of a cancel must be equal.
// @single: Temporal mode is not on the cluster pass yet (TESTING.md)
import { randomBytes } from "node:crypto";
import { Agent, defineTool, Swarm } from "@flotilla/agent";
import { type AgentLike, FlotillaClient, type FlotillaEvent, type SubmitOptions, type TaskHandle } from "@flotilla/client";
import { collect, purgePrefix, startTemporalServer, type TemporalServer, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { useTemporalBinary } from "@flotilla/testing/vitest";
import { Worker as FlotillaWorker } from "@flotilla/worker";
import { Client, Connection } from "@temporalio/client";
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime } from "@temporalio/worker";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createTemporalWorker, type TemporalWorker, temporalExecutor, webpackConfigHook, workflowsPath } from "../src/index.ts";
import { crawlTool } from "./fixtures/models.ts";

const redis = testRedis();
const taskQueue = `flotilla-parity-${process.pid}`;
const queue = "parity";

/** `wait`: notes that it runs, then waits to be aborted and notes the reason it was given (as a tool would read it). */
function waitTool(redis: Redis, prefix: string) {
  return defineTool({
    name: "wait",
    description: "Waits until aborted",
    inputSchema: z.object({}),
    async execute(_, { signal, taskId }) {
      await redis.hset(`${prefix}:test:waiting`, taskId, "1");
      const reason = await new Promise<unknown>((resolve) => {
        if (signal.aborted) resolve(signal.reason);
        else signal.addEventListener("abort", () => resolve(signal.reason), { once: true });
      });
      const { name, code, message } = (reason ?? {}) as { name?: string; code?: string; message?: string };
      await redis.hset(`${prefix}:test:aborts`, taskId, JSON.stringify({ name, code, message }));
      throw reason;
    },
  });
}

const add = defineTool({ name: "add", description: "Adds", inputSchema: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b });
const toolsOf = (prefix: string) => ({ crawl: crawlTool, add, wait: waitTool(redis, prefix) });

/** One mode: its own key prefix (so the same task id serves both), its client and Flotilla worker. */
interface Mode {
  name: "redis" | "temporal";
  prefix: string;
  client: FlotillaClient;
}

/**
 * What a client sees of a task, without what differs by nature between two runs: each event but
 * its `ts`, and a status event's `workerId` (two workers, two ids); the record but its times
 * (createdAt, startedAt, completedAt, waitMs, durationMs, cancelRequestedAt) and `workerId`.
 * Everything else is compared as it is, `seq` included: the same run must number its events the
 * same way, and the same task id serves both modes (each in its own prefix).
 */
async function observe(handle: TaskHandle) {
  const events = (await collect(handle.stream())).map(({ ts: _, ...e }: FlotillaEvent) => {
    if (e.type === "status") {
      const { workerId: _w, ...rest } = e;
      return rest;
    }
    return e;
  });
  const outcome = await handle.result().then(
    (result) => ({ result }),
    (err: Error & { code?: string }) => ({ error: { name: err.name, code: err.code, message: err.message } }),
  );
  const {
    createdAt: _c,
    startedAt: _s,
    completedAt: _d,
    waitMs: _wm,
    durationMs: _dm,
    cancelRequestedAt: _cr,
    workerId: _wi,
    ...record
  } = (await handle.status())!;
  return { events, outcome, record };
}

describe("Temporal mode and Redis mode side by side (real Redis, real Temporal dev server)", () => {
  const binary = useTemporalBinary();
  let server: TemporalServer;
  let connection: Connection;
  let nativeConnection: NativeConnection;
  let temporalWorker: TemporalWorker;
  let serving: Promise<void>;
  const workers: FlotillaWorker[] = [];
  const modes: Mode[] = [];

  beforeAll(async () => {
    if (!binary) return;
    Runtime.install({ logger: new DefaultLogger("ERROR"), telemetryOptions: { logging: { filter: { core: "ERROR", other: "ERROR" } } } });
    server = await startTemporalServer(binary);
    connection = await Connection.connect({ address: server.address });
    nativeConnection = await NativeConnection.connect({ address: server.address });
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath,
      webpackConfigHook: webpackConfigHook as never,
      logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
    });
    const redisMode: Mode = { name: "redis", prefix: testPrefix("parity-redis"), client: undefined as never };
    const temporalMode: Mode = { name: "temporal", prefix: testPrefix("parity-temporal"), client: undefined as never };
    temporalWorker = await createTemporalWorker({
      connection: nativeConnection,
      taskQueue,
      workflowBundle,
      redis: testConnection(),
      prefix: temporalMode.prefix,
      tools: toolsOf(temporalMode.prefix),
    });
    serving = temporalWorker.run();
    const temporal = new Client({ connection });
    for (const mode of [redisMode, temporalMode]) {
      mode.client = new FlotillaClient({ redis: testConnection(), prefix: mode.prefix });
      const worker = new FlotillaWorker({
        redis: testConnection(),
        prefix: mode.prefix,
        queues: [queue],
        blockMs: 500,
        ...(mode.name === "temporal"
          ? { executor: temporalExecutor({ client: temporal, taskQueue, activity: { heartbeatTimeoutMs: 3000 } }) }
          : { tools: toolsOf(mode.prefix) }),
      });
      workers.push(worker);
      await worker.start();
      modes.push(mode);
    }
  }, 120_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop({ drainTimeoutMs: 1000 })));
    for (const mode of modes) {
      await mode.client.close();
      await purgePrefix(redis, mode.prefix);
    }
    temporalWorker?.shutdown();
    await serving;
    await nativeConnection?.close();
    await connection?.close();
    await server?.stop();
    await redis.quit();
  }, 60_000);

  /**
   * Submits the same task (same id) in each mode, lets `during` act on it while it runs, and
   * returns what each mode shows of it.
   */
  async function runBoth(
    runnable: AgentLike,
    input: string,
    options: Omit<SubmitOptions, "queue" | "taskId"> = {},
    during?: (handle: TaskHandle, mode: Mode) => Promise<void>,
  ) {
    const taskId = `${queue}/${randomBytes(6).toString("hex")}`;
    const seen: Record<string, Awaited<ReturnType<typeof observe>>> = {};
    for (const mode of modes) {
      const handle = await mode.client.submit(runnable, input, { ...options, queue, taskId });
      await during?.(handle, mode);
      seen[mode.name] = await observe(handle);
    }
    return { taskId, redis: seen.redis!, temporal: seen.temporal! };
  }

  const types = (events: Array<{ type: string }>) => events.map((e) => e.type);

  it("plain: a task submitted without `detailed` streams only its status and text", async () => {
    const agent = new Agent({ name: "greeter", model: "scripted:x", options: { scripted: { reply: "Hello {input}" } } });
    const { redis: r, temporal: t } = await runBoth(agent, "there");
    expect(types(r.events)).toEqual(["status", "text", "text", "status"]);
    expect(t).toEqual(r);
  });

  it("detailed: steps and usage too", async () => {
    const agent = new Agent({ name: "greeter", model: "scripted:x", options: { scripted: { reply: "Hello {input}" } } });
    const { redis: r, temporal: t } = await runBoth(agent, "there", { detailed: true });
    expect(types(r.events)).toEqual(["status", "text", "text", "step", "usage", "status"]);
    expect(t).toEqual(r);
  });

  it("tools: calls, progress and results; a plain task keeps the progress and nothing else of them", async () => {
    const agent = new Agent({
      name: "crawler",
      model: "scripted:x",
      tools: ["crawl", "add"],
      options: {
        scripted: {
          toolCalls: [
            { name: "crawl", args: { pages: 2 } },
            { name: "add", args: { a: 2, b: 3 } },
          ],
          reply: "crawled",
        },
      },
    });
    const detailed = await runBoth(agent, "go", { detailed: true });
    expect(types(detailed.redis.events)).toEqual([
      "status",
      "tool_call",
      "tool_call",
      "step",
      "progress",
      "progress",
      "tool_result",
      "tool_result",
      "text",
      "step",
      "usage",
      "status",
    ]);
    expect(detailed.temporal).toEqual(detailed.redis);
    const plain = await runBoth(agent, "go");
    expect(types(plain.redis.events)).toEqual(["status", "progress", "progress", "text", "status"]);
    expect(plain.temporal).toEqual(plain.redis);
  });

  it("swarm: every event is stamped with the swarm's name, whichever member produced it", async () => {
    const swarm = new Swarm({
      name: "desk",
      agents: [
        new Agent({
          name: "triage",
          model: "scripted:x",
          tools: ["add"],
          options: {
            scripted: {
              toolCalls: [
                { name: "add", args: { a: 1, b: 1 } },
                { name: "transfer_to_agent", args: { agent: "writer" } },
              ],
            },
          },
        }),
        new Agent({ name: "writer", model: "scripted:x", options: { scripted: { reply: "Drafted." } } }),
      ],
    });
    const { redis: r, temporal: t } = await runBoth(swarm, "a note", { detailed: true });
    expect(types(r.events)).toContain("handoff");
    expect(new Set(r.events.map((e) => e.agent))).toEqual(new Set(["desk"]));
    expect(r.outcome).toMatchObject({ result: { text: "Drafted.", agent: "writer" } });
    expect(t).toEqual(r);
  });

  it("structured output that fails validation: usage published and recorded, then the failure", async () => {
    const agent = new Agent({
      name: "formal",
      model: "scripted:x",
      outputSchema: z.object({ answer: z.string() }),
      options: { scripted: { reply: "not json" } },
    });
    const { redis: r, temporal: t } = await runBoth(agent, "x", { detailed: true });
    expect(types(r.events).slice(-3)).toEqual(["usage", "error", "status"]);
    expect(r.record).toMatchObject({ status: "FAILED", error: { code: "OUTPUT_INVALID" }, usage: { totalTokens: expect.any(Number) } });
    expect(t).toEqual(r);
  });

  /** The abort reason each mode's tool saw (the fixture's tool records it), Redis mode first. */
  const abortReasons = (taskId: string) =>
    Promise.all(
      modes.map((mode) =>
        waitFor(async () => redis.hget(`${mode.prefix}:test:aborts`, taskId), { what: `the ${mode.name} mode tool to be aborted`, timeoutMs: 20_000 }),
      ),
    );

  it("cancel: a running tool is aborted with the cancel's reason, and the task ends CANCELLED", async () => {
    const agent = new Agent({ name: "patient", model: "scripted:x", tools: ["wait"], options: { scripted: { toolCalls: [{ name: "wait", args: {} }] } } });
    const {
      taskId,
      redis: r,
      temporal: t,
    } = await runBoth(agent, "x", { detailed: true }, async (handle, mode) => {
      await waitFor(async () => (await redis.hget(`${mode.prefix}:test:waiting`, handle.taskId)) === "1", { what: "the tool to start", timeoutMs: 20_000 });
      await handle.cancel("enough");
    });
    expect(r.record).toMatchObject({ status: "CANCELLED", error: { code: "CANCELLED", message: "enough" } });
    expect(t).toEqual(r);
    const reasons = await abortReasons(taskId);
    expect(JSON.parse(reasons[0]!)).toEqual({ name: "AbortReason", code: "CANCELLED", message: "enough" });
    expect(JSON.parse(reasons[1]!)).toEqual(JSON.parse(reasons[0]!));
  });

  it("timeout: a running tool is aborted as timed out, and the task fails TIMEOUT", async () => {
    const agent = new Agent({ name: "patient", model: "scripted:x", tools: ["wait"], options: { scripted: { toolCalls: [{ name: "wait", args: {} }] } } });
    const { taskId, redis: r, temporal: t } = await runBoth(agent, "x", { detailed: true, timeoutMs: 1500 });
    expect(r.record).toMatchObject({ status: "FAILED", error: { code: "TIMEOUT", message: "timed out after 1500 ms" } });
    expect(t).toEqual(r);
    const reasons = await abortReasons(taskId);
    expect(JSON.parse(reasons[0]!)).toEqual({ name: "AbortReason", code: "TIMEOUT", message: "timed out after 1500 ms" });
    expect(JSON.parse(reasons[1]!)).toEqual(JSON.parse(reasons[0]!));
  });
});
