// @cluster: a cancel ends node tasks in their queues' slots and records them in the run's
import { ErrorCodes, type JsonValue } from "@flotilla/core";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, expectTypeOf, it } from "vitest";
import { defineNode, GraphClient, type GraphRunHandle, graphWorker, RunNotFoundError, RunNotRetryableError } from "../src/index.ts";

const env = useFlotilla("graph-cancel");
const client = new GraphClient({ redis: env.connection, prefix: env.prefix });
// Another process's view: its own connections, nothing cached from the cancel.
const reader = new GraphClient({ redis: env.connection, prefix: env.prefix });
afterAll(() => Promise.all([client.close(), reader.close()]));

const WIDTH = 100;

describe("when cancel() resolves, every node instance reads a final state", () => {
  it(`${WIDTH} queued branches read CANCELLED (from another client), the running ones CANCELLED once their workers record them; none starts afterwards`, async () => {
    const started: string[] = [];
    let cancelledAt = Number.POSITIVE_INFINITY;
    const startedLate: string[] = [];
    await env.worker({
      concurrency: 2,
      graph: graphWorker({
        handoffGraceMs: 60_000,
        nodes: [
          defineNode({ type: "c-split", execute: (n: number) => Array.from({ length: n }, (_, k) => k) }),
          defineNode({
            type: "c-branch",
            execute: (_: number, ctx) =>
              new Promise<JsonValue>((_, reject) => {
                started.push(ctx.node.instance);
                if (Date.now() >= cancelledAt) startedLate.push(ctx.node.instance);
                // Slow to stop: its instance reads CANCELLING meanwhile.
                ctx.signal.addEventListener("abort", () => setTimeout(() => reject(ctx.signal.reason), 300));
              }),
          }),
        ],
      }),
    });
    const run = await client.startGraph(
      {
        nodes: [
          { id: "split", type: "c-split", fanOut: true, next: ["branch"] },
          { id: "branch", type: "c-branch" },
        ],
      },
      WIDTH,
    );
    await waitFor(async () => started.length === 2 && (await run.status()).nodes.filter((n) => n.status === "QUEUED").length === WIDTH - 2, {
      what: "two branches running, the rest queued",
    });
    expect(await run.cancel("enough")).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    cancelledAt = Date.now();

    const seen = await reader.run(run.runId).status();
    expect(seen.status).toBe("CANCELLED");
    const branches = seen.nodes.filter((n) => n.node === "branch");
    expect(branches).toHaveLength(WIDTH);
    const running = new Set(started);
    // No instance reads CREATED or QUEUED: the queued ones are CANCELLED; the two running ones may
    // still be stopping (CANCELLING, see the next test) or already recorded by their worker.
    expect(branches.filter((n) => !running.has(n.instance)).map((n) => n.status)).toEqual(Array(WIDTH - 2).fill("CANCELLED"));
    for (const n of branches.filter((b) => running.has(b.instance))) expect(["CANCELLING", "CANCELLED"]).toContain(n.status);
    // Their tasks ended as the run says.
    const tasks = await env.store.getMany(branches.filter((n) => !running.has(n.instance)).map((n) => n.taskId));
    expect(tasks.map((t) => t?.status)).toEqual(Array(WIDTH - 2).fill("CANCELLED"));

    // The running ones end CANCELLED once their workers record them.
    await waitFor(async () => (await reader.run(run.runId).status()).nodes.every((n) => n.status === "EXECUTED" || n.status === "CANCELLED"), {
      what: "the running branches' ends recorded",
    });
    expect(started).toHaveLength(2);
    expect(startedLate).toEqual([]);
  });

  it("a running node reads CANCELLING until its worker records its end", async () => {
    // Driven by hand: the node's task reads RUNNING as a worker's would, and that worker is slow to stop.
    const run = await client.startGraph({ nodes: [{ id: "busy", type: "busy-nobody" }] }, null);
    const { taskId } = (await run.status()).nodes[0]!;
    await env.redis.hset(env.keys.task(taskId), "status", "RUNNING", "attempt", 1);
    expect(await run.cancel("stop")).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    expect((await reader.run(run.runId).status()).nodes.map((n) => n.status)).toEqual(["CANCELLING"]);
    // Its cancel is stored for its worker.
    expect(await env.store.get(taskId)).toMatchObject({ status: "RUNNING", cancelReason: "stop" });
    // Its worker stops it and hands the end on.
    await env.redis.hset(env.keys.task(taskId), "status", "CANCELLED", "error", JSON.stringify({ message: "stop", code: ErrorCodes.CANCELLED }));
    await client.engine.handOff(taskId);
    expect((await reader.run(run.runId).status()).nodes.map((n) => n.status)).toEqual(["CANCELLED"]);
  });

  it("a node made by a hand-off whose task is not yet created when the run is cancelled never runs: its later create is a no-op", async () => {
    // Driven by hand: nobody serves these node types, so nothing but the test moves the run.
    const run = await client.startGraph(
      {
        nodes: [
          { id: "first", type: "late-first", next: ["second"] },
          { id: "second", type: "late-second" },
        ],
      },
      null,
    );
    // A worker's hand-off, step one: the first node's end recorded, the second made (its task is step two).
    const { replies } = await client.engine.runs.advance(run.runId, [{ instance: "first@#1", outcome: "EXECUTED", output: "{}" }], 60_000);
    expect(replies).toEqual([{ reply: "ok", created: ["second@#1"] }]);
    const second = (await run.status()).nodes.find((n) => n.instance === "second@#1")!;
    expect(await env.store.get(second.taskId)).toBeUndefined();

    expect(await run.cancel("stop")).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    expect((await reader.run(run.runId).status()).nodes.find((n) => n.instance === "second@#1")?.status).toBe("CANCELLED");

    // Step two, late: the create finds the name closed.
    await client.engine.createTasks(run.runId, ["second@#1"]);
    expect(await env.store.get(second.taskId)).toMatchObject({ status: "CANCELLED", attempt: 0, error: { code: ErrorCodes.CANCELLED, message: "stop" } });
    // Nothing was enqueued: no worker can ever claim it.
    expect(await env.redis.xlen(env.keys.lane("node.late-second", "normal"))).toBe(0);
    expect(await env.redis.zcard(env.keys.handoff("node.late-second"))).toBe(0);
  });

  it("a node task that ended before the cancel reached it hands its own end on: it keeps its output", async () => {
    const run = await client.startGraph(
      {
        nodes: [
          { id: "a", type: "ended-a", next: ["b"] },
          { id: "b", type: "ended-b" },
        ],
      },
      null,
    );
    // a's task completed on a worker whose hand-off has not come yet.
    const a = (await run.status()).nodes[0]!;
    await env.redis.hset(env.keys.task(a.taskId), "status", "COMPLETED", "result", JSON.stringify({ output: { done: 1 } }));
    expect(await run.cancel()).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    expect((await run.status()).nodes).toMatchObject([{ instance: "a@#1", status: "EXECUTED", output: { done: 1 } }]);
  });
});

