// @single: model endpoints; the stream path runs on the cluster in client.test.ts
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, defineTool, Swarm } from "@flotilla/agent";
import { PostgresMemoryStore, SqliteMemoryStore } from "@flotilla/memory";
import { collect, startOpenAIServer, testConnection } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { FlotillaClient, TaskCancelledError, TaskFailedError } from "../src/index.ts";

const server = await startOpenAIServer();
const dir = mkdtempSync(join(tmpdir(), "flotilla-agents-"));
const pool = new pg.Pool({ host: "127.0.0.1", port: 5432, user: process.env.PGUSER ?? "postgres", database: "test" });
const table = `flotilla_agents_${process.pid}_${Date.now() % 1e6}`;
const sqlite = new SqliteMemoryStore(join(dir, "memory.db"));
const postgres = new PostgresMemoryStore({ pool, table });
afterAll(async () => {
  await server.close();
  await sqlite.close();
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.end();
  rmSync(dir, { recursive: true, force: true });
});

const lookup = defineTool({
  name: "lookup",
  description: "Looks a word up",
  inputSchema: z.object({ word: z.string() }),
  execute: ({ word }) => ({ word, length: word.length }),
});
const local = (name: string, extra: Partial<ConstructorParameters<typeof Agent>[0]> = {}) => new Agent({ name, model: "local:gpt-test", ...extra });

