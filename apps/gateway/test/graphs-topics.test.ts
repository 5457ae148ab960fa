// Graph runs and the event bus over HTTP: start a run, list it, read it; publish to a topic. Both
// need a token for every queue.
// @cluster: graph runs and topics listed across slots
import { Bus } from "@flotilla/bus";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { GraphRunSchema, RunPageSchema } from "../src/run-schemas.ts";
import { jsonHeaders, useGateway } from "./support.ts";

const TOKENS = [
  { token: "admin-token-0123456789", role: "admin" as const, queues: "*" as const },
  { token: "reader-token-0123456789", role: "read" as const, queues: "*" as const },
  { token: "limited-token-0123456789", role: "admin" as const, queues: ["q1"] },
];

describe("gateway: graph runs and topics", () => {
  const env = useFlotilla("gateway-graphs");
  const gateways = useGateway(env);
  const graph = {
    name: "gw-graph",
    nodes: [
      { id: "first", type: "gw-nobody", next: ["second"] },
      { id: "second", type: "gw-nobody" },
    ],
  };

  it("starts a run from graph JSON, lists it and reads its nodes; an unknown run is a 404", async () => {
    const { url } = await gateways.start({ tokens: TOKENS });
    const admin = jsonHeaders("admin-token-0123456789");
    const started = await fetch(`${url}/v1/runs`, { method: "POST", headers: admin, body: JSON.stringify({ graph, input: "go" }) });
    expect(started.status).toBe(201);
    const { runId } = (await started.json()) as { runId: string };
    // No worker serves its node type: it stays RUNNING with its first node queued.
    const reader = jsonHeaders("reader-token-0123456789");
    const page = (await (await fetch(`${url}/v1/runs?status=RUNNING`, { headers: reader })).json()) as { runs: Array<{ runId: string; graph: string }> };
    expect(page.runs).toEqual([expect.objectContaining({ runId, graph: "gw-graph" })]);
    const run = (await (await fetch(`${url}/v1/runs/${runId}`, { headers: reader })).json()) as {
      status: string;
      nodes: Array<{ node: string; status: string }>;
    };
    expect(run).toMatchObject({
      status: "RUNNING",
      definition: { name: "gw-graph", nodes: [expect.objectContaining({ id: "first", next: ["second"] }), expect.objectContaining({ id: "second" })] },
      nodes: [expect.objectContaining({ node: "first", status: "QUEUED" })],
    });
    // The answers are what the OpenAPI document says they are; a page's next cursor is `nextCursor`, as for tasks.
    expect(GraphRunSchema.safeParse(run).error).toBeUndefined();
    const second = await fetch(`${url}/v1/runs`, { method: "POST", headers: admin, body: JSON.stringify({ graph, input: "again" }) });
    expect(second.status).toBe(201);
    const first = (await (await fetch(`${url}/v1/runs?limit=1`, { headers: reader })).json()) as Record<string, unknown>;
    expect(RunPageSchema.safeParse(first).error).toBeUndefined();
    expect(first).toEqual({ runs: [expect.objectContaining({ runId: ((await second.json()) as { runId: string }).runId })], nextCursor: expect.any(String) });
    const next = (await (await fetch(`${url}/v1/runs?limit=1&cursor=${first.nextCursor}`, { headers: reader })).json()) as { runs: Array<{ runId: string }> };
    expect(next.runs.map((r) => r.runId)).toEqual([runId]);
    const unknown = await fetch(`${url}/v1/runs/nope`, { headers: reader });
    expect([unknown.status, ((await unknown.json()) as { error: { code: string } }).error.code]).toEqual([404, "RUN_NOT_FOUND"]);
    const bad = await fetch(`${url}/v1/runs`, { method: "POST", headers: admin, body: JSON.stringify({ graph: { name: "x", nodes: [] }, input: 1 }) });
    expect(bad.status).toBe(400);
    // A reader may not start one; a token limited to some queues may do neither.
    expect((await fetch(`${url}/v1/runs`, { method: "POST", headers: reader, body: JSON.stringify({ graph, input: 1 }) })).status).toBe(403);
    expect((await fetch(`${url}/v1/runs`, { headers: jsonHeaders("limited-token-0123456789") })).status).toBe(403);
  });

  it("publishes an event to a topic: every subscription will get it; the bus holds it", async () => {
    const { url } = await gateways.start({ tokens: TOKENS });
    const res = await fetch(`${url}/v1/topics/orders.created/events`, {
      method: "POST",
      headers: jsonHeaders("admin-token-0123456789"),
      body: JSON.stringify({ payload: { order: 7 }, options: { correlationId: "c-7" } }),
    });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const bus = new Bus({ redis: env.connection, prefix: env.prefix });
    try {
      const [event] = await bus.inspect("orders.created", { limit: 1 });
      expect(event).toMatchObject({ id, payload: { order: 7 }, correlationId: "c-7" });
    } finally {
      await bus.close();
    }
    const limited = await fetch(`${url}/v1/topics/orders.created/events`, {
      method: "POST",
      headers: jsonHeaders("limited-token-0123456789"),
      body: JSON.stringify({ payload: 1 }),
    });
    expect(limited.status).toBe(403);
    const invalid = await fetch(`${url}/v1/topics/orders.created/events`, { method: "POST", headers: jsonHeaders("admin-token-0123456789"), body: "{}" });
    expect([invalid.status, ((await invalid.json()) as { error: { field: string } }).error.field]).toEqual([400, "payload"]);
  });
});
