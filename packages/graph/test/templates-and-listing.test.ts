// @cluster: run listing across slots
import { ErrorCodes, type JsonValue } from "@flotilla/core";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { defineNode, type GraphInput, graphWorker } from "../src/index.ts";

const env = useFlotilla("graph-templates");
const echo = defineNode({ type: "echo-t", execute: (i: JsonValue) => i });
const graph = (version?: number): GraphInput => ({
  name: "greet",
  ...(version !== undefined && { version }),
  nodes: [{ id: "say", type: "echo-t", inputs: { hello: "${{input.who}}" } }],
});

describe("graph templates, run listing and idempotency, through FlotillaClient", () => {
  it("saves versions by name (never changed), and starts a run by name@version or by the latest", async () => {
    const client = env.client();
    const t = client.graphs.templates;
    expect(await t.save(graph())).toEqual({ name: "greet", version: 1 });
    expect(await t.save(graph(3))).toEqual({ name: "greet", version: 3 });
    expect(await t.save(graph())).toEqual({ name: "greet", version: 4 });
    // The same content again is fine; other content under a version that exists is refused.
    expect(await t.save(graph(3))).toEqual({ name: "greet", version: 3 });
    const changed = { ...graph(3), nodes: [{ id: "say", type: "echo-t", inputs: { bye: "${{input.who}}" } }] };
    await expect(t.save(changed)).rejects.toMatchObject({ code: ErrorCodes.INVALID_GRAPH });
    expect(await t.versions("greet")).toEqual([1, 3, 4]);
    expect((await t.get("greet")).version).toBe(4);
    await expect(t.get("greet@2")).rejects.toMatchObject({ code: ErrorCodes.TEMPLATE_NOT_FOUND });

    await env.worker({ graph: graphWorker({ nodes: [echo] }) });
    const byVersion = await client.startGraph("greet@3", { who: "ada" });
    expect(await byVersion.result({ timeoutMs: 10_000 })).toEqual({ say: { hello: "ada" } });
    const latest = await client.startGraph("greet", { who: "bob" });
    expect(await latest.result({ timeoutMs: 10_000 })).toEqual({ say: { hello: "bob" } });
    await expect(client.startGraph("nope", null)).rejects.toMatchObject({ code: ErrorCodes.TEMPLATE_NOT_FOUND });
  });

  it("an idempotency key starts one run: a second start returns the first run's handle", async () => {
    const client = env.client();
    await env.worker({ graph: graphWorker({ nodes: [echo] }) });
    const [a, b] = await Promise.all([
      client.startGraph(graph(), { who: "x" }, { idempotencyKey: "order-42" }),
      client.startGraph(graph(), { who: "x" }, { idempotencyKey: "order-42" }),
    ]);
    expect(a.runId).toBe(b.runId);
    const c = await client.startGraph(graph(), { who: "x" }, { idempotencyKey: "order-42" });
    expect(c.runId).toBe(a.runId);
    expect(await c.result({ timeoutMs: 10_000 })).toEqual({ say: { hello: "x" } });
    const other = await client.startGraph(graph(), { who: "x" }, { idempotencyKey: "order-43" });
    expect(other.runId).not.toBe(a.runId);
  });

  it("lists runs newest first, by status and graph name, a page at a time; expired runs drop out", async () => {
    const client = env.client();
    await env.worker({ graph: graphWorker({ nodes: [echo, defineNode({ type: "fail-t", execute: () => Promise.reject(new Error("no")) })] }) });
    const started: string[] = [];
    for (let i = 0; i < 5; i++) {
      const run = await client.startGraph({ name: "listed", nodes: [{ id: "n", type: i === 2 ? "fail-t" : "echo-t" }] }, i);
      started.push(run.runId);
      await run.result({ timeoutMs: 10_000 }).catch(() => {});
    }
    const all = await client.listRuns({ graph: "listed", limit: 2 });
    expect(all.runs.map((r) => r.runId)).toEqual([started[4], started[3]]);
    const next = await client.listRuns({ graph: "listed", limit: 2, cursor: all.cursor });
    expect(next.runs.map((r) => r.runId)).toEqual([started[2], started[1]]);
    const failed = await client.listRuns({ graph: "listed", status: "FAILED" });
    expect(failed.runs.map((r) => [r.runId, r.status])).toEqual([[started[2], "FAILED"]]);
    expect(failed.runs[0]!.error).toMatchObject({ code: ErrorCodes.RUN_FAILED });
    // A run whose keys expired is dropped from the index as a listing meets it.
    await env.redis.del(env.keys.run(started[0]!));
    const left = await client.listRuns({ graph: "listed" });
    expect(left.runs.map((r) => r.runId)).toEqual(started.slice(1).reverse());
    expect(await env.redis.zscore(env.keys.graphRuns(), started[0]!)).toBeNull();
  });

  it("a run's keys expire after it ends", async () => {
    const client = env.client();
    await env.worker({ graph: graphWorker({ nodes: [echo] }) });
    const run = await client.startGraph(graph(), { who: "ttl" }, { ttlMs: 60_000 });
    await run.result({ timeoutMs: 10_000 });
    for (const key of [env.keys.run(run.runId), env.keys.runNodes(run.runId), env.keys.runOutputs(run.runId), env.keys.runEvents(run.runId)]) {
      const ttl = await env.redis.pttl(key);
      expect(ttl, key).toBeGreaterThan(50_000);
      expect(ttl, key).toBeLessThanOrEqual(60_000);
    }
  });
});
