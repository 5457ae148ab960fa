// @cluster: retries wait in each queue's delayed set and are promoted on its slot
import { Agent } from "@flotilla/agent";
import { type JsonValue, TaskFailedError, UnrecoverableError } from "@flotilla/core";
import { collect, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import type { ExecutionContext, Executor } from "../src/index.ts";

/** A real executor whose behaviour depends on the attempt: fails (or hangs) on the attempts listed. */
function flaky(plan: (attempt: number, ctx: ExecutionContext) => Promise<JsonValue>): Executor {
  return { execute: (ctx) => plan(ctx.attempt, ctx) };
}
const agent = new Agent({ name: "flaky", model: "scripted:x" });

describe("retries", () => {
  const env = useFlotilla("retries");

  it("gives the executor the task's retry policy: its maxRetries, and its own backoff or else the worker's", async () => {
    const seen: Array<Pick<ExecutionContext, "input" | "maxRetries" | "backoff">> = [];
    await env.worker({
      queues: ["policy"],
      backoff: { delayMs: 50, maxDelayMs: 70, jitter: 0 },
      executor: flaky(async (_, { input, maxRetries, backoff }) => {
        seen.push({ input, maxRetries, backoff });
        return null;
      }),
    });
    const client = env.client();
    await (await client.submit(agent, "own", { queue: "policy", maxRetries: 4, backoff: { delayMs: 250 } })).result();
    await (await client.submit(agent, "worker's", { queue: "policy" })).result();
    expect(seen).toEqual([
      { input: "own", maxRetries: 4, backoff: { delayMs: 250, maxDelayMs: 60_000, jitter: 0.5 } },
      { input: "worker's", maxRetries: 0, backoff: { delayMs: 50, maxDelayMs: 70, jitter: 0 } },
    ]);
  });

  it("times out a task that sets no timeout after the queue's default, else the worker's; a task's own timeout wins", async () => {
    // An executor that hangs until aborted, as a model call that never answers while its lease renews.
    const hangs = flaky((_, ctx) => new Promise<JsonValue>((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))));
    await env.worker({ queues: ["slow-q", "chat-q"], defaultTimeoutMs: 400, queueTimeouts: { "chat-q": 150 }, executor: hangs });
    const client = env.client();
    const outcome = async (queue: string, timeoutMs?: number) => {
      const handle = await client.submit(agent, "x", { queue, ...(timeoutMs !== undefined && { timeoutMs }) });
      const err = await handle.result({ timeoutMs: 10_000 }).catch((e: unknown) => e);
      return (err as TaskFailedError).taskError;
    };
    expect(await outcome("slow-q")).toMatchObject({ code: "TIMEOUT", message: "timed out after 400 ms" });
    expect(await outcome("chat-q")).toMatchObject({ code: "TIMEOUT", message: "timed out after 150 ms" });
    expect(await outcome("chat-q", 250)).toMatchObject({ code: "TIMEOUT", message: "timed out after 250 ms" });
  });

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

  it("schedules each retry its backoff after the failure: doubling, capped at maxDelayMs, jitter only taken off", async () => {
    const failedAt: number[] = [];
    const dueAt: number[] = [];
    await env.worker({
      queues: ["backoff"],
      promoteIntervalMs: 20,
      executor: flaky(async (attempt, ctx) => {
        // A retry starts with its record still holding the due time the worker gave it.
        if (attempt > 1) dueAt.push((await env.store.get(ctx.taskId))!.retryAt!);
        if (attempt === 4) return "done";
        failedAt.push(Date.now());
        throw new Error(`transient failure ${attempt}`);
      }),
    });
    const handle = await env.client().submit(agent, "x", {
      queue: "backoff",
      maxRetries: 3,
      backoff: { delayMs: 300, maxDelayMs: 500, jitter: 0.25 },
      detailed: true,
    });
    expect(await handle.result({ timeoutMs: 10_000 })).toBe("done");
    const events = await collect(handle.stream());
    const at = (status: string, attempt: number) => events.find((e) => e.type === "status" && e.status === status && e.attempt === attempt)!.ts;
    // Retry n waits min(500, 300 * 2^n) less up to a quarter of it: 300 → [225, 300], then 600 and 1200 capped → [375, 500].
    const windows = [
      [225, 300],
      [375, 500],
      [375, 500],
    ] as const;
    expect(dueAt).toHaveLength(3);
    for (const [n, [least, most]] of windows.entries()) {
      // The due time is fixed after the attempt threw (so at least `least` after it) and before its
      // settle stamped the retrying event (so at most `most` after that).
      expect(dueAt[n]! - failedAt[n]!).toBeGreaterThanOrEqual(least);
      expect(dueAt[n]! - at("retrying", n + 1)).toBeLessThanOrEqual(most);
      expect(at("running", n + 2)).toBeGreaterThanOrEqual(dueAt[n]!);
    }
  });

  it("gives each retry a fresh timeout, counted from the retry's own start", async () => {
    const timeoutMs = 1500;
    await env.worker({
      queues: ["slow-first"],
      promoteIntervalMs: 20,
      executor: flaky(async (attempt) => {
        // Attempt 1 outlives its timeout; attempt 2 takes two thirds of one, which only a fresh budget leaves it.
        await new Promise((r) => setTimeout(r, attempt === 1 ? 5000 : 1000));
        return `done on attempt ${attempt}`;
      }),
    });
    const handle = await env.client().submit(agent, "x", { queue: "slow-first", timeoutMs, maxRetries: 1, backoff: { delayMs: 10 }, detailed: true });
    expect(await handle.result({ timeoutMs: 10_000 })).toBe("done on attempt 2");
    const record = await handle.status();
    expect(record).toMatchObject({ status: "COMPLETED", attempt: 2, retries: 1 });
    // The second attempt ran past a budget shared with the first (and well past one counted from the submit).
    expect(record.completedAt! - record.createdAt).toBeGreaterThan(timeoutMs + 1000);
    const events = await collect(handle.stream());
    expect(events.find((e) => e.type === "status" && e.status === "retrying")).toMatchObject({ attempt: 1, error: { code: "TIMEOUT" } });
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

  it("gives a task re-queued from the dead letters a fresh retry budget: it fails maxRetries more times before it is dead-lettered again", async () => {
    await env.worker({
      queues: ["relapse"],
      promoteIntervalMs: 20,
      executor: flaky(async (attempt) => {
        throw new Error(`broken on attempt ${attempt}`);
      }),
    });
    const client = env.client();
    const letters = () =>
      waitFor(async () => {
        const l = await client.deadLetters.list("relapse");
        return l.length ? l : undefined;
      });
    const handle = await client.submit(agent, "x", { queue: "relapse", maxRetries: 2, backoff: { delayMs: 10 }, detailed: true });
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toBeInstanceOf(TaskFailedError);
    const [first] = await letters();
    expect(first).toMatchObject({ taskId: handle.taskId, extra: { attempts: 3 } });
    expect(await handle.status()).toMatchObject({ status: "FAILED", attempt: 3, retries: 2 });

    const again = await client.deadLetters.requeue("relapse", first!.id);
    await expect(again.result({ timeoutMs: 10_000 })).rejects.toBeInstanceOf(TaskFailedError);
    expect(await again.status()).toMatchObject({ status: "FAILED", attempt: 6, retries: 2 });
    const statuses = (await collect(again.stream())).filter((e) => e.type === "status").map((e) => `${(e as { status: string }).status}:${e.attempt}`);
    expect(statuses).toEqual(["running:4", "retrying:4", "running:5", "retrying:5", "running:6", "failed:6"]);
    const second = await letters();
    expect(second).toHaveLength(1);
    expect(second[0]).toMatchObject({ taskId: handle.taskId, extra: { attempts: 6, lastError: { message: "broken on attempt 6" } } });
    expect(second[0]!.reason).toMatch(/failed after 6 attempts/);
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
    expect(await client.fleet.queueDepth("later")).toEqual({
      waiting: 0,
      lanes: { high: 0, normal: 0, low: 0 },
      inFlight: 0,
      delayed: 0,
      dead: 0,
      oldestWaitMs: 0,
    });
  });

  it("runs a task whose runAt has passed straight away, and refuses delayMs with runAt", async () => {
    const client = env.client();
    await env.worker({ queues: ["past"] });
    const handle = await client.submit(agent, "p", { queue: "past", runAt: new Date(Date.now() - 1000) });
    expect(await handle.result({ timeoutMs: 10_000 })).toMatchObject({ text: "Echo: p" });
    await expect(client.submit(agent, "x", { delayMs: 1, runAt: Date.now() })).rejects.toMatchObject({ field: "runAt" });
  });
});
