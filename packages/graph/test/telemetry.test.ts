import { FlotillaMetrics, METRICS } from "@flotilla/metrics";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { afterAll, describe, expect, it } from "vitest";
import { defineNode, GraphClient, graphWorker } from "../src/index.ts";

// The real SDK, registered as an application would (this file runs in its own test worker).
const spans = new InMemorySpanExporter();
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] }));

const env = useFlotilla("graph-telemetry");
const client = new GraphClient({ redis: env.connection, prefix: env.prefix });
afterAll(() => client.close());

describe("a graph run's telemetry", () => {
  it("is one trace (every node's attempt continues the start's span), with run and node durations as metrics", async () => {
    const metrics = new FlotillaMetrics();
    await env.worker({
      metrics,
      graph: graphWorker({
        nodes: [
          defineNode({ type: "t-split", execute: () => [1, 2, 3] }),
          defineNode({ type: "t-sum", execute: (xs: number[]) => xs.reduce((a, b) => a + b, 0) }),
        ],
      }),
    });
    const run = await client.startGraph(
      {
        name: "traced",
        nodes: [
          { id: "split", type: "t-split", fanOut: true, next: ["sum"] },
          { id: "sum", type: "t-sum", unites: { id: "split" }, inputs: "${{split.outputs}}" },
        ],
      },
      null,
    );
    expect(await run.result({ timeoutMs: 10_000 })).toEqual({ sum: 6 });
    const start = spans.getFinishedSpans().find((s) => s.name === "flotilla.graph.start" && s.attributes["flotilla.run_id"] === run.runId);
    expect(start).toBeDefined();
    const taskIds = (await run.status()).nodes.map((n) => n.taskId);
    const executes = await waitFor(() => {
      const found = spans.getFinishedSpans().filter((s) => s.name === "flotilla.execute" && taskIds.includes(String(s.attributes["flotilla.task_id"])));
      return found.length === taskIds.length ? found : undefined;
    });
    for (const span of executes) {
      expect(span.spanContext().traceId).toBe(start!.spanContext().traceId);
      expect(span.parentSpanContext?.spanId).toBe(start!.spanContext().spanId);
    }
    const histograms = await waitFor(() => {
      const h = metrics.snapshot().histograms;
      return h[METRICS.graphRunDuration] ? h : undefined;
    });
    const runs = Object.entries(histograms[METRICS.graphRunDuration]!);
    expect(runs).toHaveLength(1);
    expect(runs[0]![0]).toContain("graph=traced");
    expect(runs[0]![0]).toContain("status=SUCCEEDED");
    expect(runs[0]![1].count).toBe(1);
    const nodes = histograms[METRICS.graphNodeDuration]!;
    const count = (type: string) =>
      Object.entries(nodes)
        .filter(([k]) => k.includes(`type=${type}`))
        .reduce((n, [, s]) => n + s.count, 0);
    expect([count("t-split"), count("t-sum")]).toEqual([1, 1]);
  });
});
