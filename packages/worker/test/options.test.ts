import { defineTool, type Tool } from "@flotilla/agent";
import { ValidationError } from "@flotilla/core";
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Worker, type WorkerOptions } from "../src/index.ts";

const lookup = defineTool({
  name: "lookup",
  description: "looks a word up",
  inputSchema: z.object({ word: z.string() }),
  execute: ({ word }) => ({ word, length: word.length }),
});

/** What plain JavaScript can pass, whatever the types say. */
const construct = (options: unknown) => () => new Worker(options as WorkerOptions);

describe("Worker options", () => {
  const h = useFlotilla("worker-options");

  it("takes tools as an array, by each tool's name, as the worker app does", async () => {
    await h.worker({ tools: [lookup], queues: ["array-tools"] });
    const id = await h.submit(scripted("dict", { toolCalls: [{ name: "lookup", args: { word: "fleet" } }] }, { tools: ["lookup"] }), "define", {
      queue: "array-tools",
    });
    expect(await h.until(id)).toMatchObject({ status: "COMPLETED" });
    const result = (await h.events(id)).find((e) => e.type === "tool_result");
    expect(result).toMatchObject({ name: "lookup", result: { word: "fleet", length: 5 }, isError: false });
  });

  it("keeps a tool's own object: a class instance still has its methods and `this`", async () => {
    class Counter implements Tool {
      name = "count";
      description = "counts";
      inputSchema = z.object({});
      private calls = 0;
      execute() {
        this.calls += 1;
        return { calls: this.calls };
      }
    }
    await h.worker({ tools: [new Counter()], queues: ["class-tools"] });
    const id = await h.submit(scripted("counting", { toolCalls: [{ name: "count", args: {} }] }, { tools: ["count"] }), "x", { queue: "class-tools" });
    expect(await h.until(id)).toMatchObject({ status: "COMPLETED" });
    expect((await h.events(id)).find((e) => e.type === "tool_result")).toMatchObject({ result: { calls: 1 }, isError: false });
  });

  it("refuses bad options at construction with a ValidationError naming the field", () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [{ tools: [lookup, { ...lookup }] }, "tools.1.name", /a second tool named "lookup"/],
      [{ tools: [{ name: "half", description: "no execute", inputSchema: z.object({}) }] }, "tools.0.execute", /must be a function/],
      [{ tools: [lookup.name] }, "tools.0", /expected object/],
      [{ tools: { lookup: { ...lookup, inputSchema: { type: "object" } } } }, "tools.lookup.inputSchema", /must be a zod schema/],
      [{ tools: "lookup" }, "tools", /an array of tools, or a Map or record of tools by name/],
      // A name is checked whole, not only where it starts or ends.
      [{ tools: [{ ...lookup, name: "look up" }] }, "tools.0.name", /1 to 64 letters, digits, _ or -/],
      [{ tools: [{ ...lookup, name: "lookup!" }] }, "tools.0.name", /1 to 64 letters, digits, _ or -/],
      [{ tools: [{ ...lookup, name: "!lookup" }] }, "tools.0.name", /1 to 64 letters, digits, _ or -/],
      [{ redis: 6379 }, "redis", /must be a Redis URL, ioredis options or an ioredis client/],
      [{ redis: null }, "redis", /must be a Redis URL, ioredis options or an ioredis client/],
      [{ agents: ["echo"] }, "agents.0", /must be an Agent, a Swarm or their JSON/],
      [{ providerFactory: { create() {} } }, "providerFactory", /must be a function/],
      [{ openAICompatible: { local: {} } }, "openAICompatible.local.baseURL", /expected string/],
      [{ openAICompatible: { local: { baseURL: "" } } }, "openAICompatible.local.baseURL", />=1 characters/],
      [{ model: "gpt-4o" }, "model", /must be an AI SDK LanguageModel/],
      [{ memory: { m: { append() {}, clear() {} } } }, "memory.m.entries", /must be a function/],
      [{ memory: { m: { entries() {}, clear() {} } } }, "memory.m.append", /must be a function/],
      [{ memory: { m: { entries() {}, append() {} } } }, "memory.m.clear", /must be a function/],
      [{ redis: "http://127.0.0.1:6379" }, "redis", /redis:\/\/ or rediss:\/\//],
      [{ prefix: "" }, "prefix", /must not be empty/],
      [{ queues: [] }, "queues", /at least one queue/],
      [{ queues: ["a b"] }, "queues.0", /letters, digits/],
      [{ concurrency: 0 }, "concurrency", /positive integer/],
      [{ concurrency: 2.5 }, "concurrency", /positive integer/],
      [{ leaseMs: 100 }, "leaseMs", /at least 300/],
      [{ fairnessEvery: -1 }, "fairnessEvery", /strict priority/],
      [{ executor: { run() {} } }, "executor.execute", /must be a function/],
      [{ logger: console.log }, "logger", /expected object/],
      [{ retention: { recordTtl: 5 } }, "retention.recordTtl", /unknown key/],
      [{ tool: [lookup] }, "tool", /tools are given as `tools`/],
    ];
    for (const [options, field, message] of cases) {
      const err = (() => {
        try {
          construct(options)();
        } catch (e) {
          return e;
        }
      })();
      expect(err, field).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field, (err as Error).message).toBe(field || "worker options");
      expect((err as ValidationError).issues[0]!.message, field).toMatch(message);
    }
  });

  it("accepts what it always did: tools by name in a record or a Map, a redis URL, a socket path or ioredis options", () => {
    const ok: WorkerOptions[] = [
      { tools: { lookup } },
      { tools: new Map([["lookup", lookup as Tool]]) },
      { redis: "rediss://user:pw@redis.example:6380/2" },
      { redis: "/var/run/redis.sock" },
      { redis: { host: "127.0.0.1", port: 6379 } },
      { backoff: { delayMs: 10 }, retention: { recordTtlMs: 1000 }, logger: console },
      { openAICompatible: { local: { baseURL: "http://127.0.0.1:11434/v1" } } },
      { tools: [{ ...lookup, name: "A-z_09" }] },
    ];
    for (const options of ok) expect(construct(options), JSON.stringify(options)).not.toThrow();
  });
});
