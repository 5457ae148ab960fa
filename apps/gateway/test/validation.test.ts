// Bad requests: a 400 naming the field (the same ValidationError the client throws), a 413 for a body
// over the limit, JSON errors for each — never a 500.
// @single: requests refused before any Redis command
import { request } from "node:http";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
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

  it("a client that streams a 10 MB body and reads the answer once it has sent it all gets the 413 (6 times in 6, chunked too)", async () => {
    const { url } = await gateways.start();
    const { port } = new URL(url);
    // What node:http callers (and SDKs built on it) do: pipe the body in, then read the response.
    const send = async (chunked: boolean): Promise<string> => {
      const total = 10 * 1024 * 1024;
      const chunk = Buffer.alloc(64 * 1024, "x");
      const headers: Record<string, string | number> = { "content-type": "application/json", ...(!chunked && { "content-length": total }) };
      const req = request({ host: "127.0.0.1", port, method: "POST", path: "/v1/tasks", headers });
      const answer = new Promise<string>((resolve, reject) => {
        req.on("response", (res) => {
          let text = "";
          res.setEncoding("utf8").on("data", (d: string) => {
            text += d;
          });
          res.on("end", () => resolve(`${res.statusCode} ${(JSON.parse(text) as { error: { code: string } }).error.code}`));
        });
        req.on("error", reject);
      });
      try {
        await pipeline(
          Readable.from(
            (function* () {
              for (let sent = 0; sent < total; sent += chunk.length) yield chunk;
            })(),
          ),
          req,
        );
      } catch (err) {
        return `sending failed: ${(err as NodeJS.ErrnoException).code}`;
      }
      return answer;
    };
    const outcomes: string[] = [];
    for (let i = 0; i < 6; i++) outcomes.push(await send(i % 2 === 1));
    expect(outcomes).toEqual(Array(6).fill("413 PAYLOAD_TOO_LARGE"));
  });

  it("an unknown route is a 404 JSON error; a task id's slash sent unencoded is told how to send it", async () => {
    const { url } = await gateways.start();
    const res = await fetch(`${url}/v1/nothing`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "NOT_FOUND" } });
    // A task id's slash not encoded: the answer says how to send it.
    for (const [path, meant] of [
      ["/v1/tasks/default/x", "/v1/tasks/default%2Fx"],
      ["/v1/tasks/default/x/events", "/v1/tasks/default%2Fx/events"],
    ]) {
      const res = await fetch(`${url}${path}`);
      expect(res.status).toBe(404);
      const { error } = (await res.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe("NOT_FOUND");
      expect(error.message).toContain(`a task id's "/" is sent as %2F (${meant})`);
    }
  });
});
