import { describe, expect, it } from "vitest";
import { type FlotillaEvent, FlotillaEventSchema, isTerminalEvent, keepsEvent } from "../src/schema.ts";

const stamp = { taskId: "q/t", seq: 1, attempt: 1, ts: 1, agent: "a" };

/** One event of each type, as the store gives them back. */
const examples: Record<FlotillaEvent["type"], Record<string, unknown>> = {
  status: { type: "status", status: "running", workerId: "w" },
  text: { type: "text", delta: "hi" },
  tool_call: { type: "tool_call", toolCallId: "c1", name: "search", args: { q: "x" } },
  tool_result: { type: "tool_result", toolCallId: "c1", name: "search", result: [1], isError: false },
  step: { type: "step", index: 1, finishReason: "stop" },
  usage: { type: "usage", inputTokens: 1, outputTokens: 2, totalTokens: 3 },
  handoff: { type: "handoff", from: "a", to: "b" },
  progress: { type: "progress", toolCallId: "c1", name: "search", data: { done: 1, total: 3 } },
  "user-message": { type: "user-message", messageId: "m1", content: "also check the weekend" },
  error: { type: "error", message: "boom", code: "AGENT_ERROR" },
  custom: { type: "custom", name: "progress", data: { done: 1 } },
};

describe("FlotillaEventSchema", () => {
  it.each(Object.entries(examples))("reads a %s event", (type, body) => {
    expect(FlotillaEventSchema.parse({ ...stamp, ...body })).toMatchObject({ type, ...body });
  });

  it.each(["pending", "running", "completed", "failed", "cancelled", "retrying"])("reads the %s status", (status) => {
    expect(FlotillaEventSchema.safeParse({ ...stamp, type: "status", status }).success).toBe(true);
  });

  it("refuses an unknown type, an unknown status, a negative step index and a progress event naming no call", () => {
    expect(FlotillaEventSchema.safeParse({ ...stamp, type: "", delta: "x" }).success).toBe(false);
    expect(FlotillaEventSchema.safeParse({ ...stamp, type: "status", status: "" }).success).toBe(false);
    expect(FlotillaEventSchema.safeParse({ ...stamp, type: "step", index: -1, finishReason: "stop" }).success).toBe(false);
    // A progress event names its tool call.
    expect(FlotillaEventSchema.safeParse({ ...stamp, type: "progress", name: "search", data: 1 }).success).toBe(false);
  });
});

describe("isTerminalEvent", () => {
  const status = (s: string) => FlotillaEventSchema.parse({ ...stamp, type: "status", status: s });

  it("is true for the completed, failed and cancelled status events only", () => {
    expect(["completed", "failed", "cancelled"].map((s) => isTerminalEvent(status(s)))).toEqual([true, true, true]);
    expect(["pending", "running", "retrying"].map((s) => isTerminalEvent(status(s)))).toEqual([false, false, false]);
    // Not a status event, whatever its fields say.
    expect(isTerminalEvent({ ...stamp, type: "text", delta: "x", status: "completed" } as FlotillaEvent)).toBe(false);
  });
});

describe("keepsEvent", () => {
  it("keeps every type for a detailed task, status, text, progress and user messages only otherwise", () => {
    const types = Object.keys(examples) as Array<FlotillaEvent["type"]>;
    expect(types.filter((t) => keepsEvent(true, t))).toEqual(types);
    expect(types.filter((t) => keepsEvent(false, t))).toEqual(["status", "text", "progress", "user-message"]);
  });
});
