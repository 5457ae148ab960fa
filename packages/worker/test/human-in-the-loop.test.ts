// Human in the loop through real Workers on Redis: a tool that needs approval, or waits for a
// signal, stops its task (WAITING, no worker held), and a signal from the client resumes it on any
// worker from where it stopped: the model's earlier turns are not asked again.
import { defineTool, type LanguageModel, scriptedModel } from "@flotilla/agent";
import { ErrorCodes, type JsonValue, NotWaitingError } from "@flotilla/core";
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { z } from "zod";

/** The scripted model, counting the turns it is asked for. */
function countingModel(): { model: LanguageModel; turns: () => number } {
  const inner = scriptedModel();
  let turns = 0;
  const model = {
    ...inner,
    doStream(options: Parameters<typeof inner.doStream>[0]) {
      turns++;
      return inner.doStream(options);
    },
  } as LanguageModel;
  return { model, turns: () => turns };
}

describe("human in the loop", () => {
  const h = useFlotilla("hitl");
  const sent: JsonValue[] = [];
  let lookups = 0;
  const sendEmail = defineTool({
    name: "send_email",
    description: "sends an e-mail",
    inputSchema: z.object({ to: z.string() }),
    approval: true,
    execute: (args) => {
      sent.push(args.to);
      return `sent to ${args.to}`;
    },
  });
  const lookup = defineTool({
    name: "lookup",
    description: "looks something up",
    inputSchema: z.object({}),
    execute: () => {
      lookups++;
      return "found";
    },
  });
  const ask = defineTool({
    name: "ask",
    description: "asks a person",
    inputSchema: z.object({ question: z.string(), timeoutMs: z.number() }),
    execute: async (args, ctx) => {
      const answer = await ctx.waitForSignal("answer", { timeoutMs: args.timeoutMs, onTimeout: "continue", request: { question: args.question } });
      return answer === undefined ? "nobody answered" : { answer };
    },
  });
  const tools = [sendEmail, lookup, ask];
  const mailer = scripted(
    "mailer",
    {
      toolCalls: [
        { name: "lookup", args: {} },
        { name: "send_email", args: { to: "ceo@example.com" } },
      ],
    },
    { tools: ["lookup", "send_email"] },
  );

  it("waits WAITING with the request on its record and stream, frees its slot, and resumes on another worker when approved", async () => {
    const counting = countingModel();
    const first = await h.worker({ tools, model: counting.model, queues: ["hitl-approve"], concurrency: 1 });
    const client = h.client();
    const handle = await client.submit(mailer, "tell the ceo", { queue: "hitl-approve", detailed: true });
    const waiting = await waitFor(async () => {
      const s = await handle.status();
      return s.status === "WAITING" ? s : undefined;
    });
    expect(waiting.waiting).toMatchObject({ name: "approval", kind: "approval", tool: "send_email", args: { to: "ceo@example.com" }, onTimeout: "fail" });
    expect(sent).toEqual([]);
    // Its worker (concurrency 1) is free: another task runs to the end meanwhile.
    const other = await client.submit(scripted("other"), "hi", { queue: "hitl-approve" });
    expect(await other.result({ timeoutMs: 10_000 })).toMatchObject({ text: "Echo: hi" });
    expect(counting.turns()).toBe(2);

    // Resumed by another worker: the first one is gone.
    await h.stopWorkers({ workers: [first] });
    await h.worker({ tools, model: counting.model, queues: ["hitl-approve"], workerId: "hitl-second" });
    await handle.approve("looks fine");
    const result = await handle.result({ timeoutMs: 10_000 });
    expect(result.text).toBe("lookup returned found. send_email returned sent to ceo@example.com. Echo: tell the ceo");
    expect(sent).toEqual(["ceo@example.com"]);
    // The call that finished before the wait kept its result: it did not run again.
    expect(lookups).toBe(1);
    // The first turn (the tool calls) was not asked again: one turn before the wait, one after, one for the other task.
    expect(counting.turns()).toBe(3);
    const record = await handle.status();
    expect(record).toMatchObject({ status: "COMPLETED", workerId: "hitl-second", retries: 0 });
    expect(record.waiting).toBeUndefined();

    const events = await h.events(handle.taskId);
    const statuses = events.filter((e) => e.type === "status").map((e) => (e.type === "status" ? e.status : ""));
    expect(statuses).toEqual(["running", "waiting", "pending", "running", "completed"]);
    const waitEvent = events.find((e) => e.type === "status" && e.status === "waiting");
    expect(waitEvent).toMatchObject({ waiting: { name: "approval", tool: "send_email" } });
    expect(events.find((e) => e.type === "status" && e.status === "pending")).toMatchObject({ signal: "approval" });
    // Each tool call and result once, the results after the wait.
    expect(events.filter((e) => e.type === "tool_call")).toHaveLength(2);
    expect(events.filter((e) => e.type === "tool_result").map((e) => (e.type === "tool_result" ? e.name : ""))).toEqual(["lookup", "send_email"]);
    // Taken once: a second approval is refused.
    await expect(handle.approve()).rejects.toBeInstanceOf(NotWaitingError);
  });

  it("a conversation in memory keeps every message once, those before the wait included", async () => {
    await h.worker({ tools, queues: ["hitl-memory"] });
    const client = h.client();
    const conversationId = `hitl-${Date.now()}`;
    const handle = await client.submit(mailer, "tell the ceo", { queue: "hitl-memory", metadata: { memory: { conversationId } } });
    await waitFor(async () => (await handle.status()).status === "WAITING");
    await handle.approve();
    await handle.result({ timeoutMs: 10_000 });
    const messages = await client.conversations.get(conversationId).messages();
    expect(messages.map((m) => (m.role === "tool" ? `tool ${m.name}` : m.role))).toEqual(["user", "assistant", "tool lookup", "tool send_email", "assistant"]);
  });

  it("a rejection does not run the tool; the model is told why and the run goes on", async () => {
    await h.worker({ tools, queues: ["hitl-reject"] });
    const handle = await h.client().submit(mailer, "tell the ceo", { queue: "hitl-reject" });
    await waitFor(async () => (await handle.status()).status === "WAITING");
    const before = sent.length;
    await handle.reject("not during the holidays");
    const result = await handle.result({ timeoutMs: 10_000 });
    expect(result.text).toContain("send_email returned not run: rejected: not during the holidays.");
    expect(sent.length).toBe(before);
  });

  it("waitForSignal returns the signal's payload; a wrong signal name is refused with the one it waits for", async () => {
    await h.worker({ tools, queues: ["hitl-signal"] });
    const agent = scripted("asker", { toolCalls: [{ name: "ask", args: { question: "which colour?", timeoutMs: 60_000 } }] }, { tools: ["ask"] });
    const handle = await h.client().submit(agent, "paint", { queue: "hitl-signal" });
    const record = await waitFor(async () => {
      const s = await handle.status();
      return s.status === "WAITING" ? s : undefined;
    });
    expect(record.waiting).toMatchObject({ name: "answer", kind: "signal", request: { question: "which colour?" }, timeoutMs: 60_000, onTimeout: "continue" });
    expect(record.waiting?.timeoutAt).toBeGreaterThan(Date.now() - 1_000);
    const wrong = await handle.signal("approval", true).catch((err: unknown) => err);
    expect(wrong).toBeInstanceOf(NotWaitingError);
    expect(wrong).toMatchObject({ code: ErrorCodes.NOT_WAITING, waitingFor: "answer" });
    await handle.signal("answer", "blue");
    expect((await handle.result({ timeoutMs: 10_000 })).text).toBe('ask returned {"answer":"blue"}. Echo: paint');
  });

  it("a wait that times out carries on (onTimeout continue) or fails the task SIGNAL_TIMEOUT (onTimeout fail)", async () => {
    const strict = defineTool({
      name: "strict",
      description: "needs approval within 300 ms",
      inputSchema: z.object({}),
      approval: { timeoutMs: 300 },
      execute: () => "ran",
    });
    await h.worker({ tools: [...tools, strict], queues: ["hitl-timeout"] });
    const client = h.client();
    const asker = await client.submit(scripted("asker", { toolCalls: [{ name: "ask", args: { question: "?", timeoutMs: 300 } }] }, { tools: ["ask"] }), "q", {
      queue: "hitl-timeout",
    });
    const gated = await client.submit(scripted("gated", { toolCalls: [{ name: "strict", args: {} }] }, { tools: ["strict"] }), "go", { queue: "hitl-timeout" });
    expect((await asker.result({ timeoutMs: 10_000 })).text).toBe("ask returned nobody answered. Echo: q");
    await expect(gated.result({ timeoutMs: 10_000 })).rejects.toMatchObject({ taskError: { code: ErrorCodes.SIGNAL_TIMEOUT } });
    // Too late: the task no longer waits.
    await expect(gated.approve()).rejects.toBeInstanceOf(NotWaitingError);
  });

  it("a WAITING task is cancelled at once, and a signal to a task that never waited is refused", async () => {
    await h.worker({ tools, queues: ["hitl-cancel"] });
    const client = h.client();
    const handle = await client.submit(mailer, "x", { queue: "hitl-cancel" });
    await waitFor(async () => (await handle.status()).status === "WAITING");
    expect(await handle.cancel("changed my mind")).toMatchObject({ outcome: "cancelled", status: "CANCELLED" });
    await expect(handle.approve()).rejects.toMatchObject({ code: ErrorCodes.NOT_WAITING, status: "CANCELLED" });
    const done = await client.submit(scripted("plain"), "y", { queue: "hitl-cancel" });
    await done.result({ timeoutMs: 10_000 });
    await expect(done.signal("approval")).rejects.toMatchObject({ code: ErrorCodes.NOT_WAITING, status: "COMPLETED" });
    await expect(done.signal("bad name!")).rejects.toMatchObject({ code: ErrorCodes.VALIDATION });
  });
});

