import { describe, expect, it } from "vitest";
import { CorruptRecordError, ValidationError } from "./errors.ts";
import { AgentSpecSchema, parseInput, parseTaskRecord, SubmitOptionsSchema } from "./schemas.ts";

describe("schemas", () => {
  it("names the offending field of bad input", () => {
    const err = (() => {
      try {
        parseInput(AgentSpecSchema, { name: "a", model: "no-provider" }, "agent");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ code: "VALIDATION_ERROR", field: "model" });
  });

  it("rejects unknown agent fields and unknown options", () => {
    expect(() => parseInput(AgentSpecSchema, { name: "a", model: "x:y", script: "rm -rf" }, "agent")).toThrow(ValidationError);
    expect(() => parseInput(SubmitOptionsSchema, { priority: 3 }, "options")).toThrow(ValidationError);
  });

  it("applies submit defaults", () => {
    expect(parseInput(SubmitOptionsSchema, {}, "options")).toEqual({ queue: "default", maxRetries: 0, metadata: {}, detailed: false, priority: "normal", idempotencyWindowMs: 86_400_000 });
  });

  it("reads a record back with types, and reports a corrupt one", () => {
    const record = parseTaskRecord(
      {
        taskId: "q/t",
        queue: "q",
        status: "COMPLETED",
        agent: "a",
        attempt: "1",
        createdAt: "10",
        detailed: "0",
        metadata: "{}",
        result: '{"ok":true}',
        error: '{"message":"m","code":"C"}',
      },
      "q/t",
    );
    expect(record).toMatchObject({ attempt: 1, result: { ok: true }, detailed: false, error: { code: "C" } });
    expect(parseTaskRecord({}, "t")).toBeUndefined();
    expect(() => parseTaskRecord({ taskId: "q/t", status: "WEIRD" }, "t")).toThrow(CorruptRecordError);
  });
});

describe("LuaScript", () => {
  it("gives scripts of the same file name but different source different command names", async () => {
    const { LuaScript } = await import("./lua.ts");
    const a = new LuaScript("requeue", "return 1", 0);
    const b = new LuaScript("requeue", "return 2", 0);
    expect(a.name).not.toBe(b.name);
    expect(a.name).toMatch(/^flotilla_requeue_[0-9a-f]{10}$/);
  });
});

describe("backoffDelay", () => {
  it("doubles from delayMs, caps at maxDelayMs, and takes off at most the jitter fraction", async () => {
    const { backoffDelay } = await import("./schemas.ts");
    const b = { delayMs: 100, maxDelayMs: 1000, jitter: 0.5 };
    expect([0, 1, 2, 3, 4, 10].map((r) => backoffDelay(b, r, 0))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(backoffDelay(b, 2, 1)).toBe(200);
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(b, 3);
      expect(d).toBeGreaterThanOrEqual(400);
      expect(d).toBeLessThanOrEqual(800);
    }
  });
});
