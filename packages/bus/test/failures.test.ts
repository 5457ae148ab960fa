import { ErrorCodes, UnrecoverableError } from "@flotilla/core";
import { echo, waitFor } from "@flotilla/testing";
import { describe, expect, it } from "vitest";
import { busWorker, subscribe } from "../src/index.ts";
import { useBus } from "./helpers.ts";

const t = useBus("bus-failures");
const fast = { delayMs: 50, maxDelayMs: 50, jitter: 0 };

describe("failed deliveries", () => {
  it("a throwing handler is delivered maxRetries + 1 times, with the count and the last error, then dead-lettered with the reason; good events keep flowing", async () => {
    const seen: Array<{ n: number; delivery: number; last?: string }> = [];
    const publishedAt = new Map<number, number[]>();
    await t.serve({
      subscriptions: [
        subscribe(
          "jobs",
          async (event, ctx) => {
            const n = (event.payload as { n: number }).n;
            seen.push({ n, delivery: ctx.deliveryCount, ...(ctx.lastError && { last: ctx.lastError.message }) });
            publishedAt.set(n, [...(publishedAt.get(n) ?? []), ctx.publishedAt]);
            if (n === 0) throw new Error(`boom ${ctx.deliveryCount}`);
            return { ok: n };
          },
          { name: "worker", maxRetries: 2, backoff: fast },
        ),
      ],
    });
    const before = Date.now();
    const ids = await t.bus.publishMany([0, 1, 2].map((n) => ({ topic: "jobs", payload: { n } })));
    await waitFor(async () => (await t.bus.deadLetters.list("jobs", "worker")).length === 1, { timeoutMs: 10_000 });
    // ctx.publishedAt is the publish time (the id's, Redis's clock), on every delivery, redeliveries too.
    expect([...publishedAt.keys()].sort()).toEqual([0, 1, 2]);
    for (const [n, times] of publishedAt) expect(times).toEqual(times.map(() => Number(ids[n]!.split("-")[0])));
    expect(Math.abs(publishedAt.get(0)![0]! - before)).toBeLessThan(5000);
    expect(seen.filter((s) => s.n === 0)).toEqual([
      { n: 0, delivery: 1 },
      { n: 0, delivery: 2, last: "boom 1" },
      { n: 0, delivery: 3, last: "boom 2" },
    ]);
    expect(seen.filter((s) => s.n !== 0).map((s) => s.delivery)).toEqual([1, 1]);
    const [dead] = await t.bus.deadLetters.list("jobs", "worker");
    expect(dead).toMatchObject({ reason: "RETRIES_EXHAUSTED", attempts: 3, error: { message: "boom 3" }, event: { payload: { n: 0 } } });
    const [group] = await t.bus.groups("jobs");
    expect(group).toMatchObject({ pending: 0, retrying: 0, deadLetters: 1, counts: { acked: 2, retried: 2, dead: 1 } });
    // Retry state lives with the pending entry only: nothing is left of the failed event once it is settled.
    expect(await t.env.redis.hlen(t.env.keys.topicErrors("jobs", "worker"))).toBe(0);
    expect(await t.env.redis.zcard(t.env.keys.topicRetries("jobs", "worker"))).toBe(0);
  });

  it("a failed event waits out its backoff even when that is longer than the lease: no consumer takes it early", async () => {
    const at: number[] = [];
    const sub = subscribe(
      "patient",
      () => {
        at.push(Date.now());
        if (at.length === 1) throw new Error("once");
        return null;
      },
      { name: "p", reclaimAfterMs: 400, backoff: { delayMs: 1500, maxDelayMs: 1500, jitter: 0 } },
    );
    // Two consumers, each looking for lapsed deliveries every 200 ms.
    await t.serve({ subscriptions: [sub] }, "c1");
    await t.serve({ subscriptions: [sub] }, "c2");
    await t.bus.publish("patient", { n: 1 });
    await waitFor(() => at.length === 2, { timeoutMs: 10_000 });
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(1400);
    // Settled on its second delivery: its last error goes with it.
    await waitFor(async () => (await t.bus.groups("patient"))[0]?.counts.acked === 1);
    expect(await t.env.redis.hlen(t.env.keys.topicErrors("patient", "p"))).toBe(0);
  });

  it("deadLetter: false acknowledges and drops an event that failed for good (after maxRetries, or unrecoverable): nothing in the dead letters; a requester still gets the error", async () => {
    const deliveries: Record<number, number[]> = {};
    await t.serve({
      subscriptions: [
        subscribe(
          "droppy",
          async (event, ctx) => {
            const n = (event.payload as { n: number }).n;
            deliveries[n] = [...(deliveries[n] ?? []), ctx.deliveryCount];
            if (n === 0) throw new Error("always");
            if (n === 1) throw new UnrecoverableError("never");
            await t.env.redis.hincrby(`${t.env.prefix}:ok`, String(n), 1);
            return null;
          },
          { name: "d", maxRetries: 2, backoff: fast, deadLetter: false },
        ),
      ],
    });
    await t.bus.publishMany([0, 1, 2, 3].map((n) => ({ topic: "droppy", payload: { n } })));
    await waitFor(async () => (await t.bus.groups("droppy"))[0]?.counts.acked === 4, { timeoutMs: 10_000 });
    expect(deliveries).toEqual({ 0: [1, 2, 3], 1: [1], 2: [1], 3: [1] });
    expect(await t.counts("ok")).toEqual({ 2: 1, 3: 1 });
    expect(await t.bus.deadLetters.list("droppy", "d")).toEqual([]);
    expect((await t.bus.groups("droppy"))[0]).toMatchObject({ pending: 0, retrying: 0, deadLetters: 0, counts: { acked: 4, retried: 2, dead: 0 } });
    expect(await t.env.redis.hlen(t.env.keys.topicErrors("droppy", "d"))).toBe(0);
    expect(await t.env.redis.zcard(t.env.keys.topicRetries("droppy", "d"))).toBe(0);
    // Dropped, but failed for good all the same: request() rejects with the error instead of timing out.
    await expect(t.bus.request("droppy", { n: 1 }, { timeoutMs: 10_000 })).rejects.toMatchObject({ code: ErrorCodes.UNRECOVERABLE });
  });

  it("an UnrecoverableError and a malformed entry written raw go to the dead letters at once, with their reasons", async () => {
    let calls = 0;
    await t.serve({
      subscriptions: [
        subscribe(
          "raw",
          (event) => {
            calls++;
            if ((event.payload as { n: number }).n === 1) throw new UnrecoverableError("never valid");
            return null;
          },
          { name: "h", maxRetries: 5, backoff: fast },
        ),
      ],
    });
    await t.bus.publish("raw", { n: 1 });
    await t.env.redis.xadd(t.env.keys.topic("raw"), "*", "d", "{not json");
    await t.env.redis.xadd(t.env.keys.topic("raw"), "*", "x", "no payload field");
    await t.bus.publish("raw", { n: 2 });
    await waitFor(async () => (await t.bus.deadLetters.list("raw", "h")).length === 3, { timeoutMs: 10_000 });
    const dead = await t.bus.deadLetters.list("raw", "h");
    expect(dead.map((d) => [d.reason, d.attempts])).toEqual([
      [ErrorCodes.UNRECOVERABLE, 1],
      [ErrorCodes.MALFORMED_EVENT, 1],
      [ErrorCodes.MALFORMED_EVENT, 1],
    ]);
    expect(dead[1]).toMatchObject({ event: undefined, raw: { d: "{not json" } });
    expect(dead[1]!.error?.message).toContain("not JSON");
    await waitFor(async () => calls === 2);
  });

  it("dead letters are re-published as new events (every subscription gets them), then purged", async () => {
    let broken = true;
    await t.serve({
      subscriptions: [
        subscribe(
          "fix",
          async (event) => {
            if (broken) throw new UnrecoverableError("down");
            await t.env.redis.hincrby(`${t.env.prefix}:fixed`, String((event.payload as { n: number }).n), 1);
            return null;
          },
          { name: "h", backoff: fast },
        ),
      ],
    });
    await t.bus.publishMany([1, 2, 3].map((n) => ({ topic: "fix", payload: { n } })));
    await waitFor(async () => (await t.bus.deadLetters.list("fix", "h")).length === 3, { timeoutMs: 10_000 });
    broken = false;
    const [first, ...rest] = await t.bus.deadLetters.list("fix", "h");
    const republished = await t.bus.deadLetters.republish("fix", "h", [first!.id]);
    expect(Object.keys(republished)).toEqual([first!.id]);
    await waitFor(async () => (await t.counts("fixed"))["1"] === 1, { timeoutMs: 10_000 });
    await expect(t.bus.deadLetters.republish("fix", "h", [first!.id])).rejects.toMatchObject({ code: ErrorCodes.DEAD_LETTER_NOT_FOUND });
    expect((await t.bus.deadLetters.get("fix", "h", rest[0]!.id))?.eventId).toBe(rest[0]!.eventId);
    expect(await t.bus.deadLetters.purge("fix", "h")).toBe(2);
    expect(await t.bus.deadLetters.list("fix", "h")).toEqual([]);
  });

  it("an agent nobody knows fails its task, and the event is dead-lettered with the task's error", async () => {
    await t.env.worker({
      bus: busWorker({ subscriptions: [subscribe("ask", { name: "nobody-knows", model: "scripted:x" }, { name: "agent", maxRetries: 0 })] }),
      agents: [echo()],
    });
    const id = await t.bus.publish("ask", "hello");
    await waitFor(async () => (await t.bus.deadLetters.list("ask", "agent")).length === 1, { timeoutMs: 15_000 });
    const [dead] = await t.bus.deadLetters.list("ask", "agent");
    expect(dead).toMatchObject({ eventId: id, reason: ErrorCodes.TASK_FAILED });
    expect(dead!.error?.message).toContain("nobody-knows");
  });
});

describe("time limits", () => {
  it("a handler past its timeoutMs is aborted and its delivery fails with TIMEOUT (retried, then dead-lettered)", async () => {
    const aborted: string[] = [];
    await t.serve({
      subscriptions: [
        subscribe(
          "slowpoke",
          (_event, ctx) =>
            new Promise((_resolve, reject) => {
              ctx.signal.addEventListener("abort", () => {
                aborted.push(String(ctx.deliveryCount));
                reject(ctx.signal.reason);
              });
            }),
          { name: "s", timeoutMs: 100, maxRetries: 1, backoff: fast },
        ),
      ],
    });
    await t.bus.publish("slowpoke", {});
    await waitFor(async () => (await t.bus.deadLetters.list("slowpoke", "s")).length === 1, { timeoutMs: 10_000 });
    expect((await t.bus.deadLetters.list("slowpoke", "s"))[0]).toMatchObject({ reason: "RETRIES_EXHAUSTED", attempts: 2, error: { code: ErrorCodes.TIMEOUT } });
    expect(aborted).toEqual(["1", "2"]);
  });
});
