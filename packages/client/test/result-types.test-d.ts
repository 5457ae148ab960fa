// Types only: run by vitest's typecheck mode (and `pnpm typecheck`), never executed.
import { Agent, Swarm } from "@flotilla/agent";
import { describe, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { type AgentResult, distributed, type FlotillaClient, type JsonValue, type TaskHandle } from "../src/index.ts";

declare const client: FlotillaClient;

const Answer = z.object({ answer: z.string(), confidence: z.number() });
type Answer = z.output<typeof Answer>;
const structured = new Agent({ name: "structured", model: "scripted:x", outputSchema: Answer });
const plain = new Agent({ name: "plain", model: "scripted:x" });
const jsonSchema = new Agent({ name: "json-schema", model: "scripted:x", outputSchema: { type: "object" } });

describe("result types", () => {
  it("distributed(agent) resolves with AgentResult<O>, O from the agent's zod output schema", async () => {
    expectTypeOf(structured).toEqualTypeOf<Agent<Answer>>();
    const handle = await distributed(structured, "question");
    expectTypeOf(handle).toEqualTypeOf<TaskHandle<AgentResult<Answer>>>();
    const result = await handle.result();
    expectTypeOf(result.text).toEqualTypeOf<string>();
    expectTypeOf(result.output).toEqualTypeOf<Answer>();
    expectTypeOf(result.usage.totalTokens).toEqualTypeOf<number>();
    expectTypeOf(result).not.toBeAny();
  });

  it("an agent without a zod schema, a swarm and a plain spec resolve with AgentResult, output optional", async () => {
    for (const handle of [
      await distributed(plain, "q"),
      await distributed(jsonSchema, "q"),
      await distributed(new Swarm({ name: "team", agents: [structured, plain] }), "q"),
      await distributed({ kind: "agent", name: "registered", model: "scripted:x" }, "q"),
      await client.submit({ kind: "agent", name: "registered", model: "scripted:x" }, "q"),
    ]) {
      expectTypeOf(handle).toEqualTypeOf<TaskHandle<AgentResult>>();
      const result = await handle.result();
      expectTypeOf(result.text).toEqualTypeOf<string>();
      expectTypeOf(result.output).toEqualTypeOf<JsonValue | undefined>();
    }
  });

  it("client.submit, submitMany and handle type their handles the same way", async () => {
    expectTypeOf(await client.submit(structured, "q")).toEqualTypeOf<TaskHandle<AgentResult<Answer>>>();
    expectTypeOf(await client.submitMany([{ agent: structured, input: "q" }])).toEqualTypeOf<TaskHandle<AgentResult<Answer>>[]>();
    expectTypeOf(client.handle("default/x")).toEqualTypeOf<TaskHandle<AgentResult>>();
    expectTypeOf(await client.handle<AgentResult<Answer>>("default/x").result()).toEqualTypeOf<AgentResult<Answer>>();
  });

  it("still refuses what is not an agent", () => {
    // @ts-expect-error: a number is neither an agent nor its JSON
    void distributed(42, "q");
    // @ts-expect-error: the input must be JSON
    void client.submit(plain, { at: new Date() });
  });
});
