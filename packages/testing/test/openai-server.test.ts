import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OpenAIServer, startOpenAIServer } from "../src/index.ts";

describe("startOpenAIServer", () => {
  let server: OpenAIServer;
  beforeAll(async () => {
    server = await startOpenAIServer();
  });
  afterAll(() => server.close());

  const post = (body: unknown) =>
    fetch(`${server.baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });

  it("answers queued replies in order, then the fallback, and records the requests", async () => {
    server.reply({ text: "first" }, { status: 429, message: "slow down", headers: { "retry-after": "7" } });
    const messages = [{ role: "user", content: "hi" }];
    const first = (await (await post({ model: "m", messages })).json()) as { choices: Array<{ message: { content: string } }> };
    expect(first.choices[0]!.message.content).toBe("first");
    const limited = await post({ model: "m", messages });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("7");
    const streamed = await (await post({ model: "m", messages, stream: true })).text();
    expect(streamed).toContain('"content":"ok"');
    expect(streamed.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(server.requests.map((r) => r.body.stream ?? false)).toEqual([false, false, true]);
    // Each request says when it came, in order.
    const times = server.requests.map((r) => r.at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(times[0]).toBeGreaterThan(0);
  });

  it("answers 400 to a body that is not JSON, and keeps serving", async () => {
    expect((await post("{nope")).status).toBe(400);
    expect((await post({ model: "m", messages: [] })).status).toBe(200);
  });
});
