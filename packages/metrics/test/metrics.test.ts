import { type CollectionResult, type HistogramMetricData, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { describe, expect, it } from "vitest";
import { attributeKey, DURATION_BUCKETS, FlotillaMetrics, METRICS } from "../src/metrics.ts";

/** A reader the test collects from when it wants, like a Prometheus scrape. */
class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

describe("FlotillaMetrics", () => {
  it("keeps the figures readable from code with no SDK registered", () => {
    const bare = new FlotillaMetrics();
    bare.add(METRICS.submitted, 2, { queue: "q", agent: "a" });
    bare.add(METRICS.submitted, 1, { queue: "r", agent: "a" });
    bare.record(METRICS.duration, 0.012, { queue: "q" });
    bare.record(METRICS.duration, 0.03, { queue: "q" });
    bare.observeQueues(() => [{ queue: "q", waiting: 4, inFlight: 1 }]);
    const snap = bare.snapshot();
    expect(snap.counters[METRICS.submitted]).toEqual({ "agent=a,queue=q": 2, "agent=a,queue=r": 1 });
    expect(bare.total(METRICS.submitted)).toBe(3);
    expect(bare.total(METRICS.submitted, { queue: "q" })).toBe(2);
    expect(snap.histograms[METRICS.duration]?.["queue=q"]).toMatchObject({ count: 2, min: 0.012, max: 0.03 });
    expect(snap.histograms[METRICS.duration]?.["queue=q"]?.sum).toBeCloseTo(0.042);
    expect(snap.gauges[METRICS.queueDepth]).toEqual({ "queue=q": 4 });
    expect(snap.gauges[METRICS.queuePending]).toEqual({ "queue=q": 1 });
    expect(attributeKey({ b: 1, a: "x" })).toBe("a=x,b=1");
  });

  it("exports durations in seconds (unit `s`), in buckets that tell milliseconds apart from minutes", async () => {
    const reader = new TestReader();
    const metrics = new FlotillaMetrics({ meterProvider: new MeterProvider({ readers: [reader] }) });
    metrics.record(METRICS.duration, 0.04, { queue: "q" }); // a 40 ms run
    metrics.record(METRICS.duration, 90, { queue: "q" }); // a minute and a half
    metrics.record(METRICS.waitTime, 0.002, { queue: "q" });
    metrics.record(METRICS.publishDuration, 0.0007);
    const { resourceMetrics }: CollectionResult = await reader.collect();
    const histograms = new Map(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m as HistogramMetricData] as const));
    for (const name of [METRICS.duration, METRICS.waitTime, METRICS.publishDuration]) {
      expect({ name, unit: histograms.get(name)?.descriptor.unit }).toEqual({ name, unit: "s" });
    }
    const run = histograms.get(METRICS.duration)!.dataPoints[0]!.value;
    expect(run.buckets.boundaries).toEqual(DURATION_BUCKETS);
    const bucketOf = (value: number) => run.buckets.boundaries.findIndex((b) => value <= b);
    // Each run in a bucket of its own, neither in the first nor in the overflow bucket.
    expect(run.buckets.counts[bucketOf(0.04)]).toBe(1);
    expect(run.buckets.counts[bucketOf(90)]).toBe(1);
    expect(bucketOf(0.04)).toBeGreaterThan(0);
    expect(bucketOf(90)).toBeLessThan(run.buckets.boundaries.length);
    expect(run.sum).toBeCloseTo(90.04);
    const publish = histograms.get(METRICS.publishDuration)!.dataPoints[0]!.value;
    expect(publish.buckets.boundaries[0]).toBeLessThan(0.0007);
  });
});