describe("cancel() and retry() answer with typed outcomes; a refusal is an error", () => {
  it("cancel: cancelled, then finished (with the status); a run that does not exist: RunNotFoundError", async () => {
    const run = await client.startGraph({ nodes: [{ id: "idle", type: "nobody-serves-this" }] }, null);
    expectTypeOf<GraphRunHandle["cancel"]>().returns.resolves.toEqualTypeOf<{
      outcome: "cancelled" | "finished";
      status: "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELLED";
    }>();
    expect(await run.cancel("one")).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    expect(await run.cancel("two")).toEqual({ outcome: "finished", status: "CANCELLED" });
    const missing = client.run("no-such-run");
    await expect(missing.cancel()).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(missing.cancel()).rejects.toMatchObject({ code: ErrorCodes.RUN_NOT_FOUND, runId: "no-such-run" });
  });

  it("retry: refused for a RUNNING or SUCCEEDED run (RunNotRetryableError, VALIDATION_ERROR, with the status), RUN_NOT_FOUND for none; resolves with the handle", async () => {
    await env.worker({ graph: graphWorker({ nodes: [defineNode({ type: "r-ok", execute: () => "ok" })] }) });
    expectTypeOf<GraphRunHandle["retry"]>().returns.resolves.toEqualTypeOf<GraphRunHandle>();
    const running = await client.startGraph({ nodes: [{ id: "idle", type: "nobody-serves-this" }] }, null);
    const refused = await running.retry().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RunNotRetryableError);
    expect(refused).toMatchObject({ code: ErrorCodes.VALIDATION, field: "runId", status: "RUNNING", runId: running.runId });
    expect((refused as Error).message).toMatch(/is RUNNING; only a FAILED or CANCELLED run can be retried/);

    const done = await client.startGraph({ nodes: [{ id: "ok", type: "r-ok" }] }, null);
    await done.result({ timeoutMs: 10_000 });
    await expect(done.retry()).rejects.toMatchObject({ code: ErrorCodes.VALIDATION, status: "SUCCEEDED" });
    await expect(client.run("no-such-run").retry()).rejects.toMatchObject({ code: ErrorCodes.RUN_NOT_FOUND });

    await running.cancel();
    expect(await running.retry()).toBe(running);
    expect((await running.status()).status).toBe("RUNNING");
    await running.cancel();
  });
});
