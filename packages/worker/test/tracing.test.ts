import { Agent } from "@flotilla/agent";
import type { Logger } from "@flotilla/core";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { context, propagation, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";

// The real SDK, registered as an application would (this file runs in its own test worker).
const spans = new InMemorySpanExporter();
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] }));

const executeSpan = (taskId: string, attempt: number): ReadableSpan | undefined =>
  spans
    .getFinishedSpans()
    .find((s) => s.name === "flotilla.execute" && s.attributes["flotilla.task_id"] === taskId && s.attributes["flotilla.attempt"] === attempt);

describe("a worker's spans", () => {
  const h = useFlotilla("worker-tracing");

  it("runs each attempt in a consumer span that continues the submit's trace, marks failures, and logs the trace id", async () => {
    const ended: Array<Record<string, unknown>> = [];
    const logger: Logger = { debug() {}, info: (m, f = {}) => void (m === "task ended" && ended.push(f)), warn() {}, error() {} };
    await h.worker({
      queues: ["traced"],
      logger,
      backoff: { delayMs: 5, jitter: 0 },
      executor: {
        async execute(ctx) {
          if (ctx.attempt === 1) throw new Error("first try");
          return null;
        },
      },
    });
    const client = h.client();
    const handle = await client.submit(new Agent({ name: "tracer", model: "scripted:x" }), "x", { queue: "traced", maxRetries: 1 });
    await handle.result({ timeoutMs: 10_000 });
    const submit = spans.getFinishedSpans().find((s) => s.name === "flotilla.submit" && s.attributes["flotilla.task_id"] === handle.taskId);
    expect(submit).toBeDefined();
    const [first, second] = await waitFor(async () => {
      const both = [executeSpan(handle.taskId, 1), executeSpan(handle.taskId, 2)];
      return both.every(Boolean) ? (both as ReadableSpan[]) : undefined;
    });
    for (const span of [first!, second!]) {
      expect(span.kind).toBe(SpanKind.CONSUMER);
      expect(span.spanContext().traceId).toBe(submit!.spanContext().traceId);
      expect(span.parentSpanContext?.spanId).toBe(submit!.spanContext().spanId);
      expect(span.attributes).toMatchObject({ "flotilla.task_id": handle.taskId, "flotilla.queue": "traced", "flotilla.agent": "tracer" });
    }
    expect(first!.status).toEqual({ code: SpanStatusCode.ERROR, message: "first try" });
    expect(first!.events.map((e) => [e.name, e.attributes?.["exception.type"], e.attributes?.["exception.message"]])).toEqual([
      ["exception", "AGENT_ERROR", "first try"],
    ]);
    expect(second!.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(second!.events).toEqual([]);
    // The worker logs an end once Redis has taken it, which may be after the client heard of it.
    await waitFor(() => ended.length === 2, { what: "both ends logged" });
    expect(ended.map((f) => [f.attempt, f.traceId])).toEqual([
      [1, submit!.spanContext().traceId],
      [2, submit!.spanContext().traceId],
    ]);
  });

  it("starts a trace of its own for a task submitted outside any trace, and ignores a carrier it cannot read", async () => {
    await h.worker({ queues: ["untraced"], executor: { execute: async () => null } });
    const payload = JSON.stringify({ agent: new Agent({ name: "plain", model: "scripted:x" }).toJSON(), input: "x" });
    const name = await h.record("untraced/bad-carrier", { payload, trace: "{not json" });
    await h.broker.enqueue("untraced", name);
    await h.until("untraced/bad-carrier");
    const span = await waitFor(async () => executeSpan("untraced/bad-carrier", 1));
    expect(span.parentSpanContext).toBeUndefined();
    expect(span.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
  });
});
