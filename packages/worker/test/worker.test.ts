// @cluster: the worker's whole life on a cluster
import { defineTool } from "@flotilla/agent";
import { CONSUMER_GROUP } from "@flotilla/core";
import { recordingLogger, scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type ExecutionContext, type TaskEndEvent, Worker } from "../src/index.ts";

describe("Worker", () => {
  const h = useFlotilla("worker");

  it("records the result of a plain-JavaScript executor that returns a value, not a promise", async () => {
    await h.worker({ queues: ["plain-value"], executor: { execute: () => ({ answer: 42 }) as never } });
    const id = await h.submit(scripted("plain", {}), "x", { queue: "plain-value" });
    expect(await h.until(id)).toMatchObject({ status: "COMPLETED", attempt: 1, result: { answer: 42 } });
  });

  it("runs a task: RUNNING then COMPLETED, with the run's events and its timings recorded", async () => {
    await h.worker();
    const id = await h.submit(scripted("echo"), "ping");
    const record = await h.until(id);
    expect(record).toMatchObject({ status: "COMPLETED", attempt: 1, result: { text: "Echo: ping" } });
    expect(record.workerId).toBeTruthy();
    expect(record.startedAt).toBeGreaterThanOrEqual(record.createdAt);
    expect(record.completedAt).toBeGreaterThanOrEqual(record.startedAt!);
    expect(typeof record.waitMs).toBe("number");
    expect(typeof record.durationMs).toBe("number");
    const types = (await h.events(id)).map((e) => e.type);
    expect(types[0]).toBe("status");
    expect(types.at(-1)).toBe("status");
    expect(types).toContain("text");
    expect(await h.redis.xlen(h.keys.queue("default"))).toBe(0);
  });

  it("runs up to `concurrency` tasks at once, no more", async () => {
    let now = 0;
    let peak = 0;
    // A run is over when its executor returns; recording its outcome overlaps the next run.
    await h.worker({
      concurrency: 3,
      queues: ["conc"],
      executor: {
        async execute() {
          peak = Math.max(peak, ++now);
          await new Promise((r) => setTimeout(r, 30));
          now--;
          return null;
        },
      },
    });
    const ids = [];
    for (let i = 0; i < 8; i++) ids.push(await h.submit(scripted("slow"), "a b c", { queue: "conc" }));
    for (const id of ids) expect((await h.until(id)).status).toBe("COMPLETED");
    expect(peak).toBe(3);
  });

  it("fails a task past its timeout with code TIMEOUT, and the terminal event comes last", async () => {
    await h.worker();
    const id = await h.submit(scripted("sloth", { tokenDelayMs: 200 }), "a b c d e f g h", { timeoutMs: 150 });
    const record = await h.until(id);
    expect(record).toMatchObject({ status: "FAILED", error: { code: "TIMEOUT" } });
    const events = await h.events(id);
    expect(events.at(-2)).toMatchObject({ type: "error", code: "TIMEOUT" });
    expect(events.at(-1)).toMatchObject({ type: "status", status: "failed", error: { code: "TIMEOUT" } });
  });

  it("takes no event from an executor that ignores its signal once its task has timed out: the terminal event stays last", async () => {
    let emitted!: () => void;
    const lateEmit = new Promise<void>((r) => {
      emitted = r;
    });
    const executor = {
      async execute(ctx: ExecutionContext) {
        await new Promise((r) => setTimeout(r, 400)); // deaf to ctx.signal: still running when its task has FAILED
        ctx.emit({ type: "text", delta: "after the end" });
        emitted();
        return "ignored";
      },
    };
    await h.worker({ queues: ["deaf"], executor });
    const id = await h.submit(scripted("deaf"), "x", { queue: "deaf", timeoutMs: 100 });
    expect(await h.until(id)).toMatchObject({ status: "FAILED", attempt: 1, error: { code: "TIMEOUT" } });
    await lateEmit;
    // The publisher writes a batch on the next tick; a late write, if it were accepted, lands within ms.
    await new Promise((r) => setTimeout(r, 500));
    const events = await h.events(id);
    expect(events.some((e) => e.type === "text")).toBe(false);
    expect(events.at(-1)).toMatchObject({ type: "status", status: "failed", attempt: 1 });
  });

  it("records an agent's failure as FAILED with its error, and keeps serving", async () => {
    await h.worker();
    const bad = await h.submit(scripted("flaky", { failWith: "the model broke" }), "x");
    expect(await h.until(bad)).toMatchObject({ status: "FAILED", error: { message: "the model broke", code: "AGENT_ERROR" } });
    expect((await h.events(bad)).at(-1)).toMatchObject({ status: "failed" });
    const good = await h.submit(scripted("fine"), "y");
    expect((await h.until(good)).status).toBe("COMPLETED");
  });

  it("fails a task naming an unknown tool, provider or agent — the worker is unharmed", async () => {
    const { Agent } = await import("@flotilla/agent");
    const allowed = new Agent({ name: "allowed", model: "scripted:x", options: { scripted: { reply: "worker's own definition" } } });
    await h.worker({ queues: ["strict"], agents: [allowed] });
    const unknownAgent = await h.submit(scripted("stranger"), "x", { queue: "strict" });
    expect(await h.until(unknownAgent)).toMatchObject({ status: "FAILED", error: { code: "UNKNOWN_AGENT" } });
    // The payload cannot change what a registered agent does.
    const impostor = await h.submit(scripted("allowed", { reply: "hijacked" }), "x", { queue: "strict" });
    expect(await h.until(impostor)).toMatchObject({ status: "COMPLETED", result: { text: "worker's own definition" } });

    await h.worker();
    const noTool = await h.submit(scripted("tooly", {}, { tools: ["rm_rf"] }), "x");
    expect(await h.until(noTool)).toMatchObject({ status: "FAILED", error: { code: "UNKNOWN_TOOL" } });
    const noProvider = await h.submit(scripted("remote", {}, { model: "nowhere:big-model" }), "x");
    expect(await h.until(noProvider)).toMatchObject({ status: "FAILED", error: { code: "UNKNOWN_PROVIDER" } });
    const fine = await h.submit(scripted("fine"), "still alive?");
    expect((await h.until(fine)).status).toBe("COMPLETED");
  });

  it("passes registered tools the run's signal and records their results", async () => {
    const lookup = defineTool({
      name: "lookup",
      description: "looks a word up",
      inputSchema: z.object({ word: z.string() }),
      execute: ({ word }, ctx) => ({ word, length: word.length, aborted: ctx.signal.aborted }),
    });
    await h.worker({ tools: { lookup }, queues: ["tools"] });
    const id = await h.submit(scripted("dict", { toolCalls: [{ name: "lookup", args: { word: "fleet" } }] }, { tools: ["lookup"] }), "define", {
      queue: "tools",
    });
    expect((await h.until(id)).status).toBe("COMPLETED");
    const result = (await h.events(id)).find((e) => e.type === "tool_result");
    expect(result).toMatchObject({ name: "lookup", result: { word: "fleet", length: 5, aborted: false }, isError: false });
  });

  it("dead-letters malformed entries with the reason and keeps serving", async () => {
    const w = await h.worker({ queues: ["poison"] });
    const dead: string[] = [];
    w.on("entry:dead-lettered", (e: { reason: string }) => dead.push(e.reason));
    const stream = h.keys.queue("poison");
    await h.redis.xadd(stream, "*", "nonsense", "1");
    await h.redis.xadd(stream, "*", "task", "has{braces}");
    await h.redis.xadd(stream, "*", "task", "no-such-record");
    // A record whose payload is not what a worker can run:
    await h.broker.enqueue("poison", await h.record("poison/corrupt-payload", { agent: "x", payload: '{"agent":{"name":"x"},"input":1}' }));
    const corrupt = await h.record("poison/corrupt-metadata", {
      payload: JSON.stringify({ agent: scripted("fine").toJSON(), input: "x" }),
      metadata: "{not json",
    });
    await h.broker.enqueue("poison", corrupt);
    const good = await h.submit(scripted("fine"), "after the poison", { queue: "poison" });
    expect((await h.until(good)).status).toBe("COMPLETED");
    await waitFor(() => dead.length >= 5, { what: "5 dead letters" });
    const letters = await h.broker.listDeadLetters("poison");
    expect(letters.map((l) => l.reason)).toEqual([
      expect.stringMatching(/malformed queue entry: task/),
      expect.stringMatching(/malformed queue entry: task/),
      expect.stringMatching(/task record not found/),
      expect.stringMatching(/failed after 1 attempt: \[INVALID_PAYLOAD\] corrupt payload/),
      expect.stringMatching(/failed after 1 attempt: \[INVALID_PAYLOAD\] corrupt metadata/),
    ]);
    expect(await h.store.get("poison/corrupt-payload")).toMatchObject({ status: "FAILED", error: { code: "INVALID_PAYLOAD" } });
    // Reading the record back reports the corruption as a typed error; the outcome is recorded all the same.
    await expect(h.store.get("poison/corrupt-metadata")).rejects.toMatchObject({ code: "CORRUPT_RECORD" });
    expect(await h.redis.hmget(h.keys.task("poison/corrupt-metadata"), "status", "error")).toEqual(["FAILED", expect.stringContaining("INVALID_PAYLOAD")]);
    expect((await h.events("poison/corrupt-metadata")).at(-1)).toMatchObject({ status: "failed", agent: "fine" });
    const pending = (await h.redis.xpending(stream, CONSUMER_GROUP)) as [number];
    expect(pending[0]).toBe(0);
  });

  it("start() fails with a ConnectionError, not a hang, when Redis is unreachable", async () => {
    const { Worker } = await import("../src/index.ts");
    const w = new Worker({ redis: "redis://127.0.0.1:1", connectTimeoutMs: 300 });
    await expect(w.start()).rejects.toMatchObject({ code: "REDIS_UNAVAILABLE" });
    // A start that could not connect may be tried again: not ALREADY_STARTED.
    await expect(w.start()).rejects.toMatchObject({ code: "REDIS_UNAVAILABLE" });
    expect(w.ready).toBe(false);
    await w.stop();
  });

  it("stop() stops claiming, lets running tasks finish, and leaves the fleet", async () => {
    const w = await h.worker({ queues: ["drain"] });
    const started = new Promise((resolve) => w.once("task:started", resolve));
    const running = await h.submit(scripted("slow", { tokenDelayMs: 40 }), "one two three four five six", { queue: "drain" });
    await started;
    await w.stop({ drainTimeoutMs: 10_000 });
    expect(await h.store.get(running)).toMatchObject({ status: "COMPLETED" });
    expect(await h.redis.exists(h.keys.worker(w.workerId))).toBe(0);
    const later = await h.submit(scripted("later"), "x", { queue: "drain" });
    await new Promise((r) => setTimeout(r, 300));
    expect(await h.store.get(later)).toMatchObject({ status: "PENDING" });
  });

  it('stop({ onDeadline: "cancel" }) cancels what is still running at the drain deadline, with code SHUTDOWN, and logs which tasks', async () => {
    const { log, lines } = recordingLogger();
    const w = await h.worker({ queues: ["deadline"], logger: log });
    const ended = new Promise<TaskEndEvent>((resolve) => w.once("task:ended", resolve));
    const started = new Promise((resolve) => w.once("task:started", resolve));
    const id = await h.submit(scripted("endless", { tokenDelayMs: 100 }), "a ".repeat(500), { queue: "deadline" });
    await started;
    await w.stop({ drainTimeoutMs: 100, onDeadline: "cancel" });
    expect(await ended).toMatchObject({ taskId: id, status: "CANCELLED", recorded: true });
    expect(await h.store.get(id)).toMatchObject({
      status: "CANCELLED",
      error: { code: "SHUTDOWN", message: `worker ${w.workerId} shut down before the task finished` },
    });
    expect((await h.events(id)).at(-1)).toMatchObject({ type: "status", status: "cancelled" });
    expect(lines.filter((l) => l.level === "warn")).toEqual([
      { level: "warn", message: "drain deadline reached: cancelling running tasks", fields: { tasks: [id] } },
    ]);
  });

  it("stop() hands what is still running at the drain deadline back to the queue, for another worker", async () => {
    const w = await h.worker({ queues: ["handover"] });
    const started = new Promise((resolve) => w.once("task:started", resolve));
    const id = await h.submit(scripted("long", { tokenDelayMs: 30 }), "a ".repeat(40), { queue: "handover" });
    await started;
    await w.stop({ drainTimeoutMs: 100 });
    expect(await h.store.get(id)).toMatchObject({ status: "RETRYING", retries: 0, error: { code: "SHUTDOWN" } });
    const next = await h.worker({ queues: ["handover"], promoteIntervalMs: 50 });
    expect(await h.until(id)).toMatchObject({ status: "COMPLETED", attempt: 2, workerId: next.workerId, retries: 0 });
  });

  it("cannot be started again after a start that connected and then failed", async () => {
    let thrown = false;
    const { log } = recordingLogger();
    const logger = {
      ...log,
      info: (message: string, fields?: Record<string, unknown>) => {
        // The line that ends start(): it fails once, after the session is open.
        if (message === "worker started" && !thrown) {
          thrown = true;
          throw new Error("log sink full");
        }
        log.info(message, fields);
      },
    };
    const w = new Worker({ redis: h.connection, prefix: h.prefix, queues: ["restart"], logger });
    try {
      await expect(w.start()).rejects.toThrow("log sink full");
      // Its session (connections, claiming) is open: a second one would be opened beside it.
      await expect(w.start()).rejects.toMatchObject({ code: "ALREADY_STARTED" });
    } finally {
      await w.stop({ drainTimeoutMs: 0 });
    }
  });
});
