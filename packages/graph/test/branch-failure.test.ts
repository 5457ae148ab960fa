// @cluster: fan-out branches on real workers, their ends handed from the queues' slots to the run's
import { ErrorCodes, type JsonValue } from "@flotilla/core";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, it } from "vitest";
import { type BranchFailure, defineNode, GraphClient, type GraphInput, type GraphRunHandle, graphWorker } from "../src/index.ts";

const env = useFlotilla("graph-branch-failure");
const client = new GraphClient({ redis: env.connection, prefix: env.prefix });
afterAll(() => client.close());

/**
 * Five branches: 1 and 3 fail (until fixed), 4 succeeds at once, 0 and 2 are long agent calls that
 * end when the test lets them (or when aborted). Each node type is this test's own, so its counts
 * are its own.
 */
function scenario(tag: string) {
  const runs = new Map<number, number>();
  const aborted: number[] = [];
  const s = { fixed: false, releaseSlow: () => {}, releaseFailing: () => {} };
  const slowGate = new Promise<void>((resolve) => {
    s.releaseSlow = resolve;
  });
  const failGate = new Promise<void>((resolve) => {
    s.releaseFailing = resolve;
  });
  const nodes = [
    defineNode({ type: `${tag}-split`, execute: () => [0, 1, 2, 3, 4].map((k) => ({ k })) }),
    defineNode({
      type: `${tag}-branch`,
      execute: async (i: { k: number }, ctx) => {
        runs.set(i.k, (runs.get(i.k) ?? 0) + 1);
        if (s.fixed || i.k === 4) return { k: i.k * 10 };
        if (i.k === 1 || i.k === 3) {
          await failGate;
          throw new Error(`branch ${i.k} broke`);
        }
        await new Promise<void>((resolve, reject) => {
          void slowGate.then(resolve);
          ctx.signal.addEventListener("abort", () => {
            aborted.push(i.k);
            reject(ctx.signal.reason);
          });
        });
        return { k: i.k * 10 };
      },
    }),
    defineNode({ type: `${tag}-sum`, execute: (i: { ks: number[] }) => ({ total: i.ks.reduce((a, b) => a + b, 0), ks: i.ks }) }),
  ];
  const graph = (onBranchFailure?: BranchFailure): GraphInput => ({
    nodes: [
      { id: "split", type: `${tag}-split`, fanOut: true, next: ["w"] },
      { id: "w", type: `${tag}-branch`, next: ["sum"] },
      {
        id: "sum",
        type: `${tag}-sum`,
        unites: { id: "split", ...(onBranchFailure && { onBranchFailure }) },
        inputs: { ks: "${{w.outputs.k}}" },
      },
    ],
  });
  return { runs, aborted, s, nodes, graph };
}

const states = async (run: GraphRunHandle) => Object.fromEntries((await run.status()).nodes.map((n) => [n.instance, n.status]));
const serve = (nodes: ReturnType<typeof scenario>["nodes"]) =>
  env.worker({ concurrency: 8, graph: graphWorker({ nodes, handoffGraceMs: 300, sweepIntervalMs: 100 }) });

