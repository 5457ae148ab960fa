// @cluster: follows a run's live stream, merged with its node tasks' streams from their queues' slots
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, it } from "vitest";
import { defineNode, GraphClient, type GraphStreamEvent, graphWorker, isNodeEvent } from "../src/index.ts";

const env = useFlotilla("graph-stream-order");
const client = new GraphClient({ redis: env.connection, prefix: env.prefix });
afterAll(() => client.close());

const WIDTH = 1000;

/** The instance an event is about: a lifecycle event's, or the node task's it came from. */
const instanceOf = (e: GraphStreamEvent): string | undefined => e.instance;

/**
 * Checks causal order in one reading of the stream: each node's own events before its
 * node-finished, and a node's node-finished before every event of a node its end enabled (the
 * splitter enabled every branch and the merge; each branch the merge). The run's end comes last.
 */
function checkCausalOrder(events: readonly GraphStreamEvent[]): void {
  const finished = new Map<string, number>();
  const first = new Map<string, number>();
  const last = new Map<string, number>();
  events.forEach((e, i) => {
    const instance = instanceOf(e);
    if (instance === undefined) return;
    if (!first.has(instance)) first.set(instance, i);
    if (e.type === "node-finished" && !isNodeEvent(e)) finished.set(instance, i);
    else last.set(instance, i);
  });
  const branches = Array.from({ length: WIDTH }, (_, k) => `proc@${k}#1`);
  expect(finished.size).toBe(WIDTH + 2);
  for (const [instance, at] of finished) expect(last.get(instance) ?? -1, `${instance}'s own events before its node-finished`).toBeLessThan(at);
  const splitFinished = finished.get("split@#1")!;
  const firstAfterSplit = Math.min(...[...branches, "merge@#1"].map((b) => first.get(b)!));
  expect(firstAfterSplit, "nothing of a branch or the merge before the splitter's node-finished").toBeGreaterThan(splitFinished);
  const lastBranchFinished = Math.max(...branches.map((b) => finished.get(b)!));
  expect(first.get("merge@#1"), "nothing of the merge before the last branch's node-finished").toBeGreaterThan(lastBranchFinished);
  expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "SUCCEEDED" });
}

describe("a run's stream keeps causal order across nodes", () => {
  it(`a ${WIDTH}-way fan-out, live and replayed: a node's finished comes before any event of a node it enabled`, async () => {
    await env.worker({
      concurrency: 32,
      graph: graphWorker({
        nodes: [
          defineNode({
            type: "so-split",
            execute: (n: number, ctx) => {
              ctx.emit({ type: "text", delta: "splitting" });
              return Array.from({ length: n }, (_, k) => k);
            },
          }),
          defineNode({
            type: "so-proc",
            execute: (k: number, ctx) => {
              ctx.emit({ type: "text", delta: `item ${k}` });
              return k * 2;
            },
          }),
          defineNode({
            type: "so-merge",
            execute: (i: { all: number[] }, ctx) => {
              ctx.emit({ type: "text", delta: "merging" });
              return i.all.length;
            },
          }),
        ],
      }),
    });
    const run = await client.startGraph(
      {
        nodes: [
          { id: "split", type: "so-split", fanOut: true, next: ["proc"] },
          { id: "proc", type: "so-proc", next: ["merge"] },
          { id: "merge", type: "so-merge", unites: { id: "split" }, inputs: { all: "${{proc.outputs}}" } },
        ],
      },
      WIDTH,
    );
    const live: GraphStreamEvent[] = [];
    for await (const e of run.stream({ timeoutMs: 120_000 })) live.push(e);
    expect(await run.result({ timeoutMs: 1_000 })).toEqual({ merge: WIDTH });
    checkCausalOrder(live);

    const replayed: GraphStreamEvent[] = [];
    for await (const e of run.stream({ timeoutMs: 60_000 })) replayed.push(e);
    checkCausalOrder(replayed);
    expect(replayed.length).toBe(live.length);
  }, 180_000);
});
