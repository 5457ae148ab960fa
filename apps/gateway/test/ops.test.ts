// The operational endpoints: the OpenAPI document, Prometheus metrics, liveness and readiness.
// @single: metrics and health endpoints of one process; /events here is a route name
import { freePort } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { taskPath, useGateway } from "./support.ts";

describe("gateway operations", () => {
  const env = useFlotilla("gateway-ops");
  const gateways = useGateway(env);

  it("serves an OpenAPI 3 document listing every path, generated from the schemas", async () => {
    const { url } = await gateways.start();
    const res = await fetch(`${url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown }>>;
      components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
    };
    expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/);
    const routes = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    expect(routes.sort()).toEqual(
      [
        "POST /v1/tasks",
        "GET /v1/tasks",
        "GET /v1/tasks/{id}",
        "GET /v1/tasks/{id}/result",
        "GET /v1/tasks/{id}/events",
        "POST /v1/tasks/{id}/cancel",
        "POST /v1/tasks/{id}/signal",
        "POST /v1/tasks/{id}/messages",
        "POST /v1/tasks/{id}/retry",
        "POST /v1/tokens",
        "GET /v1/queues",
        "GET /v1/workers",
        "GET /v1/alerts",
        "GET /v1/events",
        "GET /v1/queues/{queue}/dead-letters",
        "DELETE /v1/queues/{queue}/dead-letters",
        "GET /v1/queues/{queue}/dead-letters/{id}",
        "POST /v1/queues/{queue}/dead-letters/{id}/requeue",
        "POST /v1/runs",
        "GET /v1/runs",
        "GET /v1/runs/{runId}",
        "POST /v1/runs/{runId}/cancel",
        "POST /v1/runs/{runId}/retry",
        "POST /v1/topics/{topic}/events",
        "GET /v1/topics",
        "GET /v1/topics/{topic}",
        "GET /v1/topics/{topic}/events",
        "GET /v1/topics/{topic}/subscriptions/{name}/dead-letters",
        "DELETE /v1/topics/{topic}/subscriptions/{name}/dead-letters",
        "GET /v1/topics/{topic}/subscriptions/{name}/dead-letters/{id}",
        "POST /v1/topics/{topic}/subscriptions/{name}/dead-letters/republish",
        "GET /healthz",
        "GET /readyz",
        "GET /metrics",
      ].sort(),
    );
    expect(doc.paths["/v1/tasks"]!.post!.responses).toHaveProperty("201");
    expect(doc.paths["/v1/tasks"]!.post!.security).toEqual([{ bearer: [] }]);
    expect(doc.components.securitySchemes).toHaveProperty("bearer");
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(["SubmitRequest", "Task", "Error", "JsonValue"]));
    // The submit schema is core's: the agent's model pattern and the submit options are in it.
    const submit = JSON.stringify(doc.components.schemas.SubmitRequest);
    expect(submit).toContain(JSON.stringify("^[A-Za-z0-9][A-Za-z0-9_.-]*:.+$"));
    expect(submit).toContain('"idempotencyKey"');
  });

  it("/metrics counts requests by route pattern and status, in the Prometheus text format", async () => {
    const { url } = await gateways.start();
    await fetch(`${url}/healthz`);
    await fetch(`${url}/healthz`);
    await fetch(`${url}${taskPath("ops-q/missing-1")}`);
    await fetch(`${url}${taskPath("ops-q/missing-2")}`);
    const res = await fetch(`${url}/metrics`);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toContain("# TYPE flotilla_gateway_http_requests_total counter");
    expect(text).toMatch(/^flotilla_gateway_http_requests_total\{method="GET",route="\/healthz",status="200"\} 2$/m);
    // Two task ids, one series: the pattern is the label, never the id.
    expect(text).toMatch(/^flotilla_gateway_http_requests_total\{method="GET",route="\/v1\/tasks\/:id",status="404"\} 2$/m);
    expect(text).not.toContain("missing-1");
    expect(text).toMatch(/^flotilla_gateway_sse_streams_open 0$/m);
  });

  it("/healthz answers while /readyz is 503 when Redis is unreachable", async () => {
    const live = await gateways.start();
    expect((await fetch(`${live.url}/readyz`)).status).toBe(200);

    const closed = await freePort();
    const { url } = await gateways.start({ redis: `redis://127.0.0.1:${closed}`, readyTimeoutMs: 1000 });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: "redis unreachable" });
    // An API call is a 503 with REDIS_UNAVAILABLE, not a 500.
    const call = await fetch(`${url}/v1/queues`);
    expect(call.status).toBe(503);
    expect(await call.json()).toMatchObject({ error: { code: "REDIS_UNAVAILABLE" } });
  });
});
