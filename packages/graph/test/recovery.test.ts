// @cluster: no crash stops a run: sweeps across slots
import { createKeys, type JsonValue } from "@flotilla/core";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, it } from "vitest";
import {
  compileGraph,
  defineNode,
  GraphBuilder,
  GraphClient,
  type GraphInput,
  GraphWorker,
  graphWorker,
  importSeedGraph,
  type NodeDefinition,
  type SeedGraph,
} from "../src/index.ts";

const env = useFlotilla("graph-recovery");
const client = new GraphClient({ redis: env.connection, prefix: env.prefix });
afterAll(() => client.close());

const fn = (type: string, execute: (inputs: never) => JsonValue): NodeDefinition<never, JsonValue> => defineNode({ type, execute });

/** A graph worker that dies (as far as its runs can tell) right after each node task's outcome is recorded: it never hands the end on. */
class DiesAfterSettle extends GraphWorker {
  override ended(): void {}
}

const chain: GraphInput = {
  name: "chain",
  nodes: [
    { id: "first", type: "first", next: ["second"] },
    { id: "second", type: "second", inputs: { got: "${{first.outputs.n}}" } },
  ],
};

describe("no process's crash stops a run", () => {
  it("a hand-off the settling worker never made is finished by another worker's sweeper", async () => {
    await env.worker({ graph: new DiesAfterSettle({ nodes: [fn("first", () => ({ n: 7 }))], sweepIntervalMs: 3_600_000 }) });
    await env.worker({
      graph: graphWorker({
        nodes: [fn("second", (i: { got: number }) => ({ got: i.got }))],
        queues: ["node.first"],
        handoffGraceMs: 300,
        sweepIntervalMs: 100,
      }),
    });
    const run = await client.startGraph(chain, null);
    expect(await run.result({ timeoutMs: 15_000 })).toEqual({ second: { got: 7 } });
    expect(await env.redis.zcard(env.keys.handoff("node.first"))).toBe(0);
    expect(await env.redis.zcard(env.keys.handoff("node.second"))).toBe(0);
  });

  it("a start whose process died before the first tasks existed is finished by the sweeper", async () => {
    const compiled = compileGraph(chain);
    const runId = `dead-start-${Date.now()}`;
    // What startGraph had done when its process died: noted as starting, the run written, no task created.
    await env.redis.zadd(env.keys.graphStarting(), Date.now() - 60_000, runId);
    await client.engine.runs.start(runId, compiled, JSON.stringify(compiled.graph), null, { ttlMs: 60_000, detailed: true, metadata: {} });
    await env.worker({
      graph: graphWorker({
        nodes: [fn("first", () => ({ n: 1 })), fn("second", (i: { got: number }) => ({ got: i.got }))],
        handoffGraceMs: 300,
        sweepIntervalMs: 100,
      }),
    });
    expect(await client.run(runId).result({ timeoutMs: 15_000 })).toEqual({ second: { got: 1 } });
    expect(await env.redis.zscore(env.keys.graphStarting(), runId)).toBeNull();
  });

  it("a hand-off done again (a sweeper racing the worker, a resend) creates nothing twice", async () => {
    await env.worker({ graph: graphWorker({ nodes: [fn("first", () => ({ n: 2 })), fn("second", (i: { got: number }) => ({ got: i.got }))] }) });
    const run = await client.startGraph(chain, null);
    await run.result({ timeoutMs: 15_000 });
    const before = await run.status();
    for (const n of before.nodes) await client.engine.handOff(n.taskId);
    const again = await client.engine.runs.advance(run.runId, [{ instance: "first@#1", outcome: "EXECUTED", output: "{}" }], 60_000);
    expect(again).toEqual({ status: "SUCCEEDED", endedRun: false, replies: [{ reply: "replay", created: ["second@#1"] }] });
    expect(await run.status()).toEqual(before);
  });

  it("a node task cancelled while it waits (no worker has run it) reaches its run through the hand-off set: the run ends CANCELLED", async () => {
    const run = await client.startGraph({ nodes: [{ id: "waits", type: "nobody-serves" }] }, null);
    const [node] = (await run.status()).nodes;
    expect(await env.client().handle(node!.taskId).cancel("not wanted")).toMatchObject({ outcome: "cancelled" });
    expect(await env.redis.zscore(env.keys.handoff("node.nobody-serves"), node!.taskId)).not.toBeNull();
    // A worker whose sweeper covers that queue finishes the hand-off.
    await env.worker({ graph: graphWorker({ queues: ["node.nobody-serves"], handoffGraceMs: 100, sweepIntervalMs: 100 }) });
    await expect(run.result({ timeoutMs: 10_000 })).rejects.toMatchObject({ code: "RUN_CANCELLED" });
    expect((await run.status()).nodes.map((n) => n.status)).toEqual(["CANCELLED"]);
  });

  it("the workers' node types show in the fleet status", async () => {
    const w = await env.worker({
      graph: graphWorker({ nodes: [fn("first", () => null)], agents: [{ kind: "agent", name: "writer", model: "scripted:echo" }] }),
    });
    expect(w.queues).toEqual(["node.first", "node.writer"]);
    const fleet = await env.client().fleet.status();
    expect(fleet.workers.find((x) => x.workerId === w.workerId)?.nodeTypes).toEqual(["first", "writer"]);
  });

  it("a graph from JSON and the same graph from the builder run the same", async () => {
    await env.worker({
      graph: graphWorker({
        nodes: [fn("fan", () => [1, 2, 3]), fn("sq", (i: number) => i * i), fn("add", (i: { xs: number[] }) => ({ sum: i.xs.reduce((a, b) => a + b, 0) }))],
      }),
    });
    const json: GraphInput = {
      name: "squares",
      nodes: [
        { id: "f", type: "fan", fanOut: true, next: ["s"] },
        { id: "s", type: "sq", next: ["a"] },
        { id: "a", type: "add", unites: { id: "f" }, inputs: { xs: "${{s.outputs}}" } },
      ],
    };
    const built = new GraphBuilder("squares")
      .node("f", { type: "fan", fanOut: true })
      .node("s", { type: "sq" })
      .node("a", { type: "add", unites: { id: "f" }, inputs: { xs: "${{s.outputs}}" } })
      .edge("f", "s")
      .edge("s", "a")
      .build();
    const [r1, r2] = await Promise.all([client.startGraph(json, null), client.startGraph(built, null)]);
    expect(await r1.result({ timeoutMs: 15_000 })).toEqual({ a: { sum: 14 } });
    expect(await r2.result({ timeoutMs: 15_000 })).toEqual({ a: { sum: 14 } });
    const shape = async (r: typeof r1) => (await r.status()).nodes.map((n) => [n.instance, n.status, n.output]).sort();
    expect(await shape(r1)).toEqual(await shape(r2));
    expect(createKeys(env.prefix).run(r1.runId)).toBe(`${env.prefix}:run:{${r1.runId}}`);
  });
});