describe("a failed branch under an all-success join", () => {
  it("finish-running: the running branches end (none aborted), then the run fails with every failed branch; retry re-runs only those", async () => {
    const { runs, aborted, s, nodes, graph } = scenario("fr");
    await serve(nodes);
    const run = await client.startGraph(graph("finish-running"), null);
    await waitFor(async () => (await states(run))["w@4#1"] === "EXECUTED" && runs.get(0) === 1 && runs.get(2) === 1, {
      what: "branch 4 done, 0 and 2 running",
    });
    s.releaseFailing();
    await waitFor(async () => (await states(run))["w@3#1"] === "ERRORED" && (await states(run))["w@1#1"] === "ERRORED", { what: "both failures recorded" });
    // Both failures are recorded and the run goes on: the long calls keep running.
    expect(await run.status()).toMatchObject({ status: "RUNNING" });
    expect(await states(run)).toMatchObject({ "w@0#1": "RUNNING", "w@2#1": "RUNNING" });
    s.releaseSlow();
    const err = await run.result({ timeoutMs: 15_000 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.RUN_FAILED, details: { failures: 2, cause: { message: expect.stringMatching(/^branch [13] broke$/) } } });
    expect([...((err as { details: { failed: string[] } }).details.failed ?? [])].sort()).toEqual(["w@1#1", "w@3#1"]);
    expect(aborted).toEqual([]);
    const failed = await run.status();
    expect(Object.fromEntries(failed.nodes.map((n) => [n.instance, [n.status, n.output ?? null]]))).toEqual({
      "split@#1": ["EXECUTED", [{ k: 0 }, { k: 1 }, { k: 2 }, { k: 3 }, { k: 4 }]],
      "w@0#1": ["EXECUTED", { k: 0 }],
      "w@1#1": ["ERRORED", null],
      "w@2#1": ["EXECUTED", { k: 20 }],
      "w@3#1": ["ERRORED", null],
      "w@4#1": ["EXECUTED", { k: 40 }],
    });

    s.fixed = true;
    expect(await run.retry()).toBe(run);
    expect(await run.result({ timeoutMs: 15_000 })).toEqual({ sum: { total: 100, ks: [0, 10, 20, 30, 40] } });
    // Exactly the failed branches ran again; every other kept its output.
    expect(Object.fromEntries(runs)).toEqual({ 0: 1, 1: 2, 2: 1, 3: 2, 4: 1 });
  });

  it("fail-fast (the default): the first failure fails the run at once and aborts the running branches; retry re-runs the failed and the aborted ones", async () => {
    const { runs, aborted, s, nodes, graph } = scenario("ff");
    await serve(nodes);
    const run = await client.startGraph(graph(), null);
    await waitFor(async () => (await states(run))["w@4#1"] === "EXECUTED" && runs.get(0) === 1 && runs.get(2) === 1, {
      what: "branch 4 done, 0 and 2 running",
    });
    s.releaseFailing();
    await expect(run.result({ timeoutMs: 15_000 })).rejects.toMatchObject({ code: ErrorCodes.RUN_FAILED, details: { failures: 1 } });
    await waitFor(() => aborted.length === 2, { what: "the running branches aborted" });
    expect(aborted.sort()).toEqual([0, 2]);
    await waitFor(async () => Object.values(await states(run)).every((st) => st !== "CANCELLING"), { what: "the aborted branches recorded" });
    const after = await states(run);
    expect(after["w@4#1"]).toBe("EXECUTED");
    expect([after["w@0#1"], after["w@2#1"]]).toEqual(["CANCELLED", "CANCELLED"]);

    s.fixed = true;
    expect(await run.retry()).toBe(run);
    expect(await run.result({ timeoutMs: 15_000 })).toEqual({ sum: { total: 100, ks: [0, 10, 20, 30, 40] } });
    // Branch 4 succeeded before the failure: kept. 0 and 2 were aborted, 1 and 3 failed (or were cut short): all ran again.
    expect(runs.get(4)).toBe(1);
    for (const k of [0, 1, 2, 3]) expect(runs.get(k)).toBe(2);
  });
});

describe("onBranchFailure is checked", () => {
  const nodes = (unites: JsonValue, extra: Record<string, JsonValue> = {}) => ({
    nodes: [
      { id: "s", type: "t", fanOut: true, next: ["w"] },
      { id: "w", type: "t", next: ["j"] },
      { id: "j", type: "t", unites, ...extra },
    ],
  });

  it("an unknown value is a ValidationError naming it; on the node rather than in unites it says where it goes; with all-done it is INVALID_GRAPH", async () => {
    await expect(client.startGraph(nodes({ id: "s", onBranchFailure: "finish-runing" }) as GraphInput, null)).rejects.toMatchObject({
      code: ErrorCodes.VALIDATION,
      field: "nodes.2.unites.onBranchFailure",
    });
    const misplaced = await client.startGraph(nodes({ id: "s" }, { onBranchFailure: "finish-running" }) as GraphInput, null).catch((e: unknown) => e);
    expect(misplaced).toMatchObject({ code: ErrorCodes.VALIDATION, field: "nodes.2.onBranchFailure" });
    expect((misplaced as Error).message).toMatch(/belongs in the node's unites/);
    await expect(client.startGraph(nodes({ id: "s", policy: "all-done", onBranchFailure: "fail-fast" }) as GraphInput, null)).rejects.toMatchObject({
      code: ErrorCodes.INVALID_GRAPH,
      message: expect.stringMatching(/onBranchFailure is for an all-success join/),
    });
  });
});
