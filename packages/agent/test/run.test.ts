import { UnrecoverableError as CoreUnrecoverableError, ErrorCodes, type JsonValue, ValidationError } from "@flotilla/core";
import type { AgentEvent } from "@flotilla/events";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent, type AgentConfig } from "../src/agent.ts";
import { UnrecoverableError } from "../src/index.ts";
import type { LanguageModel } from "../src/model.ts";
import { run } from "../src/run.ts";
import { scriptedModel } from "../src/scripted.ts";
import { defineTool, type ToolContext } from "../src/tool.ts";
import { drain } from "./fixtures/drain.ts";

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

describe("run.stream at maxSteps", () => {
  /** The scripted model shown only the system and user messages, so it asks for its tools again on every turn. */
  const base = scriptedModel("insistent");
  const insistent: LanguageModel = {
    ...base,
    doStream: (o) => base.doStream({ ...o, prompt: o.prompt.filter((m) => m.role === "system" || m.role === "user") }),
  };
  const counting = () => {
    let calls = 0;
    return defineTool({ name: "count", description: "counts its calls", inputSchema: z.object({}), execute: () => ++calls });
  };
  const looping = (extra: Partial<AgentConfig> = {}) =>
    new Agent({
      name: "loop",
      model: "scripted:x",
      tools: ["count"],
      options: { maxSteps: 2, scripted: { toolCalls: [{ name: "count", args: {} }] } },
      ...extra,
    });

  it("ends a model that never stops calling tools after maxSteps turns, without an error: the last turn's tools run, its text is the answer", async () => {
    const { events, result } = await drain(run.stream(looping(), "again", { model: insistent, tools: { count: counting() } }));
    expect(events.filter((e) => e.type === "step").map((e) => (e as { index: number }).index)).toEqual([0, 1]);
    expect(events.filter((e) => e.type === "tool_call")).toHaveLength(2);
    // Every turn's calls ran, the last one's too, though no turn comes after it to read their results.
    expect(events.filter((e) => e.type === "tool_result").map((e) => (e as { result: unknown }).result)).toEqual([1, 2]);
    expect(events.at(-1)).toMatchObject({ type: "usage" });
    expect(result).toMatchObject({ steps: 2, text: "" });
    // The run's maxSteps wins over the agent's.
    const longer = await drain(run.stream(looping(), "again", { model: insistent, tools: { count: counting() }, maxSteps: 3 }));
    expect(longer.result.steps).toBe(3);
    expect(longer.events.filter((e) => e.type === "tool_result")).toHaveLength(3);
  });

  it("fails an agent with an output schema that reaches maxSteps with OUTPUT_INVALID: its last turn gave no answer to check", async () => {
    const agent = looping({ outputSchema: z.object({ ok: z.boolean() }) });
    await expect(drain(run.stream(agent, "again", { model: insistent, tools: { count: counting() } }))).rejects.toMatchObject({
      code: ErrorCodes.OUTPUT_INVALID,
    });
  });
});

describe("run.stream and a tool's UnrecoverableError", () => {
  it("is @flotilla/core's class, exported from @flotilla/agent too", () => {
    expect(UnrecoverableError).toBe(CoreUnrecoverableError);
  });

  it("fails the run with the tool's error and aborts the turn's other calls, whatever the others threw", async () => {
    const fatal = new UnrecoverableError("the account is closed");
    let slowSignal: AbortSignal | undefined;
    const slow = defineTool({
      name: "slow",
      description: "waits for its signal",
      inputSchema: z.object({}),
      execute: (_, ctx) =>
        new Promise<JsonValue>((_resolve, reject) => {
          slowSignal = ctx.signal;
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
        }),
    });
    const closed = defineTool({
      name: "closed",
      description: "refuses for good",
      inputSchema: z.object({}),
      execute: async () => {
        await new Promise((r) => setTimeout(r, 20));
        throw fatal;
      },
    });
    const agent = new Agent({
      name: "a",
      model: "scripted:m",
      tools: ["slow", "closed", "broken"],
      options: {
        scripted: {
          toolCalls: [
            { name: "broken", args: {} },
            { name: "slow", args: {} },
            { name: "closed", args: {} },
          ],
        },
      },
    });
    const seen: AgentEvent[] = [];
    const gen = run.stream(agent, "x", { tools: { slow, closed, broken } });
    const failed = (async () => {
      for await (const e of gen) seen.push(e);
    })();
    await expect(failed).rejects.toBe(fatal);
    expect(fatal).toMatchObject({ code: ErrorCodes.UNRECOVERABLE, retryable: false });
    expect(slowSignal?.aborted).toBe(true);
    expect(slowSignal?.reason).toBe(fatal);
    // The turn's results never came: the run ended at the failure.
    expect(seen.map((e) => e.type)).toEqual(["tool_call", "tool_call", "tool_call", "step"]);
  });
});

