import { Agent } from "@flotilla/agent";
import { type JsonValue, UnrecoverableError } from "@flotilla/core";
import { collect, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import type { ExecutionContext, Executor } from "@flotilla/worker";
import { describe, expect, it } from "vitest";
import { TaskFailedError } from "../src/index.ts";

/** A real executor whose behaviour depends on the attempt: fails (or hangs) on the attempts listed. */
function flaky(plan: (attempt: number, ctx: ExecutionContext) => Promise<JsonValue>): Executor {
  return { execute: (ctx) => plan(ctx.attempt, ctx) };
}
const agent = new Agent({ name: "flaky", model: "scripted:x" });

describe("retries", () => {
  const env = useFlotilla("retries");

  it("retries a failing task with exponential backoff; result() waits for the final attempt", async () => {
    await env.worker({
      queues: ["retry"],
      executor: flaky(async (attempt, ctx) => {
        ctx.emit({ type: "text", delta: `try ${attempt}` });
        if (attempt < 3) throw new Error(`transient failure ${attempt}`);
        return { ok: attempt };
      }),
    });
    const client = env.client();
    const handle = await client.submit(agent, "x", {
      queue: "retry",
      maxRetries: 3,
      backoff: { delayMs: 80, jitter: 0 },
      detailed: true,
    });
    expect(await handle.result({ timeoutMs: 10_000 })).toEqual({ ok: 3 });
    expect(await handle.status()).toMatchObject({ status: "COMPLETED", attempt: 3, retries: 2 });
    const events = await collect(handle.stream());
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const statuses = events.filter((e) => e.type === "status").map((e) => `${(e as { status: string }).status}:${e.attempt}`);
    expect(statuses).toEqual(["running:1", "retrying:1", "running:2", "retrying:2", "running:3", "completed:3"]);
    const at = (status: string, attempt: number) => events.find((e) => e.type === "status" && e.status === status && e.attempt === attempt)!.ts;
    expect(at("running", 2) - at("retrying", 1)).toBeGreaterThanOrEqual(80);
    expect(at("running", 3) - at("retrying", 2)).toBeGreaterThanOrEqual(160);
    expect(events.filter((e) => e.type === "error").map((e) => (e as { message: string }).message)).toEqual(["transient failure 1", "transient failure 2"]);
    expect(await client.deadLetters.list("retry")).toEqual([]);
  });

  it("gives each retry a fresh timeout", async () => {
    await env.worker({
      queues: ["slow-first"],
      executor: flaky(async (attempt, ctx) => {
        if (attempt === 1) await new Promise((r) => setTimeout(r, 5000, ctx)); // far past the timeout
        return "fast second time";
      }),
    });
    const handle = await env.client().submit(agent, "x", { queue: "slow-first", timeoutMs: 200, maxRetries: 1, backoff: { delayMs: 10 } });
    expect(await handle.result({ timeoutMs: 10_000 })).toBe("fast second time");
    const retrying = (await collect(handle.stream())).find((e) => e.type === "status" && e.status === "retrying");
    expect(retrying).toMatchObject({ error: { code: "TIMEOUT" } });
  });

  it("does not retry an UnrecoverableError, nor an error marked retryable: false", async () => {
    await env.worker({
      queues: ["fatal"],
      executor: flaky(async (_attempt, ctx) => {
        if (ctx.input === "unrecoverable") throw new UnrecoverableError("the input can never work", "BAD_INPUT");
        throw Object.assign(new Error("quota gone for good"), { retryable: false });
      }),
    });
    const client = env.client();
    for (const input of ["unrecoverable", "flagged"]) {
      const handle = await client.submit(agent, input, { queue: "fatal", maxRetries: 5 });
      const err = await handle.result({ timeoutMs: 10_000 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TaskFailedError);
      expect(await handle.status()).toMatchObject({ status: "FAILED", attempt: 1, retries: 0 });
    }
  });

  it("dead-letters a task whose retries ran out, with attempts and last error; re-queued, it runs again", async () => {
    let healed = false;
    await env.worker({
      queues: ["doomed"],
      executor: flaky(async (attempt) => {
        if (!healed) throw new Error(`still broken on attempt ${attempt}`);
        return "healed";
      }),
    });
    const client = env.client();
    const handle = await client.submit(agent, "x", { queue: "doomed", maxRetries: 1, backoff: { delayMs: 10 } });
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toBeInstanceOf(TaskFailedError);
    const [letter] = await waitFor(async () => {
      const l = await client.deadLetters.list("doomed");
      return l.length ? l : undefined;
    });
    expect(letter).toMatchObject({
      taskId: handle.taskId,
      extra: { attempts: 2, lastError: { message: "still broken on attempt 2", code: "AGENT_ERROR" } },
    });
    expect(letter!.reason).toMatch(/failed after 2 attempts: \[AGENT_ERROR\] still broken on attempt 2/);
    expect(await client.deadLetters.get("doomed", letter!.id)).toMatchObject({ taskId: handle.taskId });

    healed = true;
    const again = await client.deadLetters.requeue("doomed", letter!.id);
    expect(again.taskId).toBe(handle.taskId);
    expect(await again.result({ timeoutMs: 10_000 })).toBe("healed");
    expect(await again.status()).toMatchObject({ status: "COMPLETED", attempt: 3 });
    expect(await client.deadLetters.list("doomed")).toEqual([]);
    // Its stream starts afresh with the new run.
    const statuses = (await collect(again.stream())).filter((e) => e.type === "status").map((e) => (e as { status: string }).status);
    expect(statuses).toEqual(["running", "completed"]);
    await expect(client.deadLetters.requeue("doomed", letter!.id)).rejects.toMatchObject({ code: "DEAD_LETTER_NOT_FOUND", name: "DeadLetterNotFoundError" });
  });
});

describe("delayed and scheduled tasks", () => {
  const env = useFlotilla("delayed");

  it("holds a delayed task back until it is due, then any worker runs it once", async () => {
    const client = env.client();
    await Promise.all([env.worker({ queues: ["later"], promoteIntervalMs: 50 }), env.worker({ queues: ["later"], promoteIntervalMs: 50 })]);
    const delayed = await Promise.all(Array.from({ length: 20 }, (_, i) => client.submit(agent, `d${i}`, { queue: "later", delayMs: 400 })));
    const depth = await client.fleet.queueDepth("later");
    expect(depth.delayed + depth.waiting + depth.inFlight).toBeGreaterThan(0);
    expect((await delayed[0]!.status()).status).toBe("PENDING");
    const results = await Promise.all(delayed.map((h) => h.result({ timeoutMs: 10_000 })));
    expect(results).toHaveLength(20);
    for (const h of delayed) {
      const s = await h.status();
      expect(s.attempt).toBe(1);
      expect(s.startedAt! - s.createdAt).toBeGreaterThanOrEqual(400);
      expect(s.runAt).toBe(s.createdAt + 400);
    }
    expect(await client.fleet.queueDepth("later")).toEqual({ waiting: 0, inFlight: 0, delayed: 0 });
  });

  it("runs a task whose runAt has passed straight away, and refuses delayMs with runAt", async () => {
    const client = env.client();
    await env.worker({ queues: ["past"] });
    const handle = await client.submit(agent, "p", { queue: "past", runAt: new Date(Date.now() - 1000) });
    expect(await handle.result({ timeoutMs: 10_000 })).toMatchObject({ text: "Echo: p" });
    await expect(client.submit(agent, "x", { delayMs: 1, runAt: Date.now() })).rejects.toMatchObject({ field: "runAt" });
  });
});
