import { describe, expect, it } from "vitest";
import { type LanguageModel, ModelResolver } from "../src/model.ts";

describe("ModelResolver", () => {
  it("asks the providerFactory first, then knows scripted, OpenAI-compatible endpoints and provider packages", async () => {
    const mine = { specificationVersion: "v4", provider: "mine", modelId: "m" } as unknown as LanguageModel;
    const resolver = new ModelResolver({
      providerFactory: (model) => (model.startsWith("mine:") ? mine : undefined),
      openAICompatible: { ollama: { baseURL: "http://127.0.0.1:1/v1" } },
      env: { OPENAI_API_KEY: "sk-test", FLOTILLA_PROVIDER_VLLM_BASE_URL: "http://127.0.0.1:2/v1" },
    });
    expect(await resolver.resolve("mine:anything")).toBe(mine);
    expect(await resolver.resolve("scripted:echo")).toMatchObject({ specificationVersion: "v4", provider: "scripted", modelId: "echo" });
    expect(await resolver.resolve("ollama:llama3.2")).toMatchObject({ specificationVersion: "v4", modelId: "llama3.2" });
    expect(await resolver.resolve("vllm:qwen")).toMatchObject({ specificationVersion: "v4", modelId: "qwen" });
    expect(await resolver.resolve("openai:gpt-4.1-mini")).toMatchObject({ specificationVersion: "v4", modelId: "gpt-4.1-mini" });
  });

  it("names the model and what is missing when no rule can make it", async () => {
    const resolver = new ModelResolver({ env: {} });
    await expect(resolver.resolve("openai:gpt-4.1-mini")).rejects.toMatchObject({
      code: "UNKNOWN_PROVIDER",
      message: expect.stringMatching(/"openai:gpt-4.1-mini".*OPENAI_API_KEY/),
    });
    await expect(resolver.resolve("nowhere:big")).rejects.toMatchObject({ code: "UNKNOWN_PROVIDER", message: expect.stringMatching(/no provider "nowhere"/) });
    await expect(resolver.resolve("no-colon")).rejects.toMatchObject({ code: "UNKNOWN_PROVIDER" });
    // A provider package that is not installed on this worker.
    const missing = new ModelResolver({
      env: { DEEPSEEK_API_KEY: "k" },
      packages: { deepseek: { pkg: "@ai-sdk/deepseek", factory: "createDeepSeek", apiKey: "DEEPSEEK_API_KEY" } },
    });
    await expect(missing.resolve("deepseek:chat")).rejects.toMatchObject({ message: expect.stringMatching(/install @ai-sdk\/deepseek/) });
    // A model from an older AI SDK provider package.
    const old = new ModelResolver({ providerFactory: () => ({ specificationVersion: "v2" }) as unknown as LanguageModel });
    await expect(old.resolve("x:y")).rejects.toMatchObject({ message: expect.stringMatching(/"v2".*"v4"/) });
  });
});