describe("a rate limit that releases the slot", () => {
  const h = useFlotilla("hitl-rl");

  it("a model turn that would wait longer than releaseSlotAfterMs frees its worker: WAITING (rate-limit), back by itself when the limit grants", async () => {
    await h.worker({
      queues: ["hitl-rl"],
      concurrency: 1,
      rateLimits: [{ name: "slow-llm", requestsPerMinute: 120, requestBurst: 1, releaseSlotAfterMs: 50 }],
    });
    const client = h.client();
    const limited = scripted("limited", {}, { tools: [] });
    const agent = { ...limited.toJSON(), rateLimit: "slow-llm" };
    const handles = await client.submitMany(["a", "b", "c"].map((input) => ({ agent, input, options: { queue: "hitl-rl", detailed: true } })));
    const plain = await client.submit(scripted("plain"), "p", { queue: "hitl-rl" });
    expect((await Promise.all(handles.map((x) => x.result({ timeoutMs: 15_000 })))).map((r) => r.text)).toEqual(["Echo: a", "Echo: b", "Echo: c"]);
    await plain.result({ timeoutMs: 15_000 });
    // The one worker slot was free while they waited: the plain task, queued behind them, ended first.
    const ended = await Promise.all(handles.map(async (x) => (await x.status()).completedAt!));
    expect((await plain.status()).completedAt!).toBeLessThan(Math.max(...ended));
    const waits = (await Promise.all(handles.map((x) => h.events(x.taskId)))).flat().filter((e) => e.type === "status" && e.status === "waiting");
    expect(waits.length).toBeGreaterThan(0);
    expect(waits[0]).toMatchObject({ waiting: { name: "rate-limit:slow-llm", kind: "rate-limit", onTimeout: "continue" } });
  });
});
