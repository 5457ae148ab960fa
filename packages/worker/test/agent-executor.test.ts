import { Agent } from "@flotilla/agent";
import { ErrorCodes } from "@flotilla/core";
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { z } from "zod";

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
