import { ErrorCodes, ValidationError } from "@flotilla/core";
import type { AgentEvent } from "@flotilla/events";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent } from "../src/agent.ts";
import { type RunResult, run } from "../src/run.ts";
import { defineTool } from "../src/tool.ts";

async function drain(gen: AsyncGenerator<AgentEvent, RunResult>) {
  const events: AgentEvent[] = [];
  for (;;) {
    const next = await gen.next();
    if (next.done) return { events, result: next.value };
    events.push(next.value);
  }
}

const add = defineTool({
  name: "add",
  description: "adds two numbers",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});
const broken = defineTool({
  name: "broken",
  description: "always throws",
  inputSchema: z.object({}),
  execute: () => {
    throw new Error("tool exploded");
  },
});

describe("Agent", () => {
  it("round-trips through JSON", () => {
    const agent = new Agent({ name: "a", model: "scripted:echo", instructions: "be brief", tools: ["add"], options: { maxSteps: 3 } });
    const again = Agent.fromJSON(JSON.parse(JSON.stringify(agent)));
    expect(again.toJSON()).toEqual(agent.toJSON());
    expect(again.provider).toBe("scripted");
    expect(again.modelName).toBe("echo");
  });

  it("rejects a bad config naming the field", () => {
    expect(() => new Agent({ name: "", model: "scripted:x" })).toThrow(ValidationError);
    expect(() => Agent.fromJSON({ name: "a", model: "nocolon" })).toThrow(/model/);
    expect(() => Agent.fromJSON({ name: "a", model: "x:y", code: "evil()" })).toThrow(ValidationError);
  });
});

describe("run.stream with the scripted provider", () => {
  it("streams the reply token by token", async () => {
    const { events, result } = await drain(run.stream(new Agent({ name: "a", model: "scripted:echo" }), "hi there"));
    const text = events.filter((e) => e.type === "text");
    expect(text.map((e) => (e as { delta: string }).delta)).toEqual(["Echo:", " hi", " there"]);
    expect(result).toMatchObject({ text: "Echo: hi there", steps: 1 });
    expect(events.at(-1)).toMatchObject({ type: "usage" });
  });

  it("calls tools on cue and returns their results to the model, errors included", async () => {
    const agent = new Agent({
      name: "calc",
      model: "scripted:calc",
      tools: ["add", "broken"],
      options: {
        scripted: {
          toolCalls: [
            { name: "add", args: { a: 2, b: 3 } },
            { name: "broken", args: {} },
            { name: "add", args: { a: "x" } },
          ],
        },
      },
    });
    const { events, result } = await drain(run.stream(agent, "sum", { tools: { add, broken } }));
    const shape = events.map((e) => e.type).filter((t, i, all) => t !== "text" || all[i - 1] !== "text");
    expect(shape).toEqual(["tool_call", "tool_call", "tool_call", "step", "tool_result", "tool_result", "tool_result", "text", "step", "usage"]);
    const results = events.filter((e) => e.type === "tool_result");
    expect(results[0]).toMatchObject({ name: "add", result: 5, isError: false });
    expect(results[1]).toMatchObject({ name: "broken", result: "tool exploded", isError: true });
    expect(results[2]).toMatchObject({ name: "add", isError: true });
    expect(result.steps).toBe(2);
    expect(result.text).toContain("add returned 5.");
  });

  it("fails on an unknown provider or an unregistered tool, with a typed code", async () => {
    await expect(drain(run.stream(new Agent({ name: "a", model: "nope:m" }), "x"))).rejects.toMatchObject({
      code: ErrorCodes.UNKNOWN_PROVIDER,
    });
    await expect(drain(run.stream(new Agent({ name: "a", model: "scripted:m", tools: ["ghost"] }), "x"))).rejects.toMatchObject({
      code: ErrorCodes.UNKNOWN_TOOL,
    });
  });

  it("fails when told to, after some tokens", async () => {
    const agent = new Agent({ name: "a", model: "scripted:m", options: { scripted: { failWith: "model down", failAfterTokens: 2 } } });
    const gen = run.stream(agent, "one two three four");
    const seen: AgentEvent[] = [];
    await expect(
      (async () => {
        for await (const e of gen) seen.push(e);
      })(),
    ).rejects.toMatchObject({ message: "model down", code: ErrorCodes.AGENT_ERROR });
    expect(seen.filter((e) => e.type === "text")).toHaveLength(2);
  });

  it("stops a slow model when the signal aborts", async () => {
    const agent = new Agent({ name: "a", model: "scripted:m", options: { scripted: { tokenDelayMs: 1000 } } });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("stop now")), 20);
    const started = Date.now();
    await expect(drain(run.stream(agent, "a b c d e", { signal: controller.signal }))).rejects.toThrow("stop now");
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
