import { APICallError, type LanguageModelV4CallOptions, type LanguageModelV4FunctionTool, type LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { type AgentSpec, FlotillaError, type JsonValue, UnrecoverableError, ValidationError } from "@flotilla/core";
import type { AgentEvent } from "@flotilla/events";
import { describe, expect, it } from "vitest";
import type { LanguageModel } from "../src/model.ts";
import { modelTurn, type TurnRequest } from "../src/turn.ts";

const spec = (options: Record<string, JsonValue> = {}, extra: Partial<AgentSpec> = {}): AgentSpec => ({
  kind: "agent",
  name: "a",
  model: "test:x",
  instructions: "be brief",
  tools: [],
  options,
  ...extra,
});

const finish = (input: number | undefined, output: number | undefined, reason = "stop"): LanguageModelV4StreamPart =>
  ({
    type: "finish",
    finishReason: { unified: reason, raw: reason },
    usage: { inputTokens: { total: input }, outputTokens: { total: output } },
  }) as unknown as LanguageModelV4StreamPart;

const apiError = (statusCode: number, isRetryable: boolean) =>
  new APICallError({ message: `status ${statusCode}`, url: "http://model.invalid/v1", requestBodyValues: {}, statusCode, isRetryable });

/**
 * A model for one test: each call plays the next script (the last repeats): stream parts, or a
 * value to throw before streaming. Records the options of every call and when it came.
 */
function model(...scripts: Array<LanguageModelV4StreamPart[] | { throws: unknown }>) {
  const calls: Array<{ options: LanguageModelV4CallOptions; at: number }> = [];
  const m = {
    specificationVersion: "v4",
    provider: "test",
    modelId: "x",
    supportedUrls: {},
    async doGenerate() {
      throw new Error("not used");
    },
    async doStream(options: LanguageModelV4CallOptions) {
      const script = scripts[Math.min(calls.length, scripts.length - 1)]!;
      calls.push({ options, at: performance.now() });
      if ("throws" in script) throw script.throws;
      return {
        stream: new ReadableStream<LanguageModelV4StreamPart>({
          start(c) {
            for (const part of script) c.enqueue(part);
            c.close();
          },
        }),
      };
    },
  } as unknown as LanguageModel;
  return { model: m, calls };
}

async function run(request: Partial<TurnRequest> & Pick<TurnRequest, "model">) {
  const events: AgentEvent[] = [];
  const turn = modelTurn({ agent: spec(), messages: [{ role: "user", content: "hi" }], tools: [], signal: new AbortController().signal, ...request });
  for (;;) {
    const next = await turn.next();
    if (next.done) return { events, result: next.value };
    events.push(next.value);
  }
}

describe("modelTurn", () => {
  it("streams text and tool calls, and returns them with the usage and finish reason", async () => {
    const { model: m } = model([
      { type: "text-delta", id: "t", delta: "Hel" },
      { type: "text-delta", id: "t", delta: "" },
      { type: "text-delta", id: "t", delta: "lo" },
      { type: "tool-call", toolCallId: "c1", toolName: "look", input: '{"q":1}' },
      finish(3, 4, "tool-calls"),
    ] as LanguageModelV4StreamPart[]);
    const { events, result } = await run({ model: m });
    expect(events).toEqual([
      { type: "text", delta: "Hel" },
      { type: "text", delta: "lo" },
      { type: "tool_call", toolCallId: "c1", name: "look", args: { q: 1 } },
    ]);
    expect(result).toEqual({
      text: "Hello",
      toolCalls: [{ toolCallId: "c1", name: "look", args: { q: 1 } }],
      usage: { inputTokens: 3, outputTokens: 4, totalTokens: 7 },
      finishReason: "tool-calls",
    });
  });

  it("counts missing usage as 0, and says stop with no usage when the model sends no finish", async () => {
    expect((await run({ model: model([finish(undefined, 5)]).model })).result.usage).toEqual({ inputTokens: 0, outputTokens: 5, totalTokens: 5 });
    expect((await run({ model: model([finish(2, undefined)]).model })).result.usage).toEqual({ inputTokens: 2, outputTokens: 0, totalTokens: 2 });
    expect((await run({ model: model([]).model })).result).toEqual({
      text: "",
      toolCalls: [],
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      finishReason: "stop",
    });
  });

  it("passes numeric options as settings, object options as provider options, and tools and an output schema when there are", async () => {
    const { model: m, calls } = model([finish(1, 1)]);
    const tools: LanguageModelV4FunctionTool[] = [{ type: "function", name: "look", inputSchema: { type: "object" } }];
    const agent = spec(
      { temperature: 0.2, seed: 7, topK: "high", maxSteps: 3, openai: { user: "u" } },
      { outputSchema: { $schema: "http://json-schema.org/draft-07/schema#", type: "object" } },
    );
    await run({ model: m, agent, tools });
    expect(calls[0]!.options).toMatchObject({
      temperature: 0.2,
      seed: 7,
      tools,
      toolChoice: { type: "auto" },
      responseFormat: { type: "json", schema: { type: "object" } },
      providerOptions: { openai: { user: "u" } },
    });
    // The schema goes as tools' schemas do: without `$schema`.
    expect((calls[0]!.options.responseFormat as { schema: object }).schema).toEqual({ type: "object" });
    expect(calls[0]!.options).not.toHaveProperty("topK");
    expect(calls[0]!.options.providerOptions).not.toHaveProperty("maxSteps");
    const bare = model([finish(1, 1)]);
    await run({ model: bare.model });
    expect(bare.calls[0]!.options).not.toHaveProperty("tools");
    expect(bare.calls[0]!.options).not.toHaveProperty("toolChoice");
    expect(bare.calls[0]!.options).not.toHaveProperty("responseFormat");
  });

  it("retries a retryable provider error that came before any output, backing off, up to maxRetries", async () => {
    const { model: m, calls } = model({ throws: apiError(503, true) });
    const failed = run({ model: m }).catch((e: unknown) => e);
    const err = (await failed) as FlotillaError;
    expect(err).toBeInstanceOf(FlotillaError);
    expect(err).toMatchObject({ code: "MODEL_ERROR", details: { statusCode: 503, url: "http://model.invalid/v1" } });
    expect(err.retryable).toBeUndefined(); // the code decides: MODEL_ERROR is retryable
    expect(err.message).toContain("HTTP 503");
    expect(err.cause).toBeInstanceOf(APICallError);
    // 1 call + 2 retries (the default), 500 ms then 1 s apart (timers never fire early).
    expect(calls).toHaveLength(3);
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(490);
    expect(calls[2]!.at - calls[1]!.at).toBeGreaterThanOrEqual(990);
    const once = model({ throws: apiError(503, true) }, [finish(1, 1)]);
    expect((await run({ model: once.model, maxRetries: 1 })).result.finishReason).toBe("stop");
    expect(once.calls).toHaveLength(2);
  });

  it("does not retry an error the provider calls final, nor one that came after output", async () => {
    const final = model({ throws: apiError(400, false) }, [finish(1, 1)]);
    await expect(run({ model: final.model })).rejects.toMatchObject({ code: "MODEL_ERROR", retryable: false });
    expect(final.calls).toHaveLength(1);
    const late = model(
      [
        { type: "text-delta", id: "t", delta: "x" },
        { type: "error", error: apiError(503, true) },
      ] as LanguageModelV4StreamPart[],
      [finish(1, 1)],
    );
    await expect(run({ model: late.model })).rejects.toMatchObject({ code: "MODEL_ERROR" });
    expect(late.calls).toHaveLength(1);
    const afterCall = model(
      [
        { type: "tool-call", toolCallId: "c", toolName: "t", input: "{}" },
        { type: "error", error: apiError(503, true) },
      ] as LanguageModelV4StreamPart[],
      [finish(1, 1)],
    );
    await expect(run({ model: afterCall.model })).rejects.toMatchObject({ code: "MODEL_ERROR" });
    expect(afterCall.calls).toHaveLength(1);
  });

  it("makes any other failure a MODEL_ERROR, and lets our own errors through as they are", async () => {
    const hangUp = new Error("socket hang up");
    await expect(run({ model: model({ throws: hangUp }).model })).rejects.toMatchObject({
      code: "MODEL_ERROR",
      message: "model call failed: socket hang up",
      cause: hangUp,
    });
    await expect(run({ model: model({ throws: "just a string" }).model })).rejects.toMatchObject({
      code: "MODEL_ERROR",
      message: expect.stringContaining("just a string"),
    });
    const ours = ValidationError.of("agent", "tools", "nope");
    await expect(run({ model: model({ throws: ours }).model })).rejects.toBe(ours);
    expect(((await run({ model: model({ throws: hangUp }).model }).catch((e: unknown) => e)) as FlotillaError).retryable).toBeUndefined();
    // An API error without a status says no HTTP status.
    const noStatus = new APICallError({ message: "reset", url: "u", requestBodyValues: {}, isRetryable: false });
    const err = (await run({ model: model({ throws: noStatus }).model }).catch((e: unknown) => e)) as Error;
    expect(err.message).not.toContain("HTTP");
  });

  it("keeps the retryable flag the thrower gave a plain error, and a FlotillaError's code and flag, also one from another copy of core", async () => {
    const final = Object.assign(new Error("quota gone for the month"), { retryable: false });
    const once = model({ throws: final }, [finish(1, 1)]);
    await expect(run({ model: once.model })).rejects.toMatchObject({ code: "MODEL_ERROR", retryable: false, cause: final });
    expect(once.calls).toHaveLength(1);
    // Thrown mid-stream, or as a bare object, it is kept too.
    const inStream = model([{ type: "error", error: final }] as LanguageModelV4StreamPart[]);
    await expect(run({ model: inStream.model })).rejects.toMatchObject({ code: "MODEL_ERROR", retryable: false });
    await expect(run({ model: model({ throws: { reason: "no", retryable: false } }).model })).rejects.toMatchObject({ code: "MODEL_ERROR", retryable: false });
    const unrecoverable = new UnrecoverableError("this prompt is refused for good", "REFUSED");
    await expect(run({ model: model({ throws: unrecoverable }).model })).rejects.toBe(unrecoverable);
    // A FlotillaError of another copy of @flotilla/core (a bundled provider) passes as it is: `instanceof` misses it.
    const foreign = Object.assign(new Error("over budget"), {
      code: "BUDGET",
      retryable: false,
      toTaskError: () => ({ code: "BUDGET", message: "over budget" }),
    });
    await expect(run({ model: model({ throws: foreign }).model })).rejects.toBe(foreign);
  });

  it("ends with the signal's reason when aborted, mid-stream, at the stream's end or before a retry", async () => {
    const reason = new Error("stop now");
    // The stream sends "a", then `rest`, and ends; the caller aborts on seeing "a".
    for (const rest of [[{ type: "text-delta", id: "t", delta: "b" }], []] as LanguageModelV4StreamPart[][]) {
      const controller = new AbortController();
      const parts = [{ type: "text-delta", id: "t", delta: "a" }, ...rest] as LanguageModelV4StreamPart[];
      const events: AgentEvent[] = [];
      const turn = modelTurn({ agent: spec(), messages: [{ role: "user", content: "hi" }], tools: [], signal: controller.signal, model: model(parts).model });
      const ended = (async () => {
        for (let next = await turn.next(); !next.done; next = await turn.next()) {
          events.push(next.value);
          controller.abort(reason);
        }
      })();
      await expect(ended).rejects.toBe(reason);
      expect(events).toEqual([{ type: "text", delta: "a" }]); // nothing after the abort
    }
    const early = new AbortController();
    const retrying = model({ throws: apiError(503, true) });
    const failed = run({ model: retrying.model, signal: early.signal });
    setTimeout(() => early.abort(reason), 100);
    await expect(failed).rejects.toBe(reason);
    expect(retrying.calls).toHaveLength(1);
  });
});
