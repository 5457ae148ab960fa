// What a run's tools and model decide about their task, end to end: a real Worker on Redis, the
// client reading the task's record and stream.
// @single: what tools decide about their task; the stream path runs on the cluster in client.test.ts
import { UnrecoverableError as AgentUnrecoverableError, defineTool, type LanguageModel } from "@flotilla/agent";
import { UnrecoverableError as CoreUnrecoverableError, type JsonValue } from "@flotilla/core";
import { collect, scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { UnrecoverableError } from "../src/index.ts";

/** Submit options that would retry a retryable failure at once, twice. */
const retrying = { maxRetries: 2, backoff: { delayMs: 0 } };

describe("tool and model outcomes through a worker", () => {
  const h = useFlotilla("tool-outcomes");

  it("exports @flotilla/core's UnrecoverableError from @flotilla/worker and @flotilla/agent", () => {
    expect(UnrecoverableError).toBe(CoreUnrecoverableError);
    expect(AgentUnrecoverableError).toBe(CoreUnrecoverableError);
  });

  it("fails the task FAILED with UNRECOVERABLE, retries left or not, when a tool throws UnrecoverableError", async () => {
    let calls = 0;
    const charge = defineTool({
      name: "charge",
      description: "charges a card",
      inputSchema: z.object({ card: z.string() }),
      execute: () => {
        calls++;
        throw new UnrecoverableError("the card was declined for good");
      },
    });
    await h.worker({ tools: { charge }, queues: ["unrecoverable"] });
    const id = await h.submit(scripted("billing", { toolCalls: [{ name: "charge", args: { card: "4242" } }] }, { tools: ["charge"] }), "pay", {
      queue: "unrecoverable",
      ...retrying,
    });
    const record = await h.until(id);
    expect(record).toMatchObject({ status: "FAILED", attempt: 1, retries: 0, error: { code: "UNRECOVERABLE", message: "the card was declined for good" } });
    expect(calls).toBe(1);
    const events = await h.events(id);
    expect(events.filter((e) => e.type === "tool_result")).toEqual([]);
    expect(events.at(-2)).toMatchObject({ type: "error", code: "UNRECOVERABLE" });
    expect(events.at(-1)).toMatchObject({ type: "status", status: "failed" });
  });

  it("hands a tool's plain error back to the model as an error result: the task completes", async () => {
    const flaky = defineTool({
      name: "flaky",
      description: "fails",
      inputSchema: z.object({}),
      execute: () => {
        throw Object.assign(new Error("the service is down"), { retryable: false });
      },
    });
    await h.worker({ tools: { flaky }, queues: ["plain-tool-error"] });
    const id = await h.submit(scripted("patient", { toolCalls: [{ name: "flaky", args: {} }] }, { tools: ["flaky"] }), "try", {
      queue: "plain-tool-error",
      ...retrying,
    });
    expect(await h.until(id)).toMatchObject({ status: "COMPLETED", attempt: 1 });
    expect((await h.events(id)).find((e) => e.type === "tool_result")).toMatchObject({ name: "flaky", result: "the service is down", isError: true });
  });

  it("does not retry a model's error thrown with retryable: false, and retries one thrown without", async () => {
    let calls = 0;
    const failing = (error: () => unknown): LanguageModel =>
      ({
        specificationVersion: "v4",
        provider: "failing",
        modelId: "m",
        supportedUrls: {},
        doGenerate: () => Promise.reject(new Error("not used")),
        doStream: async () => {
          calls++;
          throw error();
        },
      }) as unknown as LanguageModel;
    await h.worker({
      queues: ["model-final"],
      providerFactory: (model) =>
        model === "final:m"
          ? failing(() => Object.assign(new Error("the account has no credit"), { retryable: false }))
          : model === "flaky:m"
            ? failing(() => new Error("connection reset"))
            : undefined,
    });
    const final = await h.submit(scripted("broke", {}, { model: "final:m" }), "x", { queue: "model-final", ...retrying });
    expect(await h.until(final)).toMatchObject({ status: "FAILED", attempt: 1, error: { code: "MODEL_ERROR" } });
    expect(calls).toBe(1);
    calls = 0;
    const flaky = await h.submit(scripted("unlucky", {}, { model: "flaky:m" }), "x", { queue: "model-final", ...retrying });
    expect(await h.until(flaky)).toMatchObject({ status: "FAILED", attempt: 3, error: { code: "MODEL_ERROR" } });
    expect(calls).toBe(3);
  });
});

describe("tool results JSON cannot hold, through a worker", () => {
  const h = useFlotilla("tool-results-json");
  const cyclic: Record<string, unknown> = { name: "loop" };
  cyclic.self = cyclic;
  /** Tools that return what their type forbids: [name, what it returns, its tool_result as stored]. */
  const returns: Array<[string, () => unknown, { result: unknown; isError: boolean }]> = [
    ["a_function", () => () => "hi", { result: null, isError: false }],
    ["a_symbol", () => Symbol("s"), { result: null, isError: false }],
    ["a_bigint", () => 2n ** 70n, { result: "1180591620717411303424", isError: false }],
    ["undefined", () => undefined, { result: null, isError: false }],
    ["a_date", () => new Date(0), { result: "1970-01-01T00:00:00.000Z", isError: false }],
    [
      "a_mix",
      () => ({ fn: () => 1, sym: Symbol("s"), big: 1n, list: [undefined, () => 1], n: Number.NaN }),
      { result: { big: "1", list: [null, null], n: null }, isError: false },
    ],
    ["a_cycle", () => cyclic, { result: expect.stringMatching(/^\[TOOL_RESULT_INVALID\] tool "a_cycle" returned a value that is not JSON/), isError: true }],
    [
      "a_bad_tojson",
      () => ({
        toJSON: () => {
          throw new Error("cannot");
        },
      }),
      { result: expect.stringMatching(/^\[TOOL_RESULT_INVALID\] tool "a_bad_tojson" .*cannot/), isError: true },
    ],
  ];
  const tools = Object.fromEntries(
    returns.map(([name, value]) => [name, defineTool({ name, description: `returns ${name}`, inputSchema: z.object({}), execute: value as () => JsonValue })]),
  );

  it("stores every result as JSON (or a TOOL_RESULT_INVALID error result): the task completes and stream() replays every event through the terminal one", async () => {
    await h.worker({ tools, queues: ["odd-results"] });
    const agent = scripted("odd", { toolCalls: returns.map(([name]) => ({ name, args: {} })), reply: "done" }, { tools: returns.map(([name]) => name) });
    const handle = await h.client().submit(agent, "go", { queue: "odd-results", detailed: true });
    expect(await handle.result()).toMatchObject({ text: "done" });
    const events = await collect(handle.stream());
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)).toMatchObject({ type: "status", status: "completed" });
    const results = events.flatMap((e) => (e.type === "tool_result" ? [e] : []));
    expect(results).toEqual(returns.map(([name, , stored]) => expect.objectContaining({ name, ...stored })));
  });
});

