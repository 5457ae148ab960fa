import { randomUUID } from "node:crypto";
import { Agent, scriptedModel } from "@flotilla/agent";
import { ErrorCodes, type JsonValue, type RunnableSpec, type TokenUsage } from "@flotilla/core";
import type { AgentEvent } from "@flotilla/events";
import { MemoryStores } from "@flotilla/memory";
import { purgePrefix, scripted, testPrefix, testRedis } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { agentExecutor, type ExecutionContext } from "../src/index.ts";

// The default executor: agents run in the worker's process, with memory from the task's metadata.
describe("agentExecutor", () => {
  const h = useFlotilla("agent-executor");

  it("records the run's text, steps, usage and agent as the result, and the usage on the record", async () => {
    await h.worker({ queues: ["ae"] });
    const record = await h.until(await h.submit(scripted("echo"), "one two", { queue: "ae" }));
    expect(record.status).toBe("COMPLETED");
    expect(record.result).toEqual({
      text: "Echo: one two",
      steps: 1,
      usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number), totalTokens: expect.any(Number) },
      agent: "echo",
    });
    const usage = (record.result as { usage: Record<string, number> }).usage;
    expect(usage.outputTokens).toBeGreaterThan(0);
    expect(record.usage).toEqual(usage);
  });

  it("adds the parsed output for an agent with an output schema", async () => {
    await h.worker({ queues: ["ao"] });
    const agent = new Agent({
      name: "structured",
      model: "scripted:x",
      outputSchema: z.object({ n: z.number() }),
      options: { scripted: { reply: '{"n":7}' } },
    });
    const record = await h.until(await h.submit(agent, "x", { queue: "ao" }));
    expect(record.result).toMatchObject({ text: '{"n":7}', output: { n: 7 }, agent: "structured" });
  });

  it("continues a conversation from the memory a task names, and saves what was said", async () => {
    await h.worker({ queues: ["am"] });
    const memory = { conversationId: "c-1" };
    await h.until(await h.submit(scripted("talker", { reply: "heard: {input}" }), "first", { queue: "am", metadata: { memory } }));
    const second = await h.until(await h.submit(scripted("talker", { reply: "heard: {input}" }), "second", { queue: "am", metadata: { memory } }));
    expect(second.status).toBe("COMPLETED");
    const saved = await h.client().conversations.get("c-1").messages();
    expect(saved.map((m) => [m.role, typeof m.content === "string" ? m.content : ""])).toEqual([
      ["user", "first"],
      ["assistant", "heard: first"],
      ["user", "second"],
      ["assistant", "heard: second"],
    ]);
  });

  it("fails a task whose memory is unknown to the worker or not a memory reference", async () => {
    await h.worker({ queues: ["ax"] });
    const unknown = await h.until(await h.submit(scripted("x"), "a", { queue: "ax", metadata: { memory: { store: "nowhere", conversationId: "c" } } }));
    expect(unknown).toMatchObject({ status: "FAILED", error: { code: ErrorCodes.UNKNOWN_MEMORY } });
    const bad = await h.until(await h.submit(scripted("x"), "a", { queue: "ax", metadata: { memory: { conversationId: 5 } } }));
    expect(bad).toMatchObject({ status: "FAILED", error: { code: ErrorCodes.VALIDATION } });
  });
});

// The executor called by hand, with a context that records what the executor tells the worker.
describe("agentExecutor, called directly", () => {
  const redis = testRedis();
  const prefix = testPrefix("agent-executor-direct");
  afterAll(async () => {
    await purgePrefix(redis, prefix);
    await redis.quit();
  });

  function context(agent: RunnableSpec, input: string, metadata: Record<string, JsonValue> = {}) {
    const emitted: AgentEvent[] = [];
    const usage: TokenUsage[] = [];
    const ctx: ExecutionContext = {
      taskId: `q/${randomUUID()}`,
      attempt: 1,
      queue: "q",
      priority: "normal",
      agent,
      input,
      metadata,
      maxRetries: 0,
      backoff: { delayMs: 1000, maxDelayMs: 60_000, jitter: 0 },
      signal: new AbortController().signal,
      emit: (e) => void emitted.push(e),
      reportUsage: (u) => void usage.push(u),
    };
    return { ctx, emitted, usage };
  }

  it("reports the usage of every usage event as it comes, then the run's totals, and no output key without a schema", async () => {
    const { ctx, emitted, usage } = context(scripted("talker").toJSON(), "hello there");
    const result = (await agentExecutor().execute(ctx)) as Record<string, unknown>;
    expect(Object.keys(result).sort()).toEqual(["agent", "steps", "text", "usage"]);
    const usageEvents = emitted.filter((e) => e.type === "usage");
    expect(usageEvents.length).toBeGreaterThan(0);
    // One report per usage event, with the token figures only, then the totals of the run.
    expect(usage).toEqual([...usageEvents.map(({ inputTokens, outputTokens, totalTokens }) => ({ inputTokens, outputTokens, totalTokens })), result.usage]);
    for (const u of usage.slice(0, -1)) expect(Object.keys(u).sort()).toEqual(["inputTokens", "outputTokens", "totalTokens"]);
  });

  it("runs every agent on the worker's `model` when one is given, whatever the agent names", async () => {
    const agent = new Agent({ name: "elsewhere", model: "nowhere:model-x" }).toJSON();
    const failed = agentExecutor().execute(context(agent, "hi").ctx);
    await expect(failed).rejects.toMatchObject({ code: ErrorCodes.UNKNOWN_PROVIDER });
    const result = await agentExecutor({ model: scriptedModel() }).execute(context(agent, "hi").ctx);
    expect(result).toMatchObject({ text: "Echo: hi", agent: "elsewhere" });
  });

  it("puts a conversation's earlier turns before the input, so the model reads them", async () => {
    const memory = new MemoryStores(undefined, () => redis, prefix);
    const executor = agentExecutor({ memory });
    const ref = { memory: { conversationId: `c-${randomUUID()}` } };
    const first = (await executor.execute(context(scripted("talker").toJSON(), "one two three", ref).ctx)) as { usage: TokenUsage };
    const alone = (await executor.execute(context(scripted("talker").toJSON(), "four", {}).ctx)) as { usage: TokenUsage };
    const second = (await executor.execute(context(scripted("talker").toJSON(), "four", ref).ctx)) as { usage: TokenUsage };
    // The scripted model counts the words of its whole prompt: the second turn also read the first
    // turn's question (3 words) and answer ("Echo: one two three", 4 words).
    expect(first.usage.inputTokens).toBeGreaterThan(0);
    expect(second.usage.inputTokens).toBe(alone.usage.inputTokens + 3 + 4);
  });

  it("refuses a task that names a memory when the worker has no memory stores, and names the bad field", async () => {
    const ref = { memory: { conversationId: "c" } };
    await expect(agentExecutor().execute(context(scripted("x").toJSON(), "a", ref).ctx)).rejects.toMatchObject({
      code: ErrorCodes.UNKNOWN_MEMORY,
      message: "this worker has no memory stores",
    });
    await expect(agentExecutor().execute(context(scripted("x").toJSON(), "a", { memory: { conversationId: 5 } }).ctx)).rejects.toMatchObject({
      code: ErrorCodes.VALIDATION,
      message: expect.stringContaining("metadata.memory"),
    });
  });
});
