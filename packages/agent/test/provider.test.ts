// The agent runtime against a real OpenAI-compatible endpoint: a local chat-completions server
// (@flotilla/testing), reached through @ai-sdk/openai-compatible as a worker would reach vLLM or Ollama.
import type { AgentSpec } from "@flotilla/core";
import { startOpenAIServer } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent } from "../src/agent.ts";
import { ModelResolver } from "../src/model.ts";
import { run } from "../src/run.ts";
import { modelTurn } from "../src/turn.ts";
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
  const turn = async (maxRetryAfterMs?: number) => {
    const model = await models.resolve("local:m");
    const t = modelTurn({ model, agent: spec, messages: [{ role: "user", content: "hi" }], tools: [], signal: new AbortController().signal, maxRetryAfterMs });
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
});
