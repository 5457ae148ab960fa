import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, it } from "vitest";
import { GraphClient } from "../src/index.ts";

// advance-5.lua takes a batch of ends (a worker's settle batch) in one call. These call it directly
// on runs whose node types nobody serves, so nothing but the test moves them.
const env = useFlotilla("graph-advance");
const client = new GraphClient({ redis: env.connection, prefix: env.prefix });
afterAll(() => client.close());
const runs = client.engine.runs;
/** A fan-out whose branches a merge unites, of node types nobody serves. */
const fanOutGraph = {
  nodes: [
    { id: "split", type: "none-split", fanOut: true, next: ["work"] },
    { id: "work", type: "none-work", next: ["merge"] },
    { id: "merge", type: "none-merge", unites: { id: "split" } },
  ],
};
const ok = (instance: string, output: unknown = {}) => ({ instance, outcome: "EXECUTED" as const, output: JSON.stringify(output) });

describe("advancing a run by a batch of ends", () => {
  it("two branches of a diamond in one call create the join once; a repeat in the same call is a replay", async () => {
    const run = await client.startGraph(
      {
        nodes: [
          { id: "A", type: "none-a", next: ["B", "C"] },
          { id: "B", type: "none-b", next: ["D"] },
          { id: "C", type: "none-c", next: ["D"] },
          { id: "D", type: "none-d" },
        ],
      },
      null,
    );
    expect((await runs.advance(run.runId, [ok("A@#1")], 60_000)).replies).toEqual([{ reply: "ok", created: ["B@#1", "C@#1"] }]);
    const both = await runs.advance(run.runId, [ok("B@#1"), ok("C@#1"), ok("B@#1")], 60_000);
    expect(both).toEqual({
      status: "RUNNING",
      endedRun: false,
      replies: [
        { reply: "ok", created: [] },
        { reply: "ok", created: ["D@#1"] },
        { reply: "replay", created: [] },
      ],
    });
    // The join's counters went with it; only D is open.
    expect(Object.keys(await env.redis.hgetall(env.keys.runJoins(run.runId))).filter((k) => /^[clx]:/.test(k))).toEqual([]);
    expect((await runs.record(run.runId))?.open).toBe(1);
    const last = await runs.advance(run.runId, [ok("D@#1", { done: true })], 60_000);
    expect(last).toMatchObject({ status: "SUCCEEDED", endedRun: true });
    expect(await run.result({ timeoutMs: 1_000 })).toEqual({ D: { done: true } });
  });

  it("every branch of a fan-out in one call: the unites node is created once, by the last of them", async () => {
    const run = await client.startGraph(fanOutGraph, null);
    const split = await runs.advance(run.runId, [{ ...ok("split@#1", [1, 2, 3]), width: 3 }], 60_000);
    expect(split.replies).toEqual([{ reply: "ok", created: ["work@0#1", "work@1#1", "work@2#1"] }]);
    const works = await runs.advance(run.runId, [ok("work@2#1"), ok("work@0#1"), ok("work@1#1")], 60_000);
    expect(works.replies.map((r) => r.created)).toEqual([[], [], ["merge@#1"]]);
    // One node-created event for the fan-out's three branches, one for the merge.
    const created = [];
    for await (const e of run.events({ timeoutMs: 200 })) if (e.type === "node-created") created.push([e.instance, e.id]);
    expect(created.map(([instance]) => instance)).toEqual(["split@#1", "work@0#1", "work@1#1", "work@2#1", "merge@#1"]);
    expect(new Set(created.slice(1, 4).map(([, id]) => id)).size).toBe(1);
  });

  it("hand-offs of more ends than one call takes (250 branches) are recorded in several calls: each once, the merge once", async () => {
    const run = await client.startGraph(fanOutGraph, null);
    const width = 250;
    await runs.advance(
      run.runId,
      [
        {
          ...ok(
            "split@#1",
            Array.from({ length: width }, (_, i) => i),
          ),
          width,
        },
      ],
      60_000,
    );
    const { compiled } = (await client.engine.load(run.runId))!;
    await client.engine.handOffMany(
      Array.from({ length: width }, (_, i) => ({
        taskId: client.engine.taskIdOf(run.runId, compiled, { node: "work", branch: [i], n: 1 }),
        known: { status: "COMPLETED" as const, result: { output: { i } } },
      })),
    );
    const nodes = (await run.status()).nodes;
    expect(nodes.filter((n) => n.node === "work" && n.status === "EXECUTED")).toHaveLength(width);
    expect(nodes.filter((n) => n.node === "merge").map((n) => n.status)).toEqual(["QUEUED"]);
    expect((await runs.outputs(run.runId, ["work@249#1"]))[0]).toBe('{"i":249}');
  });

  it("a late end of a run that had ended: recorded, nothing created, and what it wrote expires with the run", async () => {
    const run = await client.startGraph(
      {
        nodes: [
          { id: "only", type: "none-late", next: ["after"] },
          { id: "after", type: "none-after" },
        ],
      },
      null,
    );
    // The run's own step alone (cancelRun-5.lua): its open node is left as a running one would be, its end to come.
    expect(await runs.cancel(run.runId, "stop", 60_000)).toMatchObject({ outcome: "cancelled", open: ["only@#1"], tries: [0] });
    // Nothing had written an output: the late end writes the run's outputs hash first.
    expect(await env.redis.exists(env.keys.runOutputs(run.runId))).toBe(0);
    const late = await runs.advance(run.runId, [ok("only@#1", { late: true })], 60_000);
    expect(late).toEqual({ status: "CANCELLED", endedRun: false, replies: [{ reply: "ended", created: [] }] });
    const ttl = await env.redis.pttl(env.keys.runOutputs(run.runId));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it("finish-running: a failed branch is noted, the others go on; the run fails once nothing is open, every failure listed; retry resumes from them", async () => {
    const graph = {
      nodes: [
        { id: "split", type: "none-split", fanOut: true, next: ["work"] },
        { id: "work", type: "none-work", next: ["merge"] },
        { id: "merge", type: "none-merge", unites: { id: "split", onBranchFailure: "finish-running" as const } },
      ],
    };
    const run = await client.startGraph(graph, null);
    await runs.advance(run.runId, [{ ...ok("split@#1", [1, 2, 3, 4]), width: 4 }], 60_000);
    const failed = (i: number) => ({ instance: `work@${i}#1`, outcome: "ERRORED" as const, error: JSON.stringify({ message: `broke ${i}`, code: "X" }) });
    const first = await runs.advance(run.runId, [failed(1), ok("work@0#1")], 60_000);
    expect(first).toEqual({
      status: "RUNNING",
      endedRun: false,
      replies: [
        { reply: "ok", created: [] },
        { reply: "ok", created: [] },
      ],
    });
    expect(await runs.advance(run.runId, [failed(3)], 60_000)).toMatchObject({ status: "RUNNING" });
    const last = await runs.advance(run.runId, [ok("work@2#1")], 60_000);
    expect(last).toMatchObject({ status: "FAILED", endedRun: true, replies: [{ reply: "ok", created: [] }] });
    expect((await runs.record(run.runId))?.error).toEqual({
      message: "node work failed: broke 1 (and 1 more)",
      code: "RUN_FAILED",
      node: "work@1#1",
      cause: { message: "broke 1", code: "X" },
      failures: 2,
      failed: ["work@1#1", "work@3#1"],
    });
    // The same graph fail-fast (the default): the first failure ends the run.
    const fast = await client.startGraph({ nodes: graph.nodes.map((n) => (n.id === "merge" ? { ...n, unites: { id: "split" } } : n)) }, null);
    await runs.advance(fast.runId, [{ ...ok("split@#1", [1, 2]), width: 2 }], 60_000);
    expect(await runs.advance(fast.runId, [failed(1)], 60_000)).toMatchObject({ status: "FAILED", endedRun: true });

    // retry: only the failed branches go again; their success completes the join.
    const { instances } = await runs.retry(run.runId);
    expect(instances.sort()).toEqual(["work@1#1", "work@3#1"]);
    expect((await runs.record(run.runId))?.error).toBeUndefined();
    const again = await runs.advance(
      run.runId,
      [
        { ...ok("work@1#1"), try: 1 },
        { ...ok("work@3#1"), try: 1 },
      ],
      60_000,
    );
    expect(again.replies.map((r) => r.created)).toEqual([[], ["merge@#1"]]);
  });

  it("a run that does not exist answers missing for every end", async () => {
    expect(await runs.advance("no-such-run", [ok("a@#1"), ok("b@#1")], 60_000)).toEqual({
      status: "",
      endedRun: false,
      replies: [
        { reply: "missing", created: [] },
        { reply: "missing", created: [] },
      ],
    });
  });
});
