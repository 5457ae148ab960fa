import { describe, expect, it } from "vitest";
import { attributeKey, FlotillaMetrics, METRICS } from "../src/metrics.ts";

describe("FlotillaMetrics", () => {
  it("keeps the figures readable from code with no SDK registered", () => {
    const bare = new FlotillaMetrics();
    bare.add(METRICS.submitted, 2, { queue: "q", agent: "a" });
    bare.add(METRICS.submitted, 1, { queue: "r", agent: "a" });
    bare.record(METRICS.duration, 12, { queue: "q" });
    bare.record(METRICS.duration, 30, { queue: "q" });
    bare.observeQueues(() => [{ queue: "q", waiting: 4, inFlight: 1 }]);
    const snap = bare.snapshot();
    expect(snap.counters[METRICS.submitted]).toEqual({ "agent=a,queue=q": 2, "agent=a,queue=r": 1 });
    expect(bare.total(METRICS.submitted)).toBe(3);
    expect(bare.total(METRICS.submitted, { queue: "q" })).toBe(2);
    expect(snap.histograms[METRICS.duration]?.["queue=q"]).toMatchObject({ count: 2, sum: 42, min: 12, max: 30 });
    expect(snap.gauges[METRICS.queueDepth]).toEqual({ "queue=q": 4 });
    expect(snap.gauges[METRICS.queuePending]).toEqual({ "queue=q": 1 });
    expect(attributeKey({ b: 1, a: "x" })).toBe("a=x,b=1");
  });
});
