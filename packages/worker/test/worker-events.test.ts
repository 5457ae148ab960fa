import { ErrorCodes, LifecycleError, type Logger, TaskFailedError, UnrecoverableError } from "@flotilla/core";
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { type DeadLetteredEvent, type TaskEndEvent, Worker } from "../src/index.ts";

/** A logger that keeps every line, for the fields operators read. */
function capturingLogger() {
  const lines: Array<{ level: string; message: string; fields: Record<string, unknown> }> = [];
  const at =
    (level: string) =>
    (message: string, fields: Record<string, unknown> = {}) =>
      void lines.push({ level, message, fields });
  const logger: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
  return { lines, logger, find: (message: string) => lines.filter((l) => l.message === message) };
}

describe("what a Worker tells its owner", () => {
  const h = useFlotilla("worker-events");

  it("emits task:started and task:ended for every attempt, counts outcomes, and lists what runs", async () => {
    let release: (() => void) | undefined;
    const { logger, find } = capturingLogger();
    const w = await h.worker({
      queues: ["ev"],
      logger,
      backoff: { delayMs: 10, jitter: 0 },
      executor: {
        async execute(ctx) {
          if (ctx.input === "hold") await new Promise<void>((r) => (release = r));
          if (ctx.input === "fail") throw new UnrecoverableError("no way");
          if (ctx.input === "flaky" && ctx.attempt === 1) throw new Error("once");
          return { ok: ctx.input };
        },
      },
    });
    const started: Array<{ taskId: string; attempt: number }> = [];
    const ended: TaskEndEvent[] = [];
    w.on("task:started", (e) => started.push(e));
    w.on("task:ended", (e) => ended.push(e));
    expect(w.ready).toBe(true);
    expect(w.workerId).toMatch(/\S/);
    expect(w.queues).toEqual(["ev"]);

    const held = await h.submit(scripted("x"), "hold", { queue: "ev" });
    await waitFor(async () => release !== undefined, { what: "the held run to start" });
    expect(w.runningTaskIds).toEqual([held]);
    expect(w.stats).toEqual({ running: 1, completed: 0, failed: 0 });
    release!();
    await h.until(held);

    const failed = await h.submit(scripted("x"), "fail", { queue: "ev", maxRetries: 3 });
    await h.until(failed);
    const flaky = await h.submit(scripted("x"), "flaky", { queue: "ev", maxRetries: 1 });
    await h.until(flaky);
    await waitFor(async () => ended.length === 4, { what: "four ends" });

    expect(started).toEqual([
      { taskId: held, attempt: 1 },
      { taskId: failed, attempt: 1 },
      { taskId: flaky, attempt: 1 },
      { taskId: flaky, attempt: 2 },
    ]);
    expect(ended).toEqual([
      { taskId: held, attempt: 1, status: "COMPLETED", error: undefined, recorded: true },
      { taskId: failed, attempt: 1, status: "FAILED", error: { code: ErrorCodes.UNRECOVERABLE, message: "no way" }, recorded: true },
      { taskId: flaky, attempt: 1, status: "RETRYING", error: expect.objectContaining({ message: "once" }), recorded: true },
      { taskId: flaky, attempt: 2, status: "COMPLETED", error: undefined, recorded: true },
    ]);
    expect(w.stats).toEqual({ running: 0, completed: 2, failed: 1 });
    expect(w.runningTaskIds).toEqual([]);

    // The log line of each end carries what an operator searches by.
    expect(find("task ended").map((l) => l.fields)).toEqual([
      expect.objectContaining({ taskId: held, attempt: 1, status: "COMPLETED", recorded: true }),
      expect.objectContaining({ taskId: failed, attempt: 1, status: "FAILED", error: expect.objectContaining({ code: ErrorCodes.UNRECOVERABLE }) }),
      expect.objectContaining({ taskId: flaky, attempt: 1, status: "RETRYING", retryAt: expect.any(Number) }),
      expect.objectContaining({ taskId: flaky, attempt: 2, status: "COMPLETED" }),
    ]);
    expect(find("worker started").map((l) => l.fields)).toEqual([{ workerId: w.workerId, queues: ["ev"], concurrency: w.concurrency }]);
    await h.stopWorkers();
    expect(w.ready).toBe(false);
    expect(find("worker stopped").map((l) => l.fields)).toEqual([{ workerId: w.workerId, completed: 2, failed: 1 }]);
  });

  it("names the attempts and the last error in a failed task's dead letter", async () => {
    const lettered: DeadLetteredEvent[] = [];
    const w = await h.worker({
      queues: ["dl"],
      backoff: { delayMs: 1, jitter: 0 },
      executor: {
        async execute(ctx) {
          throw new Error(`boom ${ctx.attempt}`);
        },
      },
    });
    w.on("entry:dead-lettered", (e) => lettered.push(e));
    const once = await h.submit(scripted("x"), "a", { queue: "dl", maxRetries: 0 });
    await expect(h.client().handle(once).result({ timeoutMs: 10_000 })).rejects.toBeInstanceOf(TaskFailedError);
    const twice = await h.submit(scripted("x"), "b", { queue: "dl", maxRetries: 1 });
    await h.until(twice, ["FAILED"]);
    await waitFor(async () => lettered.length === 2, { what: "two dead letters" });
    const letters = await h.broker.listDeadLetters("dl", { count: 10 });
    expect(letters.map((l) => [l.taskId, l.reason])).toEqual([
      [once, "failed after 1 attempt: [AGENT_ERROR] boom 1"],
      [twice, "failed after 2 attempts: [AGENT_ERROR] boom 2"],
    ]);
    expect(lettered).toEqual([
      { queue: "dl", entryId: letters[0]!.entryId, reason: "[AGENT_ERROR] boom 1", taskId: once },
      { queue: "dl", entryId: letters[1]!.entryId, reason: "[AGENT_ERROR] boom 2", taskId: twice },
    ]);
  });

  it("dead-letters an entry whose record is gone or past its delivery limit, saying which, and names its task", async () => {
    const lettered: DeadLetteredEvent[] = [];
    const w = await h.worker({ queues: ["gone"] });
    w.on("entry:dead-lettered", (e) => lettered.push(e));
    await h.broker.ensureGroup("gone");
    const ghost = await h.broker.enqueue("gone", "ghost");
    const tired = await h.record("gone/tired", {
      status: "RETRYING",
      attempt: 3,
      maxDeliveries: 3,
      error: JSON.stringify({ message: "slow", code: "TIMEOUT" }),
    });
    const tiredEntry = await h.broker.enqueue("gone", tired);
    const bare = await h.record("gone/bare", { status: "RETRYING", attempt: 2, maxDeliveries: 2 });
    const bareEntry = await h.broker.enqueue("gone", bare);
    await waitFor(async () => lettered.length === 3, { what: "three dead letters" });
    const byEntry = new Map((await h.broker.listDeadLetters("gone", { count: 10 })).map((l) => [l.entryId, l]));
    expect(byEntry.get(ghost)).toMatchObject({ taskId: "gone/ghost", reason: "task record not found (expired or never written)", fields: { task: "ghost" } });
    expect(byEntry.get(tiredEntry)).toMatchObject({
      taskId: "gone/tired",
      reason: "delivery limit reached after 3 attempts; last error: [TIMEOUT] slow",
      fields: { task: "tired" },
      extra: { attempts: 3, lastError: { message: "slow", code: "TIMEOUT" } },
    });
    expect(byEntry.get(bareEntry)).toMatchObject({ taskId: "gone/bare", reason: "delivery limit reached after 2 attempts" });
    expect(new Set(lettered.map((e) => e.taskId))).toEqual(new Set(["gone/ghost", "gone/tired", "gone/bare"]));
  });

  it("reports an outcome Redis refused to record as a worker:error and log line, and keeps serving", async () => {
    const { logger, find } = capturingLogger();
    const w = await h.worker({
      queues: ["refused", "fine"],
      logger,
      executor: {
        async execute(ctx) {
          if (ctx.input === "fail") throw new Error("no");
          return null;
        },
      },
    });
    const errors: unknown[] = [];
    w.on("worker:error", (err) => errors.push(err));
    // The queue's dead-letter stream is not a stream: recording a final failure there fails as a whole.
    await h.redis.set(h.keys.deadLetters("refused"), "not a stream");
    await h.submit(scripted("x"), "fail", { queue: "refused" });
    await waitFor(async () => errors.length === 1, { what: "the error" });
    expect(String(errors[0])).toMatch(/WRONGTYPE/);
    expect(find("task handling failed")).toEqual([
      { level: "error", message: "task handling failed", fields: expect.objectContaining({ queue: "refused", err: errors[0] }) },
    ]);
    expect((await h.until(await h.submit(scripted("x"), "ok", { queue: "fine" }))).status).toBe("COMPLETED");
  });

  it("tells the fleet what it runs and how its tasks ended, in its heartbeat", async () => {
    let release: (() => void) | undefined;
    const w = await h.worker({
      queues: ["beat", "beat2"],
      concurrency: 3,
      executor: {
        async execute(ctx) {
          if (ctx.input === "hold") await new Promise<void>((r) => (release = r));
          if (ctx.input === "fail") throw new Error("no");
          return null;
        },
      },
    });
    await h.until(await h.submit(scripted("x"), "ok", { queue: "beat" }));
    await h.until(await h.submit(scripted("x"), "fail", { queue: "beat" }));
    const held = await h.submit(scripted("x"), "hold", { queue: "beat" });
    await waitFor(async () => release !== undefined, { what: "the held run" });
    const me = async () => (await h.client().fleet.status()).workers.find((x) => x.workerId === w.workerId);
    const record = await waitFor(async () => {
      const r = await me();
      return r?.running?.length === 1 ? r : undefined;
    });
    expect(record).toMatchObject({ alive: true, running: [held], completed: 1, failed: 1, queues: ["beat", "beat2"], concurrency: 3 });
    release!();
    await h.until(held);
  });

  it("reports a claim Redis refused as a worker:error, and claims again once it can", async () => {
    const w = await h.worker({ queues: ["claim-refused"] });
    const errors: unknown[] = [];
    w.on("worker:error", (err) => errors.push(err));
    // The queue's high lane is not a stream: every claim of the queue fails until it is one again.
    await h.redis.del(h.keys.lane("claim-refused", "high"));
    await h.redis.set(h.keys.lane("claim-refused", "high"), "not a stream");
    await waitFor(async () => errors.length > 0, { what: "a claim error" });
    expect(String(errors[0])).toMatch(/WRONGTYPE|NOGROUP/);
    await h.redis.del(h.keys.lane("claim-refused", "high"));
    await h.broker.ensureGroup("claim-refused", { again: true });
    expect((await h.until(await h.submit(scripted("x"), "after", { queue: "claim-refused" }))).status).toBe("COMPLETED");
  });

  it("refuses a second start, and stops once however often asked, also before it started", async () => {
    const w = await h.worker({ queues: ["life"] });
    await expect(w.start()).rejects.toBeInstanceOf(LifecycleError);
    await expect(w.start()).rejects.toMatchObject({ code: ErrorCodes.ALREADY_STARTED });
    const first = w.stop();
    expect(w.stop()).toBe(first);
    await first;
    expect(w.ready).toBe(false);
    const never = new Worker({ redis: h.connection, prefix: h.prefix });
    expect(never.ready).toBe(false);
    expect(never.runningTaskIds).toEqual([]);
    expect(never.stats).toEqual({ running: 0, completed: 0, failed: 0 });
    await never.stop();
  });
});
