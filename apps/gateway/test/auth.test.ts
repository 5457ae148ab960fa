// Bearer tokens: 401 without one or with an unknown one, 403 for a role or queue the token lacks,
// JSON errors throughout; the operational endpoints answer without a token.
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { jsonHeaders, submitBody, taskPath, useGateway } from "./support.ts";

const READ = "read-token-0123456789";
const SUBMIT_A = "submit-a-token-0123456789";
const ADMIN = "admin-token-0123456789";

describe("gateway authentication", () => {
  const env = useFlotilla("gateway-auth");
  const gateways = useGateway(env);
  const tokens = [
    { token: READ, role: "read" as const },
    { token: SUBMIT_A, role: "submit" as const, queues: ["auth-a"] },
    { token: ADMIN, role: "admin" as const, queues: "*" as const },
  ];

  const call = (url: string, path: string, token: string | undefined, init: RequestInit = {}) =>
    fetch(`${url}${path}`, { ...init, headers: { ...jsonHeaders(token), ...(init.headers as Record<string, string>) } });
  const submitTo = (queue: string) => ({ method: "POST", body: submitBody(scripted("auth"), "hi", { queue }) });

  it("applies the matrix: 401 without or with an unknown token, 403 for a role or queue it lacks, else through", async () => {
    const { url } = await gateways.start({ tokens });

    const none = await call(url, "/v1/queues", undefined);
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await none.json()).toMatchObject({ error: { code: "UNAUTHORIZED" } });
    const unknown = await call(url, "/v1/queues", "not-a-configured-token");
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ error: { code: "UNAUTHORIZED", message: "unknown token" } });
    // Not even a submit that would fail validation gets past a missing token.
    expect((await call(url, "/v1/tasks", undefined, { method: "POST", body: "{}" })).status).toBe(401);

    // read: GETs only.
    expect((await call(url, "/v1/queues", READ)).status).toBe(200);
    const readSubmit = await call(url, "/v1/tasks", READ, submitTo("auth-a"));
    expect(readSubmit.status).toBe(403);
    expect(await readSubmit.json()).toMatchObject({ error: { code: "FORBIDDEN" } });

    // submit, limited to queue auth-a.
    const mine = await call(url, "/v1/tasks", SUBMIT_A, submitTo("auth-a"));
    expect(mine.status).toBe(201);
    const { taskId } = (await mine.json()) as { taskId: string };
    expect((await call(url, taskPath(taskId), SUBMIT_A)).status).toBe(200);
    const other = await call(url, "/v1/tasks", SUBMIT_A, submitTo("auth-b"));
    expect(other.status).toBe(403);
    expect(await other.json()).toMatchObject({ error: { code: "FORBIDDEN", message: expect.stringContaining("auth-b") } });
    // The default queue is a queue like any other.
    expect((await call(url, "/v1/tasks", SUBMIT_A, { method: "POST", body: submitBody(scripted("auth"), "hi") })).status).toBe(403);
    // Listing needs a queue it may see; a role it lacks is refused before anything else.
    expect((await call(url, "/v1/tasks", SUBMIT_A)).status).toBe(403);
    expect((await call(url, "/v1/tasks?queue=auth-a", SUBMIT_A)).status).toBe(200);
    expect((await call(url, taskPath(taskId, "/retry"), SUBMIT_A, { method: "POST" })).status).toBe(403);
    expect((await call(url, "/v1/queues/auth-a/dead-letters", SUBMIT_A, { method: "DELETE" })).status).toBe(403);
    // Queues it may not see are left out of the lists.
    const { taskId: elsewhere } = (await (await call(url, "/v1/tasks", ADMIN, submitTo("auth-b"))).json()) as { taskId: string };
    expect((await call(url, taskPath(elsewhere), SUBMIT_A)).status).toBe(403);
    const queues = (await (await call(url, "/v1/queues", SUBMIT_A)).json()) as { queues: Array<{ queue: string }> };
    expect(queues.queues.map((q) => q.queue)).toEqual(["auth-a"]);

    // admin: everything, on every queue.
    expect((await call(url, "/v1/tasks", ADMIN, submitTo("auth-c"))).status).toBe(201);
    const purged = await call(url, "/v1/queues/auth-c/dead-letters", ADMIN, { method: "DELETE" });
    expect(purged.status).toBe(200);
    expect(await purged.json()).toEqual({ queue: "auth-c", purged: 0 });
    expect((await call(url, "/v1/tasks", ADMIN)).status).toBe(200);

    // Probes, metrics and the API description need no token.
    for (const path of ["/healthz", "/readyz", "/metrics", "/openapi.json"]) expect((await call(url, path, undefined)).status, path).toBe(200);
  });

  it("refuses a token list with a short or repeated token before connecting", async () => {
    await expect(gateways.start({ tokens: [{ token: "short", role: "read" }] })).rejects.toMatchObject({ code: "VALIDATION_ERROR", field: "0.token" });
    await expect(
      gateways.start({
        tokens: [
          { token: ADMIN, role: "admin" },
          { token: ADMIN, role: "read" },
        ],
      }),
    ).rejects.toMatchObject({ field: "1.token" });
  });
});