describe("agents on a real OpenAI-compatible endpoint (a local chat-completions server)", () => {
  const env = useFlotilla("agents");
  const worker = () => env.worker({ openAICompatible: { local: { baseURL: server.baseURL, apiKey: "test-key" } }, tools: { lookup } });

  it("runs the tool loop: streamed tool call, tool result back to the model, streamed answer, usage on the record", async () => {
    await worker();
    const first = server.requests.length;
    server.reply({ toolCalls: [{ id: "call_1", name: "lookup", args: { word: "fleet" } }], usage: { prompt: 12, completion: 6 } });
    server.reply({ text: "The word fleet has 5 letters.", usage: { prompt: 30, completion: 8 } });
    const handle = await env.client().submit(local("researcher", { tools: ["lookup"] }), "How long is fleet?", { detailed: true });
    const events = await collect(handle.stream());
    expect(events.map((e) => (e.type === "status" ? `status:${e.status}` : e.type)).filter((t, i, a) => t !== "text" || a[i - 1] !== "text")).toEqual([
      "status:running",
      "tool_call",
      "step",
      "tool_result",
      "text",
      "step",
      "usage",
      "status:completed",
    ]);
    expect(events.find((e) => e.type === "tool_call")).toMatchObject({ toolCallId: "call_1", name: "lookup", args: { word: "fleet" } });
    expect(events.find((e) => e.type === "tool_result")).toMatchObject({ result: { word: "fleet", length: 5 }, isError: false });
    expect(
      events
        .filter((e) => e.type === "text")
        .map((e) => (e as { delta: string }).delta)
        .join(""),
    ).toBe("The word fleet has 5 letters.");
    expect(await handle.result()).toMatchObject({ text: "The word fleet has 5 letters.", steps: 2, agent: "researcher" });
    expect((await handle.status()).usage).toEqual({ inputTokens: 42, outputTokens: 14, totalTokens: 56 });
    // What went over the wire: a streamed request offering the tool as JSON Schema, then the tool result.
    const [toolTurn, answerTurn] = server.requests.slice(first);
    expect(toolTurn!.body).toMatchObject({ model: "gpt-test", stream: true });
    expect(toolTurn!.body.tools?.[0]?.function).toMatchObject({ name: "lookup", parameters: { type: "object", properties: { word: { type: "string" } } } });
    const toolMessage = answerTurn!.body.messages.find((m) => m.role === "tool");
    expect(toolMessage).toMatchObject({ tool_call_id: "call_1" });
    expect(JSON.parse(String(toolMessage!.content))).toEqual({ word: "fleet", length: 5 });
  });

  it("fails once on an error the provider calls final (400), and retries one it calls retryable (500)", async () => {
    await worker();
    server.reply({ status: 400, message: "bad request: model does not exist" });
    const refused = await env.client().submit(local("refused"), "x", { maxRetries: 2 });
    await expect(refused.result()).rejects.toBeInstanceOf(TaskFailedError);
    expect(await refused.status()).toMatchObject({ status: "FAILED", attempt: 1, retries: 0, error: { code: "MODEL_ERROR" } });
    expect((await refused.status()).error?.message).toMatch(/HTTP 400/);

    const before = server.requests.length;
    server.reply({ status: 500, message: "overloaded" }, { text: "recovered" });
    const flaky = await env.client().submit(local("flaky"), "x");
    expect(await flaky.result()).toMatchObject({ text: "recovered" });
    expect(server.requests.length - before).toBe(2);
  });

  it("cancels a slow stream mid-way: the model call is aborted and the task ends CANCELLED", async () => {
    await worker();
    server.reply({ text: "a very slow answer that would take a long while to finish", chunkSize: 2, delayMs: 100 });
    const handle = await env.client().submit(local("slow"), "take your time");
    const request = new Promise<(typeof server.requests)[number]>((resolve) => {
      const n = server.requests.length;
      const poll = setInterval(() => {
        if (server.requests.length > n) {
          clearInterval(poll);
          resolve(server.requests[n]!);
        }
      }, 10);
    });
    for await (const e of handle.stream()) {
      if (e.type === "text") break;
    }
    await handle.cancel("user gave up");
    await expect(handle.result()).rejects.toBeInstanceOf(TaskCancelledError);
    const recorded = await request;
    await recorded.done;
    expect(recorded.aborted).toBe(true);
  });

  it("continues a conversation from memory in Redis, SQLite and PostgreSQL, and reads it back through the client", async () => {
    await env.worker({
      openAICompatible: { local: { baseURL: server.baseURL } },
      memory: { sqlite, postgres },
    });
    const client = env.client();
    for (const store of ["redis", "sqlite", "postgres"]) {
      const conversationId = `chat-${store}-${Date.now()}`;
      const memory = { store, conversationId };
      server.reply({ text: "Nice to meet you, Ada." });
      await (await client.submit(local("chat"), "My name is Ada.", { metadata: { memory } })).result();
      const before = server.requests.length;
      server.reply({ text: "You are Ada." });
      await (await client.submit(local("chat"), "What is my name?", { metadata: { memory } })).result();
      // The second run's model saw the first exchange before the new question.
      expect(server.requests[before]!.body.messages.map((m) => [m.role, m.content])).toEqual([
        ["user", "My name is Ada."],
        ["assistant", "Nice to meet you, Ada."],
        ["user", "What is my name?"],
      ]);
      // Any client reads the conversation back through the same store (redis is built in).
      const reader = new FlotillaClient({ redis: testConnection(), prefix: env.prefix, memory: { sqlite, postgres } });
      const conversation = reader.conversations.get(conversationId, store);
      expect((await conversation.messages()).map((m) => [m.role, m.content])).toEqual([
        ["user", "My name is Ada."],
        ["assistant", "Nice to meet you, Ada."],
        ["user", "What is my name?"],
        ["assistant", "You are Ada."],
      ]);
      await conversation.clear();
      expect(await conversation.messages()).toEqual([]);
      await reader.close();
    }
  });

  it("keeps what was said when a run fails mid-way: the messages were saved as they came", async () => {
    await env.worker({ openAICompatible: { local: { baseURL: server.baseURL } }, tools: { lookup } });
    const conversationId = `chat-crash-${Date.now()}`;
    server.reply({ toolCalls: [{ id: "call_9", name: "lookup", args: { word: "mast" } }] }, { status: 400, message: "the second turn fails" });
    const handle = await env.client().submit(local("unlucky", { tools: ["lookup"] }), "How long is mast?", { metadata: { memory: { conversationId } } });
    await expect(handle.result()).rejects.toBeInstanceOf(TaskFailedError);
    const messages = await env.client().conversations.get(conversationId).messages();
    expect(messages).toEqual([
      { role: "user", content: "How long is mast?" },
      { role: "assistant", content: "", toolCalls: [{ toolCallId: "call_9", name: "lookup", args: { word: "mast" } }] },
      { role: "tool", toolCallId: "call_9", name: "lookup", content: { word: "mast", length: 4 }, isError: false },
    ]);
  });
});

