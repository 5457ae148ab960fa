// @cluster: runs whose nodes are tasks of several queues (slots), advanced through the outbox
import { ErrorCodes, type JsonValue, silentLogger } from "@flotilla/core";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineNode, GraphClient, type GraphInput, type GraphStreamEvent, graphWorker, isNodeEvent, type NodeDefinition } from "../src/index.ts";

const env = useFlotilla("graph-runs");
const client = new GraphClient({ redis: env.connection, prefix: env.prefix });
afterAll(() => client.close());

// biome-ignore lint/suspicious/noExplicitAny: test nodes of any input type
type AnyNode = NodeDefinition<any, JsonValue>;
const fn = (type: string, execute: (inputs: never) => JsonValue | Promise<JsonValue>): AnyNode => defineNode({ type, execute });
/** A worker that serves only these node types. */
const worker = (nodes: AnyNode[], extra: Parameters<typeof graphWorker>[0] = {}) =>
  env.worker({ graph: graphWorker({ nodes, handoffGraceMs: 300, sweepIntervalMs: 100, ...extra }), concurrency: 8 });

describe("graph runs on real workers", () => {
  it("a diamond: B and C run on different workers serving different node types, D once after both", async () => {
    const split = fn("split", (i: { x: number }) => ({ n: i.x }));
    const left = fn("left", (i: { n: number }) => ({ b: i.n * 2 }));
    const right = fn("right", (i: { n: number }) => ({ c: i.n + 1 }));
    const join = fn("join", (i: { b: number; c: number }) => ({ sum: i.b + i.c }));
    const w1 = await worker([split, left, join]);
    const w2 = await worker([right]);
    const graph: GraphInput = {
      name: "diamond",
      nodes: [
        { id: "A", type: "split", next: ["B", "C"] },
        { id: "B", type: "left", next: ["D"] },
        { id: "C", type: "right", next: ["D"] },
        { id: "D", type: "join", inputs: { b: "${{B.outputs.b}}", c: "${{C.outputs.c}}" } },
      ],
    };
    const run = await client.startGraph(graph, { x: 5 });
    expect(await run.result({ timeoutMs: 15_000 })).toEqual({ D: { sum: 16 } });
    const status = await run.status();
    expect(status.status).toBe("SUCCEEDED");
    expect(status.nodes.map((n) => [n.instance, n.status]).sort()).toEqual([
      ["A@#1", "EXECUTED"],
      ["B@#1", "EXECUTED"],
      ["C@#1", "EXECUTED"],
      ["D@#1", "EXECUTED"],
    ]);
    const byNode = Object.fromEntries(status.nodes.map((n) => [n.node, n.taskId]));
    const [b, c] = await env.store.getMany([byNode.B!, byNode.C!]);
    expect(b?.workerId).toBe(w1.workerId);
    expect(c?.workerId).toBe(w2.workerId);
    expect(byNode.B).toMatch(/^node\.left\//);
    expect(byNode.C).toMatch(/^node\.right\//);
  });

  it("fan-out of 100 → processor → unites: exactly one merge, outputs in branch order", async () => {
    await worker([
      fn("items", (i: { count: number }) => Array.from({ length: i.count }, (_, k) => ({ v: k }))),
      fn("double", (i: { v: number }) => ({ v: i.v * 2 })),
      fn("merge", (i: { values: number[] }) => ({ values: i.values })),
    ]);
    const run = await client.startGraph(
      {
        nodes: [
          { id: "split", type: "items", fanOut: true, next: ["proc"] },
          { id: "proc", type: "double", next: ["merge"] },
          { id: "merge", type: "merge", unites: { id: "split" }, inputs: { values: "${{proc.outputs.v}}" } },
        ],
      },
      { count: 100 },
    );
    const result = await run.result({ timeoutMs: 30_000 });
    expect(result).toEqual({ merge: { values: Array.from({ length: 100 }, (_, k) => k * 2) } });
    const status = await run.status();
    const nodes = status.nodes;
    // The graph it was started with, for views that draw the run: nodes, edges, the fan-out and its join.
    expect(status.definition.nodes.map((n) => [n.id, n.next ?? [], n.fanOut === true, n.unites?.id])).toEqual([
      ["split", ["proc"], true, undefined],
      ["proc", ["merge"], false, undefined],
      ["merge", [], false, "split"],
    ]);
    expect(nodes.filter((n) => n.node === "merge")).toHaveLength(1);
    expect(nodes.filter((n) => n.node === "proc" && n.status === "EXECUTED")).toHaveLength(100);
    // In the graph's order, a fan-out's instances by branch (the run's hash of 200 fields is past the size Redis keeps in order).
    expect(nodes.map((n) => `${n.node}${n.branch.join(".")}`)).toEqual(["split", ...Array.from({ length: 100 }, (_, k) => `proc${k}`), "merge"]);
  });

  it("a fan-out inside a fan-out, each with its own unites", async () => {
    await worker([
      fn("outer", () => [{ base: 10 }, { base: 20 }, { base: 30 }]),
      fn("inner", (i: { base: number }) => [1, 2].map((k) => ({ v: i.base + k }))),
      fn("work", (i: { v: number }) => ({ v: i.v })),
      fn("sum", (i: { vs: number[] }) => ({ total: i.vs.reduce((a, b) => a + b, 0) })),
      fn("collect", (i: { totals: number[] }) => ({ totals: i.totals })),
    ]);
    const run = await client.startGraph(
      {
        nodes: [
          { id: "o", type: "outer", fanOut: true, next: ["i"] },
          { id: "i", type: "inner", fanOut: true, next: ["w"] },
          { id: "w", type: "work", next: ["s"] },
          { id: "s", type: "sum", unites: { id: "i" }, inputs: { vs: "${{w.outputs.v}}" }, next: ["c"] },
          { id: "c", type: "collect", unites: { id: "o" }, inputs: { totals: "${{s.outputs.total}}" } },
        ],
      },
      null,
    );
    expect(await run.result({ timeoutMs: 30_000 })).toEqual({ c: { totals: [23, 43, 63] } });
    const nodes = (await run.status()).nodes;
    expect(
      nodes
        .filter((n) => n.node === "s")
        .map((n) => n.instance)
        .sort(),
    ).toEqual(["s@0#1", "s@1#1", "s@2#1"]);
    expect(nodes.filter((n) => n.node === "c")).toHaveLength(1);
  });

  it("a conditional loop stops at maxIterations, then goes on by its forward edge", async () => {
    await worker([
      fn("draft", (i: { text?: string }) => ({ text: `${i.text ?? ""}x` })),
      // Never satisfied: always asks for another draft.
      fn("review", (i: { text: string }) => ({ text: i.text, next: "write" })),
      fn("publish", (i: { text: string }) => ({ published: i.text })),
    ]);
    const run = await client.startGraph(
      {
        nodes: [
          { id: "write", type: "draft", inputs: { text: "${{state.text}}" }, next: ["check"] },
          { id: "check", type: "review", next: ["write", "done"], maxIterations: 3 },
          { id: "done", type: "publish", inputs: { text: "${{check.outputs.text}}" } },
        ],
      },
      null,
    );
    expect(await run.result({ timeoutMs: 15_000 })).toEqual({ done: { published: "xxx" } });
    const nodes = (await run.status()).nodes;
    expect(nodes.filter((n) => n.node === "write").map((n) => n.instance)).toEqual(["write@#1", "write@#2", "write@#3"]);
    expect(nodes.filter((n) => n.node === "done")).toHaveLength(1);
  });

  it("a node's output chooses among its next: the other branch is skipped, and its skip passes on", async () => {
    await worker([
      fn("route", (i: { go: string }) => ({ next: i.go })),
      fn("a", () => ({ from: "a" })),
      fn("b", () => ({ from: "b" })),
      fn("after-b", () => ({ after: true })),
    ]);
    const run = await client.startGraph(
      {
        nodes: [
          { id: "r", type: "route", next: ["a", "b"] },
          { id: "a", type: "a" },
          { id: "b", type: "b", next: ["bb"] },
          { id: "bb", type: "after-b" },
        ],
      },
      { go: "a" },
    );
    expect(await run.result({ timeoutMs: 15_000 })).toEqual({ a: { from: "a" } });
    const states = Object.fromEntries((await run.status()).nodes.map((n) => [n.node, n.status]));
    expect(states).toEqual({ r: "EXECUTED", a: "EXECUTED", b: "SKIPPED", bb: "SKIPPED" });
  });

  it("a failing branch: all-success fails the run; all-done runs the join with the failure", async () => {
    await worker([
      fn("three", () => [{ k: 0 }, { k: 1 }, { k: 2 }]),
      fn("maybe", (i: { k: number }) => {
        if (i.k === 1) throw new Error("branch 1 broke");
        return { k: i.k };
      }),
      fn("gather", (i: { ks: JsonValue[] }) => ({ ks: i.ks })),
    ]);
    const graph = (policy: "all-success" | "all-done"): GraphInput => ({
      nodes: [
        { id: "s", type: "three", fanOut: true, next: ["m"] },
        { id: "m", type: "maybe", next: ["g"] },
        { id: "g", type: "gather", unites: { id: "s", policy }, inputs: { ks: "${{m.outputs}}" } },
      ],
    });
    const strict = await client.startGraph(graph("all-success"), null);
    await expect(strict.result({ timeoutMs: 15_000 })).rejects.toMatchObject({ code: ErrorCodes.RUN_FAILED });
    expect((await strict.status()).nodes.filter((n) => n.node === "g")).toHaveLength(0);

    const lenient = await client.startGraph(graph("all-done"), null);
    const { g } = (await lenient.result({ timeoutMs: 15_000 })) as { g: { ks: JsonValue[] } };
    expect(g.ks[0]).toEqual({ k: 0 });
    expect(g.ks[1]).toMatchObject({ error: { message: "branch 1 broke" } });
    expect(g.ks[2]).toEqual({ k: 2 });
  });

  it("a failed node with nothing after it fails the run, naming the node", async () => {
    await worker([fn("boom", () => Promise.reject(new Error("no")))]);
    const run = await client.startGraph({ nodes: [{ id: "only", type: "boom" }] }, null);
    const err = await run.result({ timeoutMs: 15_000 }).catch((e: unknown) => e);
    // The run's error names the node and carries the node's own error.
    expect(err).toMatchObject({ code: ErrorCodes.RUN_FAILED, message: "node only failed: no", details: { node: "only@#1", cause: { message: "no" } } });
  });

  it("cancel mid-run: running nodes abort, no node starts afterwards", async () => {
    const started: string[] = [];
    await worker([
      defineNode({
        type: "slow",
        execute: (_: unknown, ctx) =>
          new Promise<JsonValue>((_, reject) => {
            started.push(ctx.node.instance);
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
          }),
      }),
      fn("never", () => ({ ran: true })),
    ]);
    const run = await client.startGraph(
      {
        nodes: [
          { id: "a", type: "slow", next: ["b"] },
          { id: "b", type: "never" },
        ],
      },
      null,
    );
    await env.until((await run.status()).nodes[0]!.taskId, ["RUNNING"]);
    expect(await run.cancel("stop it")).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    await expect(run.result({ timeoutMs: 10_000 })).rejects.toMatchObject({ code: ErrorCodes.RUN_CANCELLED });
    const a = (await run.status()).nodes.find((n) => n.node === "a")!;
    expect((await env.until(a.taskId)).status).toBe("CANCELLED");
    expect((await run.status()).nodes.map((n) => n.node)).toEqual(["a"]);
  });

  it("a node task that starts after its run ended (the cancel not yet at its task) ends CANCELLED, not FAILED", async () => {
    // The window between a cancel ending the run and its cancel reaching the node's task, held open:
    // nobody serves the node type until the run record says CANCELLED.
    const run = await client.startGraph({ nodes: [{ id: "late", type: "late" }] }, null);
    const taskId = (await waitFor(async () => (await run.status()).nodes[0]?.taskId))!;
    await env.redis.hset(env.keys.run(run.runId), "status", "CANCELLED");
    let ran = false;
    await worker([
      fn("late", () => {
        ran = true;
        return null;
      }),
    ]);
    expect((await env.until(taskId)).status).toBe("CANCELLED");
    expect(ran).toBe(false);
  });

  it("a node function is not called when its task's signal was aborted while the node was being prepared", async () => {
    let called = false;
    const gw = graphWorker({
      nodes: [
        fn("prepared", () => {
          called = true;
          return null;
        }),
      ],
    });
    await gw.start({ redis: env.redis, keys: env.keys, logger: silentLogger });
    try {
      const run = await client.startGraph({ nodes: [{ id: "p", type: "prepared" }] }, null);
      const reason = new Error("cancelled meanwhile");
      const execution = gw.execute({
        taskId: (await run.status()).nodes[0]!.taskId,
        attempt: 1,
        signal: AbortSignal.abort(reason),
        node: { run: run.runId, id: "p", type: "prepared", instance: "p@#1" },
        input: null,
        state: {},
        emit: () => {},
        runAgent: () => Promise.reject(new Error("no agents here")),
      });
      await expect(execution).rejects.toBe(reason);
      expect(called).toBe(false);
      await run.cancel();
    } finally {
      await gw.stop();
    }
  });

  it("inputs are checked by the node's schema; a mismatch fails the node without retries", async () => {
    await worker([defineNode({ type: "typed", inputSchema: z.object({ n: z.number() }), execute: (i) => ({ twice: i.n * 2 }) })]);
    const retry = { maxRetries: 3, maxDeliveries: 9 };
    const ok = await client.startGraph({ nodes: [{ id: "t", type: "typed", retry }] }, { n: 4 });
    expect(await ok.result({ timeoutMs: 15_000 })).toEqual({ t: { twice: 8 } });
    // The node's retry options reach its task: retries and the delivery budget.
    expect(await env.store.get((await ok.status()).nodes[0]!.taskId)).toMatchObject({ maxRetries: 3, maxDeliveries: 9 });
    const bad = await client.startGraph({ nodes: [{ id: "t", type: "typed", retry: { maxRetries: 3 } }] }, { n: "four" });
    await expect(bad.result({ timeoutMs: 15_000 })).rejects.toMatchObject({ code: ErrorCodes.RUN_FAILED });
    const task = await env.store.get((await bad.status()).nodes[0]!.taskId);
    expect(task).toMatchObject({ status: "FAILED", attempt: 1, error: { code: ErrorCodes.VALIDATION } });
  });

  it("retry() of a failed run re-runs only what failed: the branches that succeeded keep their outputs", async () => {
    const runs = new Map<number, number>();
    let broken = true;
    let doneOthers: () => void = () => {};
    const othersDone = new Promise<void>((resolve) => {
      doneOthers = resolve;
    });
    const nodes = [
      fn("three-r", () => [{ k: 0 }, { k: 1 }, { k: 2 }]),
      fn("flaky", async (i: { k: number }) => {
        runs.set(i.k, (runs.get(i.k) ?? 0) + 1);
        if (i.k !== 1) {
          if ((runs.get(0) ?? 0) + (runs.get(2) ?? 0) === 2) doneOthers();
          return { k: i.k * 10 };
        }
        if (broken) {
          await othersDone;
          throw new Error("not fixed yet");
        }
        return { k: 10 };
      }),
      fn("sum-r", (i: { ks: number[] }) => ({ total: i.ks.reduce((a, b) => a + b, 0) })),
    ];
    await worker(nodes);
    const run = await client.startGraph(
      {
        nodes: [
          { id: "s", type: "three-r", fanOut: true, next: ["w"] },
          { id: "w", type: "flaky", next: ["t"] },
          { id: "t", type: "sum-r", unites: { id: "s" }, inputs: { ks: "${{w.outputs.k}}" } },
        ],
      },
      null,
    );
    await expect(run.result({ timeoutMs: 15_000 })).rejects.toMatchObject({ code: ErrorCodes.RUN_FAILED });
    const failed = Object.fromEntries((await run.status()).nodes.map((n) => [n.instance, n.status]));
    expect(failed).toEqual({ "s@#1": "EXECUTED", "w@0#1": "EXECUTED", "w@1#1": "ERRORED", "w@2#1": "EXECUTED" });
    const failedTask = (await run.status()).nodes.find((n) => n.instance === "w@1#1")!.taskId;
    await expect(client.startGraph({ nodes: [{ id: "x", type: "three-r" }] }, null).then((r) => r.retry())).rejects.toMatchObject({
      code: ErrorCodes.VALIDATION,
      status: "RUNNING",
    });

    broken = false;
    await env.stopWorkers();
    expect(await run.retry()).toBe(run);
    // The failed try's late hand-off (a sweeper's, say) is stale: it does not fail the new try.
    await client.engine.handOff(failedTask);
    expect((await run.status()).status).toBe("RUNNING");
    await worker(nodes);
    expect(await run.result({ timeoutMs: 15_000 })).toEqual({ t: { total: 30 } });
    expect(Object.fromEntries(runs)).toEqual({ 0: 1, 1: 2, 2: 1 });
    const after = await run.status();
    expect(after.nodes.filter((n) => n.node === "t")).toHaveLength(1);
    // The retried node ran as a new task; the failed one is kept as it was.
    const retried = after.nodes.find((n) => n.instance === "w@1#1")!;
    expect(retried.taskId).toMatch(/:r1$/);
    expect((await env.store.get(retried.taskId.replace(/:r1$/, "")))?.status).toBe("FAILED");
  });
});

describe("a run's stream", () => {
  it("replays everything in order after the run ended, and has no gap when opened mid-run; the run's end comes last", async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    await worker([
      defineNode({
        type: "talk",
        execute: async (i: { who: string }, ctx) => {
          for (let k = 0; k < 5; k++) ctx.emit({ type: "text", delta: `${i.who}${k} ` });
          if (i.who === "b") await gate;
          for (let k = 5; k < 10; k++) ctx.emit({ type: "text", delta: `${i.who}${k} ` });
          return { said: i.who };
        },
      }),
    ]);
    const run = await client.startGraph(
      {
        nodes: [
          { id: "a", type: "talk", inputs: { who: "a" }, next: ["b"] },
          { id: "b", type: "talk", inputs: { who: "b" } },
        ],
      },
      null,
    );
    // Opened while b waits half-way through its events.
    const live: GraphStreamEvent[] = [];
    const reading = (async () => {
      for await (const e of run.stream({ timeoutMs: 15_000 })) live.push(e);
    })();
    const bTask = async () => (await run.status()).nodes.find((n) => n.node === "b")?.taskId;
    await waitFor(async () => {
      const id = await bTask();
      return id && (await env.events(id)).filter((e) => e.type === "text").length === 5;
    });
    release();
    await reading;
    const replayed: GraphStreamEvent[] = [];
    for await (const e of run.stream()) replayed.push(e);

    for (const events of [live, replayed]) {
      expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "SUCCEEDED" });
      for (const node of ["a", "b"]) {
        const own = events.filter(isNodeEvent).filter((e) => e.node === node);
        expect(own.filter((e) => e.type === "text").map((e) => (e as { delta: string }).delta)).toEqual(Array.from({ length: 10 }, (_, k) => `${node}${k} `));
        const seqs = own.map((e) => e.seq);
        expect(seqs).toEqual(seqs.map((_, i) => i + 1));
        // A node's node-finished comes after its own events.
        const finished = events.findIndex((e) => e.type === "node-finished" && e.node === node);
        expect(finished).toBeGreaterThan(events.lastIndexOf(own.at(-1)!));
      }
      expect(events.filter((e) => e.type === "node-started").map((e) => [e.node, !isNodeEvent(e) && e.instance])).toEqual([
        ["a", "a@#1"],
        ["b", "b@#1"],
      ]);
    }
    // The same events either way (their interleaving across nodes may differ).
    const names = (events: GraphStreamEvent[]) => events.map((e) => `${e.type}:${e.node ?? ""}:${isNodeEvent(e) ? e.seq : ""}`).sort();
    expect(names(replayed)).toEqual(names(live));
  });

  it("a node function runs an agent through the worker's executor (ctx.runAgent)", async () => {
    await worker([
      defineNode({
        type: "ask",
        execute: async (i: { q: string }, ctx) => {
          const answer = (await ctx.runAgent({ name: "oracle", model: "scripted:x", options: { scripted: { reply: "answer to {input}" } } }, i.q)) as {
            text: string;
          };
          return { said: answer.text };
        },
      }),
    ]);
    const run = await client.startGraph({ nodes: [{ id: "ask", type: "ask" }] }, { q: "life" });
    expect(await run.result({ timeoutMs: 15_000 })).toEqual({ ask: { said: "answer to life" } });
    // The agent's events are the node's: they are on its task's stream.
    const text = (await env.events((await run.status()).nodes[0]!.taskId)).filter((e) => e.type === "text");
    expect(text.length).toBeGreaterThan(0);
  });

  it("a router registered by name chooses the next node; a route outside `next` fails the node", async () => {
    await worker([fn("score", (i: { n: number }) => ({ n: i.n })), fn("high", () => "high"), fn("low", () => "low")], {
      routers: { byScore: (output) => ((output as { n: number }).n > 5 ? "high" : "low"), wrong: () => "nowhere" },
    });
    const graph = (router: string): GraphInput => ({
      nodes: [
        { id: "score", type: "score", router, next: ["high", "low"] },
        { id: "high", type: "high" },
        { id: "low", type: "low" },
      ],
    });
    expect(await (await client.startGraph(graph("byScore"), { n: 9 })).result({ timeoutMs: 15_000 })).toEqual({ high: "high" });
    expect(await (await client.startGraph(graph("byScore"), { n: 1 })).result({ timeoutMs: 15_000 })).toEqual({ low: "low" });
    const wrong = await client.startGraph(graph("wrong"), { n: 1 });
    await expect(wrong.result({ timeoutMs: 15_000 })).rejects.toMatchObject({
      code: ErrorCodes.RUN_FAILED,
      details: { cause: { code: ErrorCodes.INVALID_ROUTE } },
    });
  });

  it("a fan-out wider than the graph's maxFanOut fails its node with a clear error", async () => {
    await worker([fn("wide", (i: { n: number }) => Array.from({ length: i.n }, (_, k) => k)), fn("item", (k: number) => k)]);
    const graph: GraphInput = {
      maxFanOut: 5,
      nodes: [
        { id: "wide", type: "wide", fanOut: true, next: ["item"] },
        { id: "item", type: "item" },
      ],
    };
    expect(await (await client.startGraph(graph, { n: 5 })).result({ timeoutMs: 15_000 })).toEqual({ item: [0, 1, 2, 3, 4] });
    const run = await client.startGraph(graph, { n: 6 });
    const err = await run.result({ timeoutMs: 15_000 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.RUN_FAILED, details: { cause: { code: ErrorCodes.FANOUT_INVALID } } });
    expect((err as Error).message).toMatch(/returned 6 items, more than the run's maxFanOut of 5/);
  });

  it("a node output bigger than its worker's maxOutputBytes fails the node (OUTPUT_TOO_LARGE)", async () => {
    await worker([fn("big", (i: { n: number }) => "x".repeat(i.n))], { maxOutputBytes: 1000 });
    expect(await (await client.startGraph({ nodes: [{ id: "big", type: "big" }] }, { n: 500 })).result({ timeoutMs: 15_000 })).toEqual({
      big: "x".repeat(500),
    });
    const run = await client.startGraph({ nodes: [{ id: "big", type: "big" }] }, { n: 2000 });
    await expect(run.result({ timeoutMs: 15_000 })).rejects.toMatchObject({
      code: ErrorCodes.RUN_FAILED,
      details: { cause: { code: ErrorCodes.OUTPUT_TOO_LARGE } },
    });
  });
});
