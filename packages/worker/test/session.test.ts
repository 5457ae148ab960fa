import { ErrorCodes, type Logger } from "@flotilla/core";
import { purgePrefix, recordingLogger, scripted, startRedisServer, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { type ReadinessState, Worker } from "../src/index.ts";

// A worker's connections, on a Redis of its own (so CLIENT LIST shows only this worker's, and the
// server can be stopped under it).
describe("a worker's connections", () => {
  it("are three, named by their part; a Redis that goes away is logged at debug level and makes the worker unready until it is back", async () => {
    const server = await startRedisServer({ aof: false });
    const lines: Array<{ level: string; message: string; fields: Record<string, unknown> }> = [];
    const at =
      (level: string) =>
      (message: string, fields: Record<string, unknown> = {}) =>
        void lines.push({ level, message, fields });
    const logger: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
    const w = new Worker({ redis: server.url, prefix: testPrefix("session"), queues: ["s"], logger, connectTimeoutMs: 2_000 });
    const told: ReadinessState[] = [];
    w.on("worker:readiness", (state) => told.push(state));
    try {
      await w.start();
      const admin = new Redis(server.url);
      const list = (await admin.client("LIST")) as string;
      admin.disconnect();
      const names = list
        .split("\n")
        .map((line) => /\bname=(\S*)/.exec(line)?.[1] ?? "")
        .filter((name) => name.startsWith("flotilla"))
        .sort();
      expect(names).toEqual(["flotilla:blocking", "flotilla:command", "flotilla:subscriber"]);
      expect(w.ready).toBe(true);

      await server.down();
      await waitFor(async () => lines.some((l) => l.level === "debug" && l.message === "redis connection error"), { what: "a connection error logged" });
      const logged = lines.find((l) => l.message === "redis connection error")!;
      expect(logged.fields.err).toBeInstanceOf(Error);
      expect(w.ready).toBe(false);
      expect(w.readiness.reasons).toContainEqual({
        reason: "redis",
        detail: expect.stringMatching(/^the connection to Redis at .+ is down$/),
        since: expect.any(Number),
      });

      await server.up();
      await waitFor(async () => w.ready, { what: "the worker ready again", timeoutMs: 10_000 });
      // Each change was told as an event: unready for the connection, then ready again.
      expect(told.some((t) => !t.ready && t.reasons.some((r) => r.reason === "redis"))).toBe(true);
      await waitFor(async () => told.at(-1)?.ready === true, { what: "the return to ready told" });
    } finally {
      await w.stop({ drainTimeoutMs: 0 });
      await server.stop();
    }
  });

  it("is not ready before it started (starting, since it was made) nor once stop() was called (stopping, since then)", async () => {
    const prefix = testPrefix("session-ready");
    const made = Date.now();
    const w = new Worker({ redis: testConnection(), prefix, queues: ["r"] });
    expect(w.ready).toBe(false);
    const starting = w.readiness;
    expect(starting).toEqual({ ready: false, reasons: [{ reason: "starting", detail: "start() has not finished", since: expect.any(Number) }] });
    expect(starting.reasons[0]!.since).toBeGreaterThanOrEqual(made);
    await w.start();
    expect(w.ready).toBe(true);
    expect(w.readiness).toEqual({ ready: true, reasons: [] });
    const stopCalled = Date.now();
    const stopping = w.stop({ drainTimeoutMs: 0 });
    expect(w.ready).toBe(false);
    const state = w.readiness;
    expect(state).toEqual({ ready: false, reasons: [{ reason: "stopping", detail: "stop() was called", since: expect.any(Number) }] });
    expect(state.reasons[0]!.since).toBeGreaterThanOrEqual(stopCalled);
    await stopping;
    // A second stop() keeps the time of the first.
    await new Promise((r) => setTimeout(r, 5));
    await w.stop();
    expect(w.readiness.reasons[0]!.since).toBe(state.reasons[0]!.since);
    const redis = testRedis();
    await purgePrefix(redis, prefix);
    await redis.quit();
  });

  it("a second start is refused with the worker's id in the message", async () => {
    const server = await startRedisServer({ aof: false });
    const w = new Worker({ redis: server.url, prefix: testPrefix("session"), queues: ["s"], workerId: "w-twice" });
    try {
      await w.start();
      await expect(w.start()).rejects.toMatchObject({ code: ErrorCodes.ALREADY_STARTED, message: "worker w-twice was started already" });
    } finally {
      await w.stop();
      await server.stop();
    }
  });

  it("a clean stop leaves no timer behind and reports no drain deadline", async () => {
    const server = await startRedisServer({ aof: false });
    const lines: string[] = [];
    const at = (level: string) => (message: string) => void lines.push(`${level} ${message}`);
    const logger: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
    const refTimers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    try {
      const before = refTimers();
      const w = new Worker({ redis: server.url, prefix: testPrefix("session"), queues: ["s"], logger });
      await w.start();
      await w.stop({ drainTimeoutMs: 60_000 });
      // A timer left for the drain deadline would hold the process for a minute after stop().
      expect(refTimers()).toBeLessThanOrEqual(before);
      expect(lines.filter((l) => l.startsWith("warn"))).toEqual([]);
    } finally {
      await server.stop();
    }
  });
});

describe("a worker session's wiring", () => {
  const h = useFlotilla("session-wiring");

  it("logs a heartbeat that failed, and a heartbeat it could not remove at stop, and carries on", async () => {
    const { log, lines } = recordingLogger();
    const w = await h.worker({ queues: ["hb"], heartbeatTtlMs: 300, logger: log });
    // The fleet's index of workers becomes a string: each beat's ZADD is refused, and so is the ZREM at stop.
    await h.redis.del(h.keys.workers());
    await h.redis.set(h.keys.workers(), "not a sorted set");
    await waitFor(async () => lines.some((l) => l.message === "heartbeat failed"), { what: "a failed heartbeat logged" });
    expect(lines.find((l) => l.message === "heartbeat failed")).toEqual({
      level: "warn",
      message: "heartbeat failed",
      fields: { err: expect.objectContaining({ message: expect.stringMatching(/^WRONGTYPE/) }) },
    });
    // Still claiming and running.
    expect((await h.until(await h.submit(scripted("echo"), "x", { queue: "hb" }))).status).toBe("COMPLETED");
    await h.stopWorkers({ workers: [w] });
    expect(lines.filter((l) => l.message === "could not remove heartbeat")).toEqual([
      { level: "warn", message: "could not remove heartbeat", fields: { err: expect.objectContaining({ message: expect.stringMatching(/^WRONGTYPE/) }) } },
    ]);
    await h.redis.del(h.keys.workers());
  });

  it("tells no readiness change while it stops: its connections close on purpose", async () => {
    const w = await h.worker({ queues: ["quiet"] });
    const told: ReadinessState[] = [];
    w.on("worker:readiness", (state) => told.push(state));
    await h.stopWorkers({ workers: [w] });
    // The sockets close after stop() resolves (QUIT's reply comes first): give them time to.
    await new Promise((r) => setTimeout(r, 200));
    expect(told).toEqual([]);
  });

  it("is not ready while its claims fail, though connected", async () => {
    const w = await h.worker({ queues: ["refused"], blockMs: 50 });
    expect(w.ready).toBe(true);
    // A lane that is not a stream: every claim is refused (WRONGTYPE).
    await h.redis.del(h.keys.lane("refused", "low"));
    await h.redis.set(h.keys.lane("refused", "low"), "x");
    await waitFor(async () => w.readiness.reasons.some((r) => r.reason === "claiming"), { what: "the claims failing" });
    expect(w.ready).toBe(false);
    expect(w.readiness.ready).toBe(false);
    await h.redis.del(h.keys.lane("refused", "low"));
  });

  it("keeps its dead letters to about retention.deadLetterMaxLen", async () => {
    const w = await h.worker({ queues: ["dl"], concurrency: 20, retention: { deadLetterMaxLen: 1 } });
    let dead = 0;
    w.on("entry:dead-lettered", () => void dead++);
    const lane = h.keys.lane("dl", "normal");
    const pipeline = h.redis.pipeline();
    for (let i = 0; i < 150; i++) pipeline.xadd(lane, "*", "junk", String(i));
    await pipeline.exec();
    await waitFor(async () => dead === 150, { what: "150 malformed entries dead-lettered", timeoutMs: 20_000 });
    // Trimmed a stream node (100 entries) at a time: far fewer than 150 are left, however many.
    expect(await h.redis.xlen(h.keys.deadLetters("dl"))).toBeLessThan(100);
  });

  it("claims again as soon as a slot frees, not when its next timer is due", async () => {
    // Two queues (no settle call claims for the freed slot: only a one-queue worker's does), and
    // promotion and reclaiming a minute away. A dead letter is written outside the settler: only the
    // freed slot itself wakes the claim loop for the next entry.
    const w = await h.worker({ queues: ["slot-a", "slot-b"], concurrency: 1, promoteIntervalMs: 60_000, leaseMs: 60_000 });
    let dead = 0;
    w.on("entry:dead-lettered", () => void dead++);
    for (let i = 0; i < 2; i++) await h.redis.xadd(h.keys.lane("slot-a", "normal"), "*", "junk", String(i));
    await waitFor(async () => dead === 2, { what: "both malformed entries dead-lettered", timeoutMs: 10_000 });
    const id = await h.submit(scripted("echo"), "x", { queue: "slot-a" });
    expect((await h.until(id, undefined, { timeoutMs: 10_000 })).status).toBe("COMPLETED");
  });

  it("runs the tasks its settle calls claimed for the slots they freed", async () => {
    // Waiting before the worker starts: each outcome's settle call claims the next (one queue).
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await h.submit(scripted("echo"), "x", { queue: "chained" }));
    await h.worker({ queues: ["chained"], concurrency: 1, leaseMs: 60_000 });
    const records = [];
    for (const id of ids) records.push(await h.until(id, undefined, { timeoutMs: 10_000 }));
    expect(records.map((r) => r.status)).toEqual(Array(4).fill("COMPLETED"));
    // One script call ended each and started the next, at one time (Redis's, for both).
    for (let i = 1; i < records.length; i++) expect(records[i]!.startedAt).toBe(records[i - 1]!.completedAt);
  });
});
