import type { JsonValue } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent } from "../src/agent.ts";
import { run } from "../src/run.ts";
import { scriptedModel } from "../src/scripted.ts";
import { Swarm } from "../src/swarm.ts";
import { defineTool, type ToolContext } from "../src/tool.ts";
import { drain } from "./fixtures/drain.ts";

const contexts: Array<Pick<ToolContext, "taskId" | "attempt">> = [];
const look = defineTool({
  name: "look",
  description: "records who called it",
  inputSchema: z.object({}),
  execute: (_args, ctx) => {
    contexts.push({ taskId: ctx.taskId, attempt: ctx.attempt });
    return "seen";
  },
});
const looker = new Agent({ name: "looker", model: "scripted:m", tools: ["look"], options: { scripted: { toolCalls: [{ name: "look", args: {} }] } } });

describe("run.stream options", () => {
  it("runs a plain spec as well as an Agent, and a Swarm by its spec", async () => {
    expect((await drain(run.stream(looker.toJSON(), "x", { tools: { look } }))).result).toMatchObject({ agent: "looker", steps: 2 });
    const pipeline = new Swarm({
      name: "p",
      mode: "pipeline",
      agents: [new Agent({ name: "one", model: "scripted:a" }), new Agent({ name: "two", model: "scripted:b" })],
    });
    expect((await drain(run.stream(pipeline, "hi"))).result).toMatchObject({ agent: "two", text: "Echo: Echo: hi" });
  });

  it("tells tools the task and attempt, an empty task and attempt 1 by default", async () => {
    contexts.length = 0;
    await drain(run.stream(looker, "x", { tools: { look } }));
    await drain(run.stream(looker, "x", { tools: { look }, taskId: "q/t", attempt: 3 }));
    expect(contexts).toEqual([
      { taskId: "", attempt: 1 },
      { taskId: "q/t", attempt: 3 },
    ]);
  });

  it("honours the run's maxSteps over the agent's", async () => {
    const { result } = await drain(run.stream(looker, "x", { tools: { look }, maxSteps: 1 }));
    expect(result.steps).toBe(1);
  });

  it("puts the history before the input, and nothing else", async () => {
    const prompts: string[][] = [];
    const echo = new Agent({ name: "e", model: "scripted:e", options: { scripted: { reply: "ok" } } });
    const model = scriptedModel("e");
    const doStream = model.doStream.bind(model);
    model.doStream = async (options) => {
      prompts.push(options.prompt.map((m) => `${m.role}:${JSON.stringify(m.content)}`));
      return doStream(options);
    };
    await drain(run.stream(echo, "now", { history: [{ role: "user", content: "earlier" }], model }));
    await drain(run.stream(echo, "alone", { model }));
    expect(prompts).toEqual([[expect.stringMatching(/^user:.*earlier/), expect.stringMatching(/^user:.*now/)], [expect.stringMatching(/^user:.*alone/)]]);
  });

  it("gives the parsed output only to an agent with an output schema", async () => {
    const typed = new Agent({ name: "t", model: "scripted:t", outputSchema: z.object({ n: z.number() }), options: { scripted: { reply: '{"n":1}' } } });
    expect((await drain(run.stream(typed, "x"))).result.output).toEqual({ n: 1 } satisfies JsonValue);
    const plain = new Agent({ name: "p", model: "scripted:p", options: { scripted: { reply: '{"n":1}' } } });
    expect((await drain(run.stream(plain, "x"))).result).not.toHaveProperty("output");
  });
});
