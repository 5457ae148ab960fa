import { recordingLogger } from "@flotilla/testing";
import { describe, expect, it } from "vitest";
import { Readiness, type ReadinessState } from "../src/readiness.ts";

function recorder() {
  const { log, lines } = recordingLogger();
  const changes: ReadinessState[] = [];
  return { readiness: new Readiness(log, (state) => changes.push(state)), lines, changes };
}

describe("Readiness", () => {
  it("is ready with no reason; a raised reason makes it unready, with its detail and since when, logged and told once", () => {
    const { readiness, lines, changes } = recorder();
    expect(readiness.ready).toBe(true);
    expect(readiness.state).toEqual({ ready: true, reasons: [] });
    const before = Date.now();
    readiness.raise("redis", "connection closed");
    expect(readiness.ready).toBe(false);
    const [reason] = readiness.state.reasons;
    expect(reason).toMatchObject({ reason: "redis", detail: "connection closed" });
    expect(reason!.since).toBeGreaterThanOrEqual(before);
    expect(reason!.since).toBeLessThanOrEqual(Date.now());
    // Raised again: the detail is updated, nothing logged, nobody told, the time kept.
    readiness.raise("redis", "still closed");
    expect(readiness.state.reasons).toEqual([{ reason: "redis", detail: "still closed", since: reason!.since }]);
    expect(lines).toEqual([{ level: "warn", message: "worker not ready", fields: { reason: "redis", detail: "connection closed" } }]);
    expect(changes).toEqual([{ ready: false, reasons: [{ reason: "redis", detail: "connection closed", since: reason!.since }] }]);
  });

  it("is ready again only once every reason cleared, and says which are left until then", () => {
    const { readiness, lines, changes } = recorder();
    readiness.raise("redis", "down");
    readiness.raise("claiming", "NOGROUP");
    lines.length = 0;
    changes.length = 0;
    readiness.clear("starting"); // never raised: nothing happens
    expect(lines).toEqual([]);
    expect(changes).toEqual([]);
    readiness.clear("redis");
    expect(readiness.ready).toBe(false);
    expect(lines).toEqual([{ level: "info", message: "worker still not ready", fields: { cleared: "redis", reasons: ["claiming"] } }]);
    expect(changes.map((s) => [s.ready, s.reasons.map((r) => r.reason)])).toEqual([[false, ["claiming"]]]);
    readiness.clear("claiming");
    expect(readiness.ready).toBe(true);
    expect(lines.at(-1)).toEqual({ level: "info", message: "worker ready", fields: { after: "claiming" } });
    expect(changes.at(-1)).toEqual({ ready: true, reasons: [] });
  });
});