describe("the seed's template format and checkpoints", () => {
  it("imports a seed template (node_name, identifier, next_nodes, unites.identifier) and runs it as the seed would", async () => {
    const seed: SeedGraph = {
      name: "chunks",
      nodes: [
        { node_name: "DataSplitterNode", identifier: "data_splitter", next_nodes: ["processor_1"] },
        { node_name: "DataProcessorNode", identifier: "processor_1", inputs: { x: "${{data_splitter.outputs.data_chunk}}" }, next_nodes: ["result_merger"] },
        {
          node_name: "ResultMergerNode",
          identifier: "result_merger",
          inputs: { x_processed: "${{processor_1.outputs.processed_data}}" },
          unites: { identifier: "data_splitter" },
        },
      ],
    };
    const graph = importSeedGraph(seed);
    expect(graph.nodes.map((n) => [n.id, n.type, n.fanOut ?? false, n.unites?.policy ?? ""])).toEqual([
      ["data_splitter", "DataSplitterNode", true, ""],
      ["processor_1", "DataProcessorNode", false, ""],
      ["result_merger", "ResultMergerNode", false, "all-success"],
    ]);
    await env.worker({
      graph: graphWorker({
        nodes: [
          fn("DataSplitterNode", () => [{ data_chunk: "a" }, { data_chunk: "b" }, { data_chunk: "c" }]),
          fn("DataProcessorNode", (i: { x: string }) => ({ processed_data: i.x.toUpperCase() })),
          fn("ResultMergerNode", (i: { x_processed: string[] }) => ({ merged: i.x_processed.join("") })),
        ],
      }),
    });
    const run = await client.startGraph(graph, null);
    expect(await run.result({ timeoutMs: 15_000 })).toEqual({ result_merger: { merged: "ABC" } });
    expect((await run.status()).nodes.filter((n) => n.node === "result_merger")).toHaveLength(1);
  });

  it("reads back each node's checkpoint: the state it saw, its output, the state after it", async () => {
    await env.worker({ graph: graphWorker({ nodes: [fn("cp-a", () => ({ a: 1, shared: "a" })), fn("cp-b", () => ({ b: 2, shared: "b" }))] }) });
    const run = await client.startGraph(
      {
        nodes: [
          { id: "a", type: "cp-a", next: ["b"] },
          { id: "b", type: "cp-b" },
        ],
      },
      null,
    );
    await run.result({ timeoutMs: 15_000 });
    expect(await run.checkpoint("a@#1")).toEqual({ instance: "a@#1", state: {}, output: { a: 1, shared: "a" }, after: { a: 1, shared: "a" } });
    expect(await run.checkpoint("b@#1")).toEqual({
      instance: "b@#1",
      state: { a: 1, shared: "a" },
      output: { b: 2, shared: "b" },
      after: { a: 1, b: 2, shared: "b" },
    });
  });
});