describe("structured output, swarms and unknown models (scripted model)", () => {
  const env = useFlotilla("agents-scripted");

  it("validates the final answer against the agent's output schema; a violation fails once with OUTPUT_INVALID", async () => {
    await env.worker();
    const schema = z.object({ answer: z.string(), confidence: z.number().min(0).max(1) });
    const good = new Agent({ name: "judge", model: "scripted:x", outputSchema: schema, options: { scripted: { reply: '{"answer":"yes","confidence":0.9}' } } });
    expect(await (await env.client().submit(good, "Is it?")).result()).toMatchObject({ output: { answer: "yes", confidence: 0.9 } });
    const bad = new Agent({ name: "judge", model: "scripted:x", outputSchema: schema, options: { scripted: { reply: '{"answer":"yes","confidence":7}' } } });
    const handle = await env.client().submit(bad, "Is it?", { maxRetries: 3 });
    await expect(handle.result()).rejects.toBeInstanceOf(TaskFailedError);
    expect(await handle.status()).toMatchObject({ status: "FAILED", attempt: 1, error: { code: "OUTPUT_INVALID" } });
    expect((await handle.status()).error?.message).toMatch(/confidence/);
  });

  it("runs a swarm distributed: the handoff shows in the events, in order, and the second agent answers", async () => {
    await env.worker();
    const swarm = new Swarm({
      name: "desk",
      agents: [
        new Agent({
          name: "triage",
          model: "scripted:x",
          options: { scripted: { toolCalls: [{ name: "transfer_to_agent", args: { agent: "writer", reason: "needs prose" } }] } },
        }),
        new Agent({ name: "writer", model: "scripted:x", options: { scripted: { reply: "Drafted: {input}" } } }),
      ],
    });
    expect(Swarm.fromJSON(JSON.parse(JSON.stringify(swarm))).toJSON()).toEqual(swarm.toJSON());
    const handle = await env.client().submit(swarm, "a note to the fleet", { detailed: true });
    const events = await collect(handle.stream());
    const kinds = events.map((e) => (e.type === "status" ? `status:${e.status}` : e.type)).filter((t, i, a) => t !== "text" || a[i - 1] !== "text");
    expect(kinds).toEqual(["status:running", "tool_call", "step", "tool_result", "handoff", "text", "step", "usage", "status:completed"]);
    expect(events.find((e) => e.type === "handoff")).toMatchObject({ from: "triage", to: "writer", reason: "needs prose" });
    expect(await handle.result()).toMatchObject({ text: "Drafted: a note to the fleet", agent: "writer" });

    const pipeline = new Swarm({
      name: "line",
      mode: "pipeline",
      agents: [
        new Agent({ name: "drafter", model: "scripted:x", options: { scripted: { reply: "draft of {input}" } } }),
        new Agent({ name: "editor", model: "scripted:x", options: { scripted: { reply: "edited {input}" } } }),
      ],
    });
    expect(await (await env.client().submit(pipeline, "the memo")).result()).toMatchObject({ text: "edited draft of the memo", agent: "editor" });
  });

  it("fails a task whose model no rule can make with UNKNOWN_PROVIDER naming the model, once", async () => {
    await env.worker();
    const handle = await env.client().submit(new Agent({ name: "lost", model: "nowhere:big-model" }), "x", { maxRetries: 2 });
    await expect(handle.result()).rejects.toBeInstanceOf(TaskFailedError);
    const record = await handle.status();
    expect(record).toMatchObject({ status: "FAILED", attempt: 1, error: { code: "UNKNOWN_PROVIDER" } });
    // A store the client was not given is a typed error too.
    expect(() => env.client().conversations.get("c1", "sqlite")).toThrow(/no memory store "sqlite"/);
    expect(record.error?.message).toMatch(/"nowhere:big-model"/);
  });
});
