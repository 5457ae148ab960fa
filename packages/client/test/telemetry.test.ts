// @single: spans and metrics of the SDKs; the paths they wrap run on the cluster elsewhere
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Agent } from "@flotilla/agent";
import { FlotillaMetrics, METRICS } from "@flotilla/metrics";
import { purgePrefix, testConnection, testPrefix, testRedis, testRedisEnv, waitFor } from "@flotilla/testing";
import { Worker } from "@flotilla/worker";
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { type CollectionResult, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { afterAll, describe, expect, it } from "vitest";
import { FlotillaClient, TaskCancelledError, TaskFailedError } from "../src/index.ts";

/** A reader the test collects from when it wants, like a Prometheus scrape. */
class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

// The real SDKs, registered as an application would.
const reader = new TestReader();
const meterProvider = new MeterProvider({ readers: [reader] });
const spans = new InMemorySpanExporter();
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] }));

const prefix = testPrefix("telemetry");
const redis = testRedis();
const metrics = new FlotillaMetrics({ meterProvider });
const client = new FlotillaClient({ redis: testConnection(), prefix, metrics });
const workers: Worker[] = [];
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop({ drainTimeoutMs: 1000 })));
  await client.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

/** OTel's view: every data point of a metric, as { attributes, value }. */
async function points(name: string): Promise<Array<{ attributes: Record<string, unknown>; value: unknown }>> {
  const { resourceMetrics }: CollectionResult = await reader.collect();
  return resourceMetrics.scopeMetrics.flatMap((s) =>
    s.metrics.filter((m) => m.descriptor.name === name).flatMap((m) => m.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value }))),
  );
}
const sum = (ps: Array<{ value: unknown }>) => ps.reduce((n, p) => n + (typeof p.value === "number" ? p.value : 0), 0);

describe("metrics (the real OpenTelemetry SDK, and snapshot())", () => {
  it("counts, times and gauges a run of tasks that complete, fail, retry and get cancelled", async () => {
    const worker = new Worker({ redis: testConnection(), prefix, queues: ["m"], metrics, gaugeIntervalMs: 50, blockMs: 200, concurrency: 4 });
    workers.push(worker);
    await worker.start();
    const echo = new Agent({ name: "echo", model: "scripted:x" });
    const broken = new Agent({ name: "broken", model: "scripted:x", options: { scripted: { failWith: "no" } } });
    const slow = new Agent({ name: "slow", model: "scripted:x", options: { scripted: { reply: "a b c d e f g h", tokenDelayMs: 200 } } });
    const ok = await client.submitMany([0, 1, 2].map((i) => ({ agent: echo, input: `hi ${i}`, options: { queue: "m" } })));
    const failing = await client.submit(broken, "x", { queue: "m", maxRetries: 1, backoff: { delayMs: 10, maxDelayMs: 10, jitter: 0 } });
    const cancelled = await client.submit(slow, "x", { queue: "m" });
    for (const h of ok) await h.result();
    await expect(failing.result()).rejects.toBeInstanceOf(TaskFailedError);
    for await (const e of cancelled.stream()) if (e.type === "text") break;
    await cancelled.cancel();
    await expect(cancelled.result()).rejects.toBeInstanceOf(TaskCancelledError);
    await waitFor(async () => metrics.total(METRICS.cancelled) === 1, { what: "the cancel to be counted" });

    const expected = {
      [METRICS.submitted]: 5,
      [METRICS.completed]: 3,
      [METRICS.failed]: 1,
      [METRICS.retried]: 1,
      [METRICS.cancelled]: 1,
      [METRICS.deadLettered]: 1,
    };
    for (const [name, value] of Object.entries(expected)) {
      expect({ name, value: metrics.total(name) }).toEqual({ name, value });
      expect({ name, value: sum(await points(name)) }).toEqual({ name, value });
    }
    expect(metrics.total(METRICS.submitted, { queue: "m", agent: "echo" })).toBe(3);
    expect(metrics.total(METRICS.completed, { agent: "echo" })).toBe(3);
    expect(metrics.total(METRICS.eventsEmitted, { type: "text" })).toBeGreaterThanOrEqual(3 * 2);

    const snap = metrics.snapshot();
    // Six attempts ran (3 completed, 2 of the failing task, 1 cancelled); five tasks waited once each.
    const runs = Object.values(snap.histograms[METRICS.duration] ?? {}).reduce((n, h) => n + h.count, 0);
    expect(runs).toBe(6);
    expect(Object.values(snap.histograms[METRICS.waitTime] ?? {}).reduce((n, h) => n + h.count, 0)).toBe(5);
    expect(snap.histograms[METRICS.publishDuration]?.[""]?.count).toBeGreaterThan(0);
    const otelDuration = await points(METRICS.duration);
    expect(otelDuration.reduce((n, p) => n + (p.value as { count: number }).count, 0)).toBe(6);

    // Gauges: nothing waits or runs now; this worker is live.
    await waitFor(async () => metrics.snapshot().gauges[METRICS.queuePending]?.["queue=m"] === 0, { what: "the gauges to be read" });
    expect(metrics.snapshot().gauges[METRICS.queueDepth]).toEqual({ "queue=m": 0 });
    expect(metrics.snapshot().gauges[METRICS.workersLive]?.[""]).toBeGreaterThanOrEqual(1);
    expect(await points(METRICS.queueDepth)).toEqual([{ attributes: { queue: "m" }, value: 0 }]);
    expect((await points(METRICS.workersLive))[0]?.value).toBeGreaterThanOrEqual(1);
  });
});

