// What the operator surfaces (CLI, gateway) read and do through the client: queues at a glance,
// a failed task run again, dead letters purged, alerts read back.
// @cluster: queues at a glance, fleet and listings: reads across slots
import { type JsonValue, NotReplicatedError, UnrecoverableError, ValidationError } from "@flotilla/core";
import { redisStreamSink } from "@flotilla/metrics";
import { onCluster, scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import type { Executor } from "@flotilla/worker";
import { describe, expect, it } from "vitest";

const env = useFlotilla("operator-readers");

describe("operator readers", () => {
  it("queues(): waiting by lane, in flight, delayed and dead, and the outcomes of the last minute", async () => {
    const client = env.client();
    const agent = scripted("plain");
    await client.submit(agent, "h", { queue: "ops-q", priority: "high" });
    await client.submit(agent, "n1", { queue: "ops-q" });
    await client.submit(agent, "n2", { queue: "ops-q" });
    await client.submit(agent, "l", { queue: "ops-q", priority: "low" });
    await client.submit(agent, "later", { queue: "ops-q", delayMs: 60_000 });
    const before = (await client.fleet.queues()).find((q) => q.queue === "ops-q");
    expect(before).toMatchObject({ waiting: 4, lanes: { high: 1, normal: 2, low: 1 }, inFlight: 0, delayed: 1, dead: 0, workers: 0 });
    expect(before!.oldestWaitMs).toBeGreaterThanOrEqual(0);

    await env.worker({ queues: ["ops-q"] });
    const failing = await client.submit(scripted("broken", { failWith: "no" }), "x", { queue: "ops-q" });
    await expect(failing.result({ timeoutMs: 10_000 })).rejects.toMatchObject({ code: "TASK_FAILED" });
    const after = await waitFor(async () => {
      const q = (await client.fleet.queues()).find((x) => x.queue === "ops-q");
      return q && q.recent.completed === 4 ? q : undefined;
    });
    expect(after).toMatchObject({ waiting: 0, delayed: 1, dead: 1, recent: { completed: 4, failed: 1, windowMs: 60_000 }, workers: 1 });
    expect(after.waitP95Ms).toBeDefined();
  });

  it("retry(): a FAILED task runs again from its dead letter; one that did not fail is refused", async () => {
    let calls = 0;
    const flaky: Executor = {
      execute: async (): Promise<JsonValue> => {
        calls++;
        if (calls === 1) throw new UnrecoverableError("down for now");
        return "ok";
      },
    };
    await env.worker({ queues: ["ops-retry"], executor: flaky });
    const client = env.client();
    const handle = await client.submit(scripted("flaky"), "x", { queue: "ops-retry" });
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toMatchObject({ taskError: { code: "UNRECOVERABLE" } });
    expect(await client.deadLetters.forTask(handle.taskId)).toMatchObject({ taskId: handle.taskId });
    await handle.retry();
    expect(await handle.result({ timeoutMs: 10_000 })).toBe("ok");
    expect(await handle.status()).toMatchObject({ status: "COMPLETED", retries: 0 });
    expect(await client.deadLetters.forTask(handle.taskId)).toBeUndefined();
    await expect(handle.retry()).rejects.toBeInstanceOf(ValidationError);
  });

  it("deadLetters.purge(): deletes a queue's dead letters and says how many", async () => {
    await env.worker({ queues: ["ops-purge"] });
    const client = env.client();
    const broken = scripted("broken", { failWith: "no" });
    const handles = await client.submitMany([1, 2, 3].map((i) => ({ agent: broken, input: `x${i}`, options: { queue: "ops-purge" } })));
    await Promise.all(handles.map((h) => h.result({ timeoutMs: 10_000 }).catch(() => {})));
    expect(await client.deadLetters.list("ops-purge")).toHaveLength(3);
    expect(await client.deadLetters.purge("ops-purge")).toBe(3);
    expect(await client.deadLetters.list("ops-purge")).toEqual([]);
    expect(await client.deadLetters.purge("ops-purge")).toBe(0);
    // Their records stay FAILED; with no letter left, retry says so.
    await expect(handles[0]!.retry()).rejects.toMatchObject({ code: "DEAD_LETTER_NOT_FOUND" });
  });

  it("fleet.alerts(): the events the workers' stream sink kept, newest first, and those firing now", async () => {
    const sink = redisStreamSink(env.redis, { prefix: env.prefix });
    const base = { severity: "warning" as const, message: "m", value: 2, threshold: 1, since: 1, at: 1 };
    await sink({ ...base, id: "a1", rule: "queue_backlog", queue: "q1", state: "firing" });
    await sink({ ...base, id: "a2", rule: "queue_backlog", queue: "q2", state: "firing" });
    await sink({ ...base, id: "a1", rule: "queue_backlog", queue: "q1", state: "resolved" });
    await env.redis.xadd(env.keys.alerts(), "*", "event", "not json");
    const { events, firing } = await env.client().fleet.alerts();
    expect(events.map((e) => `${e.queue}:${e.state}`)).toEqual(["q1:resolved", "q2:firing", "q1:firing"]);
    expect(firing.map((e) => e.queue)).toEqual(["q2"]);
  });

  it("durableSubmit: a submit that fewer replicas acknowledge in time than asked is a NotReplicatedError; its task is on the master", async () => {
    // More replicas than any test Redis has (the cluster's masters have one each).
    const client = env.client({ durableSubmit: { replicas: 5, timeoutMs: 50 } });
    const err = await client.submit(scripted("d"), "x", { queue: "ops-durable" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotReplicatedError);
    const { taskIds } = err as NotReplicatedError;
    expect(taskIds).toHaveLength(1);
    expect(await client.handle(taskIds[0]!).status()).toMatchObject({ status: "PENDING" });
    const many = await client
      .submitMany([1, 2].map((i) => ({ agent: scripted("d"), input: `m${i}`, options: { queue: "ops-durable" } })))
      .catch((e: unknown) => e);
    expect(many).toMatchObject({ code: "NOT_REPLICATED", taskIds: [expect.any(String), expect.any(String)] });
    expect(() => env.client({ durableSubmit: { replicas: 0 } })).toThrow(/durableSubmit/);
    if (onCluster()) {
      // Each master of the suite's cluster has a replica: WAIT asked of the slot's master says so.
      const replicated = env.client({ durableSubmit: { replicas: 1, timeoutMs: 5_000 } });
      for (const queue of ["ops-durable", "ops-durable-2", "ops-durable-3"]) await replicated.submit(scripted("d"), "y", { queue });
    }
  });

  it("durableSubmit: submits at once each end within their own timeoutMs, and the client's other calls never wait behind them", async () => {
    // WAIT blocks the connection it is sent on: sent on the client's shared one, ten submits were
    // refused after 1, 2, … 10 timeouts, and a read made meanwhile waited behind them all.
    const timeoutMs = 1_000;
    const client = env.client({ durableSubmit: { replicas: 5, timeoutMs } });
    await client.submit(scripted("d"), "warm", { queue: "ops-durable-c" }).catch(() => {}); // queue known, connections open
    const settled: string[] = [];
    const started = Date.now();
    const submits = Array.from({ length: 10 }, (_, i) =>
      client.submit(scripted("d"), `c${i}`, { queue: i % 2 ? "ops-durable-c" : "ops-durable-d" }).then(
        () => ({ ok: true, ms: Date.now() - started }),
        (err: unknown) => {
          settled.push(`submit ${i}`);
          return { ok: false, err, ms: Date.now() - started };
        },
      ),
    );
    // Once every submit's task is written (so their replica checks are under way), a read of the same client.
    const reader = env.client();
    await waitFor(async () => {
      const [c, d] = await Promise.all([reader.fleet.queueDepth("ops-durable-c"), reader.fleet.queueDepth("ops-durable-d")]);
      return c.waiting >= 6 && d.waiting >= 5;
    });
    const depth = client.fleet.queueDepth("ops-durable-c").then((d) => {
      settled.push("queueDepth");
      return d;
    });
    const outcomes = await Promise.all(submits);
    expect((await depth).waiting).toBe(6);
    expect(settled[0]).toBe("queueDepth");
    for (const o of outcomes) {
      expect(o).toMatchObject({ ok: false, err: expect.any(NotReplicatedError) });
      // Refused once its own timeout had passed, not before, and not after the others' (2 s of margin for a loaded machine).
      expect(o.ms).toBeGreaterThanOrEqual(timeoutMs - 50);
      expect(o.ms).toBeLessThan(timeoutMs + 2_000);
    }
    // Every refused task is on the master, waiting, as a single refused submit leaves it.
    const ids = outcomes.flatMap((o) => ((o as { err?: NotReplicatedError }).err?.taskIds ?? []) as string[]);
    expect(ids).toHaveLength(10);
    for (const id of ids) expect(await client.handle(id).status()).toMatchObject({ status: "PENDING" });
  }, 30_000);
});
