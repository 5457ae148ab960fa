import { describe, expect, it } from "vitest";
import { ValidationError } from "../src/errors.ts";
import { AgentSpecSchema, parseInput, SubmitOptionsSchema } from "../src/schemas.ts";

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
    expect(() => parseInput(SubmitOptionsSchema, { priority: "urgent" }, "options")).toThrow(ValidationError);
    expect(() => parseInput(SubmitOptionsSchema, { priority: 1.5 }, "options")).toThrow(ValidationError);
  });

  it("applies submit defaults", () => {
    expect(parseInput(SubmitOptionsSchema, {}, "options")).toEqual({
      queue: "default",
      maxRetries: 0,
      metadata: {},
      detailed: false,
      priority: "normal",
      idempotencyWindowMs: 86_400_000,
    });
  });
});

describe("LuaScript", () => {
  it("gives scripts of the same file name but different source different command names", async () => {
    const { LuaScript } = await import("../src/redis/lua-script.ts");
    const a = new LuaScript({ name: "requeue", lua: "return 1", numberOfKeys: 0 });
    const b = new LuaScript({ name: "requeue", lua: "return 2", numberOfKeys: 0 });
    expect(a.name).not.toBe(b.name);
    expect(a.name).toMatch(/^flotilla_requeue_[0-9a-f]{10}$/);
  });
});

describe("priorities", () => {
  it("maps integer priorities to lanes: above 0 high, 0 normal, below 0 low", () => {
    const lane = (priority: number | string) => parseInput(SubmitOptionsSchema, { priority }, "options").priority;
    expect([10, 5, 1, 0, -1, -10].map(lane)).toEqual(["high", "high", "high", "normal", "low", "low"]);
    expect(["high", "normal", "low"].map(lane)).toEqual(["high", "normal", "low"]);
  });
});

describe("backoffDelay", () => {
  it("doubles from delayMs, caps at maxDelayMs, and takes off at most the jitter fraction", async () => {
    const { backoffDelay } = await import("../src/schemas.ts");
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
