// The agent runtime against a real OpenAI-compatible endpoint: a local chat-completions server
// (@flotilla/testing), reached through @ai-sdk/openai-compatible as a worker would reach vLLM or Ollama.

import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { AgentSpec } from "@flotilla/core";
import { startOpenAIServer } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent } from "../src/agent.ts";
import { ModelResolver } from "../src/model.ts";
import { run } from "../src/run.ts";
import { modelTurn, type TurnRequest } from "../src/turn.ts";
import { drain } from "./fixtures/drain.ts";

const server = await startOpenAIServer();
afterAll(() => server.close());

const models = new ModelResolver({ openAICompatible: { local: { baseURL: server.baseURL } }, env: {} });
/** The requests the server got from here on. */
const mark = () => {
  const first = server.requests.length;
  return () => server.requests.slice(first);
};

describe("structured output on an OpenAI-compatible endpoint", () => {
  const typed = (options: Record<string, never> | Record<string, Record<string, boolean>> = {}) =>
    new Agent({ name: "typed", model: "local:m", outputSchema: z.object({ coat: z.boolean(), city: z.string() }), options });

  it("sends the output schema as a strict json_schema response format, and checks the answer against it", async () => {
    const sent = mark();
    server.reply({ text: '{"coat":true,"city":"Oslo"}' });
    const { result } = await drain(run.stream(typed(), "Oslo in January?", { models }));
    expect(result.output).toEqual({ coat: true, city: "Oslo" });
    const format = sent()[0]!.body.response_format as { type: string; json_schema: { name: string; strict: boolean; schema: Record<string, unknown> } };
    expect(format).toMatchObject({
      type: "json_schema",
      json_schema: {
        name: "response",
        strict: true,
        schema: {
          type: "object",
          properties: { coat: { type: "boolean" }, city: { type: "string" } },
          required: ["coat", "city"],
          additionalProperties: false,
        },
      },
    });
    expect(format.json_schema.schema).not.toHaveProperty("$schema");
  });

  it("lets an agent turn strict decoding off through its provider options", async () => {
    const sent = mark();
    server.reply({ text: '{"coat":false,"city":"Rome"}' });
    await drain(run.stream(typed({ local: { strictJsonSchema: false } }), "Rome?", { models }));
    expect(sent()[0]!.body.response_format).toMatchObject({ type: "json_schema", json_schema: { strict: false } });
  });

  it("asks only for a JSON object from an endpoint configured without structured outputs, by option or environment", async () => {
    const plain = [
      new ModelResolver({ openAICompatible: { local: { baseURL: server.baseURL, structuredOutputs: false } }, env: {} }),
      new ModelResolver({ env: { FLOTILLA_PROVIDER_LOCAL_BASE_URL: server.baseURL, FLOTILLA_PROVIDER_LOCAL_STRUCTURED_OUTPUTS: "false" } }),
    ];
    for (const resolver of plain) {
      const sent = mark();
      server.reply({ text: '{"coat":true,"city":"Oslo"}' });
      await drain(run.stream(typed(), "Oslo?", { models: resolver }));
      expect(sent()[0]!.body.response_format).toEqual({ type: "json_object" });
    }
    // Configured through the environment and left on, it sends the schema.
    const sent = mark();
    server.reply({ text: '{"coat":true,"city":"Oslo"}' });
    await drain(run.stream(typed(), "Oslo?", { models: new ModelResolver({ env: { FLOTILLA_PROVIDER_LOCAL_BASE_URL: server.baseURL } }) }));
    expect(sent()[0]!.body.response_format).toMatchObject({ type: "json_schema" });
  });

  it("sends no response format for an agent without an output schema", async () => {
    const sent = mark();
    await drain(run.stream(new Agent({ name: "free", model: "local:m" }), "hi", { models }));
    expect(sent()[0]!.body).not.toHaveProperty("response_format");
  });
});

