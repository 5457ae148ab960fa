// @single: Temporal mode is not on the cluster pass yet (TESTING.md)
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Agent, Swarm } from "@flotilla/agent";
import { FlotillaClient, type FlotillaEvent, TaskCancelledError, TaskFailedError } from "@flotilla/client";
import { createKeys, DEFAULT_BACKOFF, ErrorCodes } from "@flotilla/core";
import { GraphClient, graphWorker } from "@flotilla/graph";
import {
  onCluster,
  purgePrefix,
  redisUrl,
  startTemporalServer,
  type TemporalServer,
  testConnection,
  testPrefix,
  testRedis,
  testRedisEnv,
  waitFor,
} from "@flotilla/testing";
import { useTemporalBinary } from "@flotilla/testing/vitest";
import { Worker as FlotillaWorker } from "@flotilla/worker";
import { Client, Connection } from "@temporalio/client";
import { decompileRetryPolicy } from "@temporalio/common";
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker as ReplayWorker, Runtime } from "@temporalio/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTemporalWorker, type TemporalWorker, temporalExecutor, webpackConfigHook, workflowsPath } from "../src/index.ts";
import { activityCalls, readHistory } from "./fixtures/history-calls.ts";
import { askTool, countingFactory, crawlTool, pauseTool, refuseTool, sendTool } from "./fixtures/models.ts";
import { scenarioInput, scenarios, scenarioWorker } from "./fixtures/scenarios.ts";

const prefix = testPrefix("temporal");
const redis = testRedis();
const keys = createKeys(prefix);
const taskQueue = `flotilla-${process.pid}`;
const activity = { heartbeatTimeoutMs: 3000 };