describe("a tool's progress through a worker", () => {
  const h = useFlotilla("tool-progress");
  const crawl = defineTool({
    name: "crawl",
    description: "crawls pages, saying how far it got",
    inputSchema: z.object({ pages: z.number() }),
    execute: async ({ pages }, ctx) => {
      for (let done = 1; done <= pages; done++) {
        await new Promise((r) => setTimeout(r, 10));
        ctx.progress({ done, total: pages } as JsonValue);
      }
      return { crawled: pages };
    },
  });
  const crawler = () => scripted("crawler", { toolCalls: [{ name: "crawl", args: { pages: 3 } }], reply: "done" }, { tools: ["crawl"] });
  const progress = [1, 2, 3].map((done) => ({ type: "progress", toolCallId: "call_1", name: "crawl", data: { done, total: 3 } }));

  it("streams to the client live and in order, between the call's tool_call and tool_result, and replays the same", async () => {
    await h.worker({ tools: { crawl }, queues: ["progress"] });
    const handle = await h.client().submit(crawler(), "crawl", { queue: "progress", detailed: true });
    const live = await collect(handle.stream());
    const shape = (events: typeof live) =>
      events.map((e) => (e.type === "status" ? `status:${e.status}` : e.type)).filter((t, i, all) => t !== "text" || all[i - 1] !== "text");
    expect(shape(live)).toEqual([
      "status:running",
      "tool_call",
      "step",
      "progress",
      "progress",
      "progress",
      "tool_result",
      "text",
      "step",
      "usage",
      "status:completed",
    ]);
    expect(live.filter((e) => e.type === "progress")).toMatchObject(progress);
    expect(live.find((e) => e.type === "progress")).toMatchObject({ taskId: handle.taskId, attempt: 1, agent: "crawler" });
    // Read again once the task is over: the same events, from the stored stream.
    expect(await collect(handle.stream())).toEqual(live);
  });

  it("keeps progress for a task submitted with detailed: false, which drops the tool calls around it", async () => {
    await h.worker({ tools: { crawl }, queues: ["progress-summary"] });
    const handle = await h.client().submit(crawler(), "crawl", { queue: "progress-summary", detailed: false });
    const events = await collect(handle.stream());
    expect(events.map((e) => (e.type === "status" ? `status:${e.status}` : e.type)).filter((t) => t !== "text")).toEqual([
      "status:running",
      "progress",
      "progress",
      "progress",
      "status:completed",
    ]);
    expect(events.filter((e) => e.type === "progress")).toMatchObject(progress);
  });
});