describe("run.stream and a tool's progress", () => {
  it("yields each progress event as it comes, between the call's tool_call and its tool_result", async () => {
    let returned = false;
    const crawl = defineTool({
      name: "crawl",
      description: "crawls pages, saying how far it got",
      inputSchema: z.object({ pages: z.number() }),
      execute: async ({ pages }, ctx) => {
        for (let done = 1; done <= pages; done++) {
          await new Promise((r) => setTimeout(r, 5));
          ctx.progress({ done, total: pages });
        }
        returned = true;
        return pages;
      },
    });
    const agent = new Agent({
      name: "crawler",
      model: "scripted:m",
      tools: ["crawl"],
      options: { scripted: { toolCalls: [{ name: "crawl", args: { pages: 3 } }] } },
    });
    const seen: AgentEvent[] = [];
    const gen = run.stream(agent, "go", { tools: { crawl } });
    // The consumer sees progress while the tool still runs, not once the turn is over.
    let returnedAtFirstProgress: boolean | undefined;
    for (let next = await gen.next(); !next.done; next = await gen.next()) {
      seen.push(next.value);
      if (next.value.type === "progress" && returnedAtFirstProgress === undefined) returnedAtFirstProgress = returned;
    }
    expect(returnedAtFirstProgress).toBe(false);
    const shape = seen.map((e) => e.type).filter((t, i, all) => t !== "text" || all[i - 1] !== "text");
    expect(shape).toEqual(["tool_call", "step", "progress", "progress", "progress", "tool_result", "text", "step", "usage"]);
    expect(seen.filter((e) => e.type === "progress")).toEqual(
      [1, 2, 3].map((done) => ({ type: "progress", toolCallId: "call_1", name: "crawl", data: { done, total: 3 } })),
    );
  });

  it("drops a tool's progress once it returned, while the turn's other calls still run", async () => {
    let quickProgress: ToolContext["progress"] | undefined;
    const quick = defineTool({
      name: "quick",
      description: "returns at once, keeping its progress function",
      inputSchema: z.object({}),
      execute: (_, ctx) => {
        quickProgress = ctx.progress;
        return "quick";
      },
    });
    const slow = defineTool({
      name: "slow",
      description: "reports through quick's progress after quick returned",
      inputSchema: z.object({}),
      execute: async (_, ctx) => {
        await new Promise((r) => setTimeout(r, 20));
        quickProgress!("after quick returned");
        ctx.progress("slow working");
        return "slow";
      },
    });
    const agent = new Agent({
      name: "pair",
      model: "scripted:m",
      tools: ["quick", "slow"],
      options: {
        scripted: {
          toolCalls: [
            { name: "quick", args: {} },
            { name: "slow", args: {} },
          ],
        },
      },
    });
    const { events } = await drain(run.stream(agent, "go", { tools: { quick, slow } }));
    expect(events.filter((e) => e.type === "progress").map((e) => `${(e as { name: string }).name}: ${(e as { data: string }).data}`)).toEqual([
      "slow: slow working",
    ]);
  });

  it("rejects progress that is not JSON with a ValidationError, and hands readers a copy", async () => {
    const errors: unknown[] = [];
    const shared = { n: 1 };
    const odd = defineTool({
      name: "odd",
      description: "reports odd things",
      inputSchema: z.object({}),
      execute: (_, ctx) => {
        for (const bad of [undefined, () => 1, 10n]) {
          try {
            ctx.progress(bad as never);
          } catch (err) {
            errors.push(err);
          }
        }
        const cycle: Record<string, unknown> = {};
        cycle.self = cycle;
        try {
          ctx.progress(cycle as never);
        } catch (err) {
          errors.push(err);
        }
        ctx.progress(shared);
        shared.n = 2;
        return "ok";
      },
    });
    const agent = new Agent({ name: "a", model: "scripted:m", tools: ["odd"], options: { scripted: { toolCalls: [{ name: "odd", args: {} }] } } });
    const { events } = await drain(run.stream(agent, "go", { tools: { odd } }));
    expect(errors).toHaveLength(4);
    for (const err of errors) expect(err).toBeInstanceOf(ValidationError);
    expect(events.filter((e) => e.type === "progress").map((e) => (e as { data: unknown }).data)).toEqual([{ n: 1 }]);
  });
});