describe("tracing across processes", () => {
  it("connects the client's submit span to the worker's execute span and its model and tool spans", async () => {
    const fixture = fileURLToPath(new URL("./fixtures/traced-worker.ts", import.meta.url));
    const child = spawn(process.execPath, ["--conditions=@flotilla/source", fixture], {
      env: { ...process.env, ...testRedisEnv(), FLOTILLA_PREFIX: prefix },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const lines: string[] = [];
    let buffer = "";
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (d: Buffer) => {
        buffer += d.toString();
        const parts = buffer.split("\n");
        buffer = parts.pop() ?? "";
        for (const line of parts) {
          if (line === "ready") resolve();
          else lines.push(line);
        }
      });
      child.once("exit", (code) => reject(new Error(`traced worker exited (${code})`)));
    });
    try {
      await ready;
      const agent = new Agent({
        name: "tracer",
        model: "scripted:x",
        tools: ["lookup"],
        options: { scripted: { toolCalls: [{ name: "lookup", args: { word: "fleet" } }] } },
      });
      const handle = await client.submit(agent, "trace me", { queue: "traced" });
      await handle.result();
      const submit = spans.getFinishedSpans().find((s) => s.name === "flotilla.submit" && s.attributes["flotilla.task_id"] === handle.taskId);
      expect(submit).toBeDefined();
      const traceId = submit!.spanContext().traceId;
      type Remote = { name: string; traceId: string; spanId: string; parentSpanId?: string; attributes: Record<string, unknown>; status: number };
      const remote = await waitFor(
        async () => {
          const found = lines
            .filter((l) => l.startsWith("SPAN "))
            .map((l) => JSON.parse(l.slice(5)) as Remote)
            .filter((s) => s.traceId === traceId);
          return found.length >= 4 ? found : undefined;
        },
        { what: "the worker's spans" },
      );
      const execute = remote.find((s) => s.name === "flotilla.execute")!;
      expect(execute).toMatchObject({
        parentSpanId: submit!.spanContext().spanId,
        attributes: { "flotilla.task_id": handle.taskId, "flotilla.queue": "traced", "flotilla.agent": "tracer", "flotilla.attempt": 1 },
      });
      const turns = remote.filter((s) => s.name === "flotilla.model_turn");
      const tools = remote.filter((s) => s.name === "flotilla.tool");
      expect(turns).toHaveLength(2);
      expect(tools).toMatchObject([{ parentSpanId: execute.spanId, attributes: { "flotilla.tool": "lookup" } }]);
      for (const t of turns) expect(t.parentSpanId).toBe(execute.spanId);
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  });
});
