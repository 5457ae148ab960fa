// Bad requests: a 400 naming the field (the same ValidationError the client throws), a 413 for a body
// over the limit, JSON errors for each — never a 500.
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { jsonHeaders, submitBody, taskPath, useGateway } from "./support.ts";

describe("gateway validation", () => {
  const env = useFlotilla("gateway-validation");
  const gateways = useGateway(env);

  const post = (url: string, path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, { method: "POST", headers: { ...jsonHeaders(), ...headers }, body });

  async function expectField(res: Response, field: string): Promise<void> {
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: "VALIDATION_ERROR", field } });
  }

  it("a bad submit body is a 400 naming the field", async () => {
    const { url } = await gateways.start();
    const agent = scripted("v").toJSON() as Record<string, unknown>;
    await expectField(await post(url, "/v1/tasks", JSON.stringify({ agent: { name: "v" }, input: "x" })), "agent.model");
    await expectField(await post(url, "/v1/tasks", JSON.stringify({ agent: { ...agent, model: "no-provider" }, input: "x" })), "agent.model");
    await expectField(await post(url, "/v1/tasks", submitBody(scripted("v"), "x", { queue: "bad queue" })), "options.queue");
    await expectField(await post(url, "/v1/tasks", submitBody(scripted("v"), "x", { maxRetries: -1 })), "options.maxRetries");
    await expectField(await post(url, "/v1/tasks", JSON.stringify({ agent, input: "x", extra: 1 })), "extra");
    await expectField(await post(url, "/v1/tasks", submitBody(scripted("v"), "x", { bogus: true })), "options.bogus");
    await expectField(await post(url, "/v1/tasks", JSON.stringify({ agent })), "input");
    await expectField(await post(url, "/v1/tasks", "{ not json"), "body");
    // Checked by the client behind the schema (nothing is written): the same shape.
    const big = await post(url, "/v1/tasks", submitBody(scripted("v"), "x".repeat(1_050_000)));
    expect(big.status).toBe(400);
    expect(await big.json()).toMatchObject({ error: { code: "VALIDATION_ERROR", field: "input" } });
    // Nested deeper than the client allows (written by hand: JSON.stringify would overflow here too): refused
    // before any schema recurses into it.
    await expectField(await post(url, "/v1/tasks", `{"agent":${JSON.stringify(agent)},"input":${"[".repeat(5000)}${"]".repeat(5000)}}`), "body");
    await expectField(await post(url, "/v1/tasks", submitBody(scripted("v"), "x"), { "Idempotency-Key": "" }), "idempotency-key");
  });

  it("bad path, query and signal fields are 400s naming them", async () => {
    const { url } = await gateways.start();
    await expectField(await fetch(`${url}/v1/tasks/not-a-task-id`), "id");
    await expectField(await fetch(`${url}${taskPath("val/x", "/result")}?timeoutMs=abc`), "timeoutMs");
    await expectField(await fetch(`${url}${taskPath("val/x", "/result")}?timeoutMs=999999999`), "timeoutMs");
    await expectField(await fetch(`${url}/v1/tasks?status=DONE`), "status");
    await expectField(await fetch(`${url}/v1/tasks?limit=0`), "limit");
    await expectField(await post(url, taskPath("val/x", "/signal"), JSON.stringify({ name: "has space" })), "name");
    await expectField(await fetch(`${url}${taskPath("val/x", "/events")}`, { headers: { "Last-Event-ID": "abc" } }), "last-event-id");
  });

  it("a 10 MB body is a 413 with a JSON error", async () => {
    const { url } = await gateways.start();
    const body = submitBody(scripted("v"), "x".repeat(10 * 1024 * 1024));
    const res = await post(url, "/v1/tasks", body);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: { code: "PAYLOAD_TOO_LARGE" } });
    // The limit is an option.
    const small = await gateways.start({ bodyLimitBytes: 1000 });
    expect((await post(small.url, "/v1/tasks", submitBody(scripted("v"), "x".repeat(2000)))).status).toBe(413);
  });

  it("an unknown route is a 404 JSON error", async () => {
    const { url } = await gateways.start();
    const res = await fetch(`${url}/v1/nothing`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "NOT_FOUND" } });
  });
});