describe("a provider's Retry-After on a 429", () => {
  const spec: AgentSpec = { kind: "agent", name: "a", model: "local:m", instructions: "", tools: [], options: {} };
  const turn = async (maxRetryAfterMs?: number, more: Partial<TurnRequest> = {}) => {
    const model = more.model ?? (await models.resolve("local:m"));
    const t = modelTurn({
      model,
      agent: spec,
      messages: [{ role: "user", content: "hi" }],
      tools: [],
      signal: new AbortController().signal,
      maxRetryAfterMs,
      ...more,
    });
    for (let next = await t.next(); ; next = await t.next()) if (next.done) return next.value;
  };
  const limited = (headers: Record<string, string>) => ({ status: 429, message: "rate limited", headers });

  it("is waited for before the turn retries (its own backoff would retry after 500 ms)", async () => {
    const sent = mark();
    server.reply(limited({ "retry-after": "2" }), { text: "at last" });
    expect((await turn()).text).toBe("at last");
    const [first, retry] = sent();
    // Timers never fire early: the retry cannot come sooner than asked.
    expect(retry!.at - first!.at).toBeGreaterThanOrEqual(1990);
  });

  it("prefers retry-after-ms, and waits no longer than maxRetryAfterMs for a longer ask", async () => {
    const sent = mark();
    server.reply(limited({ "retry-after-ms": "1200", "retry-after": "3600" }), { text: "ms" });
    expect((await turn()).text).toBe("ms");
    const [a, b] = sent();
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(1190);
    // Well under the one hour retry-after asks, and under the 60 s cap: retry-after-ms decided.
    expect(b!.at - a!.at).toBeLessThan(30_000);

    const capped = mark();
    server.reply(limited({ "retry-after": "3600" }), { text: "capped" });
    expect((await turn(300)).text).toBe("capped");
    const [c, d] = capped();
    expect(d!.at - c!.at).toBeGreaterThanOrEqual(290);
    expect(d!.at - c!.at).toBeLessThan(30_000);
  });

  it("pauses the fleet as the 429's headers arrive, before its body, once; a pause holds each request up to the moment it leaves", async () => {
    const sent = mark();
    // The body comes 500 ms after the headers (a proxy that flushes headers first).
    server.reply({ ...limited({ "retry-after": "1" }), bodyDelayMs: 500 }, { text: "after" });
    const told: Array<{ ms: number; at: number }> = [];
    let holds = 0;
    const start = performance.now();
    const result = await turn(undefined, {
      onRetryAfter: async (ms) => void told.push({ ms, at: performance.now() }),
      beforeSend: async () => {
        holds++;
        await new Promise((r) => setTimeout(r, 200));
      },
    });
    expect(result.text).toBe("after");
    const [first, retry] = sent();
    await first!.done;
    const bodyEndedAt = performance.now();
    expect(told).toHaveLength(1);
    expect(told[0]!.ms).toBe(1000);
    // Told while the body was still on its way: the body's 500 ms are still ahead of it.
    expect(first!.at + 500 - told[0]!.at).toBeGreaterThan(0);
    expect(told[0]!.at).toBeLessThan(bodyEndedAt);
    // Each request was held by beforeSend before it left.
    expect(holds).toBe(2);
    expect(first!.at - start).toBeGreaterThanOrEqual(190);
    expect(retry!.at - told[0]!.at).toBeGreaterThanOrEqual(990 + 190);
  });

  it("pauses the fleet once from the error when the provider does not send through providerFetch, and when the turn gives up", async () => {
    const own = createOpenAICompatible({ name: "own", baseURL: server.baseURL }).chatModel("m");
    const told: number[] = [];
    const onRetryAfter = async (ms: number) => void told.push(ms);
    server.reply(limited({ "retry-after": "1" }), { text: "own" });
    expect((await turn(undefined, { model: own, onRetryAfter })).text).toBe("own");
    expect(told).toEqual([1000]);
    // No retries left: the turn fails, and the fleet still backs off.
    server.reply(limited({ "retry-after": "2" }));
    await expect(turn(undefined, { maxRetries: 0, onRetryAfter })).rejects.toMatchObject({ code: "MODEL_ERROR" });
    expect(told).toEqual([1000, 2000]);
  });
});
