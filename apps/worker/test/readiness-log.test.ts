import { recordingLogger, waitFor } from "@flotilla/testing";
import type { ReadinessState } from "@flotilla/worker";
import { describe, expect, it } from "vitest";
import { watchReadiness } from "../src/readiness-log.ts";

const notReady = (reason: ReadinessState["reasons"][number]["reason"], detail: string): ReadinessState => ({
  ready: false,
  reasons: [{ reason, detail, since: Date.now() }],
});

describe("watchReadiness: one log line per change", () => {
  it("says why the worker is not ready: Redis full, with its figures; then ready again", async () => {
    const { log, lines } = recordingLogger();
    let state = notReady("redis-full", "Redis at 127.0.0.1:6379 is full: used_memory 20.0 MB of maxmemory 20.0 MB");
    const stop = watchReadiness({ readiness: () => state, redis: "127.0.0.1:6379", log, intervalMs: 10 });
    try {
      await waitFor(() => lines.some((l) => l.message === "not ready"), { what: "the not-ready line" });
      expect(lines.filter((l) => l.message === "not ready")).toEqual([
        { level: "warn", message: "not ready", fields: { reason: "redis full", detail: expect.stringMatching(/is full: used_memory/) } },
      ]);
      // Full is not a lost connection.
      expect(lines.some((l) => l.message === "redis connection lost")).toBe(false);
      state = { ready: true, reasons: [] };
      await waitFor(() => lines.some((l) => l.message === "ready again"), { what: "the ready line" });
    } finally {
      stop();
    }
  });

  it("says 'redis unreachable' for a lost connection and 'not claiming' for failing claims", async () => {
    for (const [reason, said] of [
      ["redis", "redis unreachable"],
      ["claiming", "not claiming"],
    ] as const) {
      const { log, lines } = recordingLogger();
      const stop = watchReadiness({ readiness: () => notReady(reason, "x"), redis: "r", log, intervalMs: 10 });
      try {
        await waitFor(() => lines.some((l) => l.message === "not ready"), { what: "the not-ready line" });
        expect(lines.find((l) => l.message === "not ready")?.fields).toEqual({ reason: said });
      } finally {
        stop();
      }
    }
  });
});
