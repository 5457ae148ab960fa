import { ErrorCodes, type Logger } from "@flotilla/core";
import { purgePrefix, redisUrl, startRedisServer, testPrefix, testRedis, waitFor } from "@flotilla/testing";
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
      expect(w.readiness.reasons.map((r) => r.reason)).toContain("redis");

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
    const w = new Worker({ redis: redisUrl(), prefix, queues: ["r"] });
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