describe("Temporal executor (real Temporal dev server)", () => {
  // Without a binary: these tests skip with a note the summary prints, or fail in CI.
  const binary = useTemporalBinary();
  let server: TemporalServer;
  let temporal: Client;
  let connection: Connection;
  let nativeConnection: NativeConnection;
  let temporalWorker: TemporalWorker | undefined;
  let running: Promise<void> | undefined;
  const flotillaWorkers: FlotillaWorker[] = [];
  const children: ChildProcess[] = [];
  const client = new FlotillaClient({ redis: testConnection(), prefix });
  let bundle: { code: string };

  const startTemporalWorker = async () => {
    temporalWorker = await createTemporalWorker({
      connection: nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      redis: testConnection(),
      prefix,
      // An array, as Worker takes them (the parity test passes a record).
      tools: [pauseTool(redis, prefix), crawlTool, refuseTool, sendTool, askTool],
      providerFactory: countingFactory(redis, prefix),
    });
    running = temporalWorker.run();
  };
  const stopTemporalWorker = async () => {
    temporalWorker?.shutdown();
    await running;
    temporalWorker = undefined;
  };
  const flotillaWorker = async (queue: string, mode: "temporal" | "redis") => {
    const w = new FlotillaWorker({
      redis: testConnection(),
      prefix,
      queues: [queue],
      blockMs: 500,
      ...(mode === "temporal"
        ? { executor: temporalExecutor({ client: temporal, taskQueue, activity }) }
        : {
            tools: { pause: pauseTool(redis, prefix), crawl: crawlTool, refuse: refuseTool, send: sendTool, ask: askTool },
            providerFactory: countingFactory(redis, prefix),
          }),
    });
    flotillaWorkers.push(w);
    await w.start();
    return w;
  };

  beforeAll(async () => {
    if (!binary) return;
    // Activity failures are part of these tests: keep the SDK's own logs to real errors.
    Runtime.install({ logger: new DefaultLogger("ERROR"), telemetryOptions: { logging: { filter: { core: "ERROR", other: "ERROR" } } } });
    server = await startTemporalServer(binary);
    connection = await Connection.connect({ address: server.address });
    temporal = new Client({ connection });
    nativeConnection = await NativeConnection.connect({ address: server.address });
    bundle = await bundleWorkflowCode({
      workflowsPath,
      webpackConfigHook: webpackConfigHook as never,
      logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
    });
    await startTemporalWorker();
    await flotillaWorker("temporal", "temporal");
    await flotillaWorker("redis", "redis");
  }, 120_000);

  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    await Promise.all(flotillaWorkers.map((w) => w.stop({ drainTimeoutMs: 1000 })));
    await client.close();
    await stopTemporalWorker();
    await nativeConnection?.close();
    await connection?.close();
    await server?.stop();
    await purgePrefix(redis, prefix);
    await redis.quit();
  }, 60_000);

  const kinds = (events: FlotillaEvent[]) =>
    events.map((e) => (e.type === "status" ? `status:${e.status}` : e.type)).filter((t, i, a) => t !== "text" || a[i - 1] !== "text");
  const collect = async (events: AsyncIterable<FlotillaEvent>) => {
    const out: FlotillaEvent[] = [];
    for await (const e of events) out.push(e);
    return out;
  };

  it("runs a task as a workflow: same events, same result and same record as in Redis mode", async () => {
    const agent = new Agent({
      name: "researcher",
      model: "counting:x",
      tools: ["pause"],
      options: { scripted: { toolCalls: [{ name: "pause", args: { key: "never-stall" } }], reply: "Found it: {input}" } },
    });
    await redis.hset(`${prefix}:test:pauses`, "never-stall", 5); // never the first call: no stall
    const results = [];
    for (const queue of ["redis", "temporal"]) {
      const handle = await client.submit(agent, `compare ${queue}`, { queue, detailed: true });
      const events = await collect(handle.stream());
      const result = (await handle.result()) as { text: string; steps: number; usage: unknown; agent: string };
      const record = await handle.status();
      results.push({ kinds: kinds(events), seqs: events.map((e) => e.seq), result: { ...result, text: result.text.replace(queue, "*") }, record });
    }
    const [redisMode, temporalMode] = results;
    expect(temporalMode!.kinds).toEqual(redisMode!.kinds);
    expect(temporalMode!.kinds).toEqual(["status:running", "tool_call", "step", "tool_result", "text", "step", "usage", "status:completed"]);
    expect(temporalMode!.seqs).toEqual(temporalMode!.seqs.map((_, i) => i + 1));
    expect(temporalMode!.result).toEqual(redisMode!.result);
    expect(temporalMode!.record).toMatchObject({ status: "COMPLETED", attempt: 1, usage: redisMode!.record.usage });
    // The workflow id is the task id, and it completed.
    const described = await temporal.workflow.getHandle((await client.listTasks({ queue: "temporal", limit: 1 })).tasks[0]!.taskId).describe();
    expect(described.status.name).toBe("COMPLETED");
  });

  it("runs a graph whose agent nodes run on a Temporal-mode worker: each node task is a workflow", async () => {
    const outline = new Agent({ name: "g-outline", model: "scripted:x", options: { scripted: { reply: "outline of {input}" } } });
    const draft = new Agent({ name: "g-draft", model: "scripted:x", options: { scripted: { reply: "draft from {input}" } } });
    const worker = new FlotillaWorker({
      redis: testConnection(),
      prefix,
      blockMs: 500,
      executor: temporalExecutor({ client: temporal, taskQueue, activity }),
      graph: graphWorker({ agents: [outline, draft] }),
    });
    flotillaWorkers.push(worker);
    await worker.start();
    const graphs = new GraphClient({ redis: testConnection(), prefix });
    try {
      const run = await graphs.startGraph(
        {
          nodes: [
            { id: "outline", type: "g-outline", inputs: { topic: "${{input.topic}}" }, next: ["draft"] },
            { id: "draft", type: "g-draft", inputs: { from: "${{outline.outputs.text}}" } },
          ],
        },
        { topic: "tides" },
      );
      const result = (await run.result({ timeoutMs: 60_000 })) as { draft: { text: string } };
      expect(result.draft.text).toContain("draft from");
      expect(result.draft.text).toContain("outline of");
      for (const node of (await run.status()).nodes) {
        const described = await temporal.workflow.getHandle(node.taskId).describe();
        expect(described.status.name, node.taskId).toBe("COMPLETED");
      }
    } finally {
      await graphs.close();
    }
  });

  it("streams a tool's progress, and fails the task at once on a tool's UnrecoverableError, as Redis mode does", async () => {
    const crawler = new Agent({
      name: "crawler",
      model: "scripted:x",
      tools: ["crawl"],
      options: { scripted: { toolCalls: [{ name: "crawl", args: { pages: 3 } }], reply: "crawled" } },
    });
    const refuser = new Agent({
      name: "refuser",
      model: "scripted:x",
      tools: ["refuse"],
      options: { scripted: { toolCalls: [{ name: "refuse", args: {} }] } },
    });
    for (const queue of ["redis", "temporal"]) {
      const handle = await client.submit(crawler, "crawl", { queue, detailed: true });
      const events = await collect(handle.stream());
      expect({ queue, kinds: kinds(events) }).toEqual({
        queue,
        kinds: ["status:running", "tool_call", "step", "progress", "progress", "progress", "tool_result", "text", "step", "usage", "status:completed"],
      });
      expect(events.filter((e) => e.type === "progress")).toMatchObject(
        [1, 2, 3].map((done) => ({ toolCallId: "call_1", name: "crawl", data: { done, total: 3 }, agent: "crawler", attempt: 1 })),
      );
      const refused = await client.submit(refuser, "x", { queue, maxRetries: 3 });
      await expect(refused.result()).rejects.toBeInstanceOf(TaskFailedError);
      expect({ queue, record: await refused.status() }).toMatchObject({
        queue,
        record: { status: "FAILED", attempt: 1, error: { code: "REFUSED", message: "refused for good" } },
      });
    }
  });

  it("waits for a signal as Redis mode does: WAITING in Flotilla while the workflow waits; approve, reject and a timeout carry it on", async () => {
    const sender = new Agent({
      name: "sender",
      model: "scripted:x",
      tools: ["send"],
      options: { scripted: { toolCalls: [{ name: "send", args: { to: "ops" } }] } },
    });
    const asker = new Agent({
      name: "asker",
      model: "scripted:x",
      tools: ["ask"],
      options: { scripted: { toolCalls: [{ name: "ask", args: { question: "ready?", timeoutMs: 400 } }] } },
    });
    const waiting = async (handle: ReturnType<FlotillaClient["handle"]>) =>
      waitFor(async () => {
        const record = await handle.status();
        return record.status === "WAITING" ? record : undefined;
      });
    for (const queue of ["redis", "temporal"]) {
      const approved = await client.submit(sender, "go", { queue });
      expect(await waiting(approved)).toMatchObject({ waiting: { name: "approval", kind: "approval", tool: "send", args: { to: "ops" } } });
      if (queue === "temporal") {
        // Flotilla holds no worker; the workflow waits in Temporal.
        expect((await temporal.workflow.getHandle(approved.taskId).describe()).status.name).toBe("RUNNING");
      }
      await approved.approve();
      expect({ queue, text: (await approved.result()).text }).toEqual({ queue, text: "send returned sent to ops. Echo: go" });

      const rejected = await client.submit(sender, "stop", { queue });
      await waiting(rejected);
      await rejected.reject("not now");
      expect({ queue, text: (await rejected.result()).text }).toEqual({ queue, text: "send returned not run: rejected: not now. Echo: stop" });

      const unanswered = await client.submit(asker, "q", { queue });
      expect({ queue, text: (await unanswered.result()).text }).toEqual({ queue, text: "ask returned nobody answered. Echo: q" });
    }
  });

  it("replays a recorded history deterministically (Worker.runReplayHistory)", async () => {
    const swarm = new Swarm({
      name: "desk",
      agents: [
        new Agent({ name: "triage", model: "scripted:x", options: { scripted: { toolCalls: [{ name: "transfer_to_agent", args: { agent: "writer" } }] } } }),
        new Agent({ name: "writer", model: "scripted:x", options: { scripted: { reply: "Drafted." } } }),
      ],
    });
    const handle = await client.submit(swarm, "a note", { queue: "temporal", detailed: true });
    const events = await collect(handle.stream());
    expect(kinds(events)).toContain("handoff");
    expect(await handle.result()).toMatchObject({ text: "Drafted.", agent: "writer" });
    const history = await temporal.workflow.getHandle(handle.taskId).fetchHistory();
    await ReplayWorker.runReplayHistory({ workflowBundle: bundle }, history, handle.taskId);
  });

  it("replays the recorded histories of every loop shape, and runs each again with the same activity calls", async () => {
    // Histories recorded by fixtures/record-histories.ts: tools in parallel, handoffs (first only,
    // unknown target, none left), a pipeline, maxSteps (default and option), output, a failure.
    for (const name of Object.keys(scenarios)) await ReplayWorker.runReplayHistory({ workflowBundle: bundle }, readHistory(name), `scenario/${name}`);
    const queue = `${taskQueue}-scenarios`;
    const worker = await scenarioWorker({ connection: nativeConnection, taskQueue: queue, workflowBundle: bundle, redis: testConnection(), prefix });
    const running = worker.run();
    try {
      for (const name of Object.keys(scenarios)) {
        const input = scenarioInput(name);
        const handle = await temporal.workflow.start("flotillaAgent", { taskQueue: queue, workflowId: input.taskId, args: [input] });
        await handle.result().catch(() => {});
        // Since the own-tools rule (patched into the workflow), a call of a tool the agent does not
        // list is answered without an activity; every other call is what the recorded run made.
        const tools = new Set(input.agent.kind === "swarm" ? input.agent.agents.flatMap((a) => a.tools) : input.agent.tools);
        const expected = activityCalls(readHistory(name)).filter(
          (c) => c.type !== "toolCall" || tools.has((c.input[0] as { call: { name: string } }).call.name),
        );
        const strip = (calls: typeof expected) => calls.map(({ id: _, ...call }) => call);
        expect({ name, calls: strip(activityCalls(await handle.fetchHistory())) }).toEqual({ name, calls: strip(expected) });
      }
    } finally {
      worker.shutdown();
      await running;
    }
  }, 60_000);

  it.skipIf(onCluster())("closes the Redis and Temporal connections it opened when it stops, run or not", async () => {
    const url = new URL(redisUrl());
    const connectionName = `${prefix.replaceAll(":", "-")}-activities`;
    const named = async () => String(await redis.client("LIST")).includes(`name=${connectionName}`);
    const options = {
      address: server.address,
      taskQueue: `${taskQueue}-closing`,
      workflowBundle: bundle,
      redis: { host: url.hostname, port: Number(url.port || 6379), connectionName },
      prefix,
    };
    const worker = await createTemporalWorker(options);
    const running = worker.run();
    // A run whose activities talk to Redis (the worker's own connection is opened lazily).
    const input = { taskId: "scenario/closing", agent: new Agent({ name: "a", model: "scripted:x" }).toJSON(), input: "hi" };
    await temporal.workflow.execute("flotillaAgent", { taskQueue: options.taskQueue, workflowId: input.taskId, args: [input] });
    expect(await named()).toBe(true);
    worker.shutdown();
    await running;
    expect(await named()).toBe(false);
    expect(worker.worker.getState()).toBe("STOPPED");
    // Never run: close() still lets go of its connection (a leak would keep the test process alive).
    const idle = await createTemporalWorker(options);
    await idle.close();
    expect(idle.worker.getState()).toBe("STOPPED");
  });

  it("resumes after the Temporal worker is killed (kill -9) between two turns: no turn runs twice", async () => {
    await stopTemporalWorker();
    const fixture = fileURLToPath(new URL("./fixtures/temporal-worker.ts", import.meta.url));
    const spawnWorker = async () => {
      const child = spawn(process.execPath, ["--conditions=@flotilla/source", fixture], {
        env: { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: taskQueue, FLOTILLA_PREFIX: prefix, ...testRedisEnv() },
        stdio: ["ignore", "pipe", "inherit"],
      });
      children.push(child);
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on("data", (d: Buffer) => d.toString().includes("ready") && resolve());
        child.once("exit", (code) => reject(new Error(`temporal worker exited (${code})`)));
      });
      return child;
    };
    const first = await spawnWorker();
    try {
      const input = `survive ${Date.now()}`;
      const agent = new Agent({
        name: "durable",
        model: "counting:x",
        tools: ["pause"],
        options: { scripted: { toolCalls: [{ name: "pause", args: { key: input } }], reply: "Done after the pause." } },
      });
      const handle = await client.submit(agent, input, { queue: "temporal", detailed: true });
      // Between the turns: the first turn is done and the tool stalls on the first worker.
      await waitFor(async () => Number(await redis.hget(`${prefix}:test:pauses`, input)) === 1, { what: "the tool to start", timeoutMs: 30_000 });
      first.removeAllListeners("exit");
      first.kill("SIGKILL");
      await new Promise((r) => first.once("exit", r));
      await spawnWorker();
      expect(await handle.result()).toMatchObject({ text: "Done after the pause.", steps: 2 });
      // One model call per turn: the first turn was not run again after the crash.
      expect(await redis.hgetall(`${prefix}:test:calls`)).toMatchObject({ [`${input}#0`]: "1", [`${input}#1`]: "1" });
      expect(Number(await redis.hget(`${prefix}:test:pauses`, input))).toBe(2);
      // Readers saw each event once, in order.
      const events = await collect(handle.stream());
      expect(kinds(events)).toEqual(["status:running", "tool_call", "step", "tool_result", "text", "step", "usage", "status:completed"]);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    } finally {
      for (const c of children) c.kill("SIGKILL");
      await startTemporalWorker();
    }
  }, 90_000);

  it("cancels mid-run: the workflow and its running activity stop, and the task ends CANCELLED", async () => {
    const agent = new Agent({
      name: "slow",
      model: "scripted:x",
      options: { scripted: { reply: "one two three four five six seven eight nine ten", tokenDelayMs: 300 } },
    });
    const handle = await client.submit(agent, "go slowly", { queue: "temporal" });
    for await (const e of handle.stream()) if (e.type === "text") break;
    await handle.cancel("enough");
    await expect(handle.result()).rejects.toBeInstanceOf(TaskCancelledError);
    await waitFor(async () => (await temporal.workflow.getHandle(handle.taskId).describe()).status.name === "CANCELLED", {
      what: "the workflow to be cancelled",
      timeoutMs: 10_000,
    });
    expect(await handle.status()).toMatchObject({ status: "CANCELLED", error: { code: "CANCELLED" } });
  });

  it("attaches a redelivered entry to the running workflow, and to the finished one, instead of starting another", async () => {
    const executor = temporalExecutor({ client: temporal, taskQueue, activity });
    const taskId = `temporal/redelivered-${Date.now()}`;
    await redis.hset(keys.task(taskId), { taskId, queue: "temporal", agent: "echo", status: "RUNNING", attempt: 1, createdAt: Date.now() });
    const ctx = (attempt: number) => ({
      taskId,
      attempt,
      queue: "temporal",
      priority: "normal" as const,
      agent: new Agent({ name: "echo", model: "scripted:x", options: { scripted: { reply: "once", tokenDelayMs: 100 } } }).toJSON(),
      input: "x",
      metadata: {},
      maxRetries: 0,
      backoff: DEFAULT_BACKOFF,
      signal: new AbortController().signal,
      emit: () => {},
      reportUsage: () => {},
    });
    const [a, b] = await Promise.all([executor.execute(ctx(1)), executor.execute(ctx(2))]);
    expect(a).toEqual(b);
    const again = await executor.execute(ctx(3));
    expect(again).toEqual(a);
    const runs = [];
    for await (const w of temporal.workflow.list({ query: `WorkflowId = '${taskId}'` })) runs.push(w.runId);
    expect(runs).toHaveLength(1);
  });

  it("maps the task's maxRetries and backoff onto the retry policy of each of its activities", async () => {
    const agent = new Agent({
      name: "paced",
      model: "scripted:x",
      tools: ["crawl"],
      options: { scripted: { toolCalls: [{ name: "crawl", args: { pages: 1 } }] } },
    });
    const policies = async (taskId: string) => {
      const history = await temporal.workflow.getHandle(taskId).fetchHistory();
      return (history.events ?? []).flatMap((e) =>
        e.activityTaskScheduledEventAttributes ? [decompileRetryPolicy(e.activityTaskScheduledEventAttributes.retryPolicy)] : [],
      );
    };
    const own = await client.submit(agent, "x", { queue: "temporal", maxRetries: 7, backoff: { delayMs: 2500, maxDelayMs: 7000 } });
    const defaults = await client.submit(agent, "x", { queue: "temporal" });
    await Promise.all([own.result(), defaults.result()]);
    // begin, two model turns, the tool, its results, finish: each with the task's policy.
    const ownPolicies = await policies(own.taskId);
    expect(ownPolicies).toHaveLength(6);
    for (const policy of ownPolicies) expect(policy).toMatchObject({ initialInterval: 2500, backoffCoefficient: 2, maximumInterval: 7000, maximumAttempts: 8 });
    // No backoff of its own: its worker's (the default, 1 s doubling to 60 s); maxRetries 0 leaves the executor's 5 attempts.
    for (const policy of await policies(defaults.taskId)) {
      expect(policy).toMatchObject({ initialInterval: 1000, backoffCoefficient: 2, maximumInterval: 60_000, maximumAttempts: 5 });
    }
  });

  it("fails a non-retryable error once, with its code", async () => {
    const handle = await client.submit(new Agent({ name: "toolless", model: "counting:x", tools: ["missing_tool"] }), "fail fast", {
      queue: "temporal",
      maxRetries: 3,
    });
    await expect(handle.result()).rejects.toBeInstanceOf(TaskFailedError);
    expect(await handle.status()).toMatchObject({ status: "FAILED", attempt: 1, error: { code: ErrorCodes.UNKNOWN_TOOL } });
    const history = await temporal.workflow.getHandle(handle.taskId).fetchHistory();
    const started = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes!.attempt);
    // begin, then the model turn that failed: each started once.
    expect(started).toEqual([1, 1]);
  });
});
