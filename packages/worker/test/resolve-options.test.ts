import { hostname } from "node:os";
import { Agent } from "@flotilla/agent";
import { DEFAULT_RETENTION, DEFAULTS, silentLogger, ValidationError } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { resolveWorkerOptions } from "../src/options.ts";

/** The ValidationError a call throws, for its issues. */
function refusal(options: Parameters<typeof resolveWorkerOptions>[0]): ValidationError {
  try {
    resolveWorkerOptions(options);
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error("accepted");
}

describe("resolveWorkerOptions", () => {
  it("applies the shared defaults", () => {
    const o = resolveWorkerOptions({});
    expect(o).toMatchObject({
      redis: undefined,
      prefix: DEFAULTS.prefix,
      queues: [DEFAULTS.queue],
      concurrency: DEFAULTS.concurrency,
      agents: undefined,
      heartbeatTtlMs: DEFAULTS.heartbeatTtlMs,
      blockMs: DEFAULTS.blockMs,
      leaseMs: DEFAULTS.leaseMs,
      backoff: { delayMs: 1000, maxDelayMs: 60_000, jitter: 0.5 },
      promoteIntervalMs: DEFAULTS.promoteIntervalMs,
      fairnessEvery: DEFAULTS.fairnessEvery,
      connectTimeoutMs: DEFAULTS.workerConnectTimeoutMs,
      retention: DEFAULT_RETENTION,
      logger: silentLogger,
      gaugeIntervalMs: DEFAULTS.gaugeIntervalMs,
      maxJsonDepth: DEFAULTS.maxJsonDepth,
    });
    expect(o.workerId).toMatch(new RegExp(`^${hostname().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-${process.pid}-\\w{6}$`));
    expect(resolveWorkerOptions({}).workerId).not.toBe(o.workerId);
    expect(o.metrics).toBeDefined();
  });

  it("keeps what it was given", () => {
    const given = {
      redis: "redis://10.0.0.1:1234",
      prefix: "p",
      queues: ["a", "b"],
      concurrency: 7,
      heartbeatTtlMs: 900,
      blockMs: 50,
      leaseMs: 300,
      backoff: { delayMs: 5, maxDelayMs: 10, jitter: 0 },
      promoteIntervalMs: 20,
      fairnessEvery: 3,
      workerId: "w-1",
      connectTimeoutMs: 40,
      logger: { ...silentLogger },
      gaugeIntervalMs: 60,
      maxJsonDepth: 16,
    };
    const o = resolveWorkerOptions({ ...given, retention: { recordTtlMs: 1234 } });
    // recordTtlMs is the age of finished (completed) records unless keepCompleted says otherwise.
    expect(o).toMatchObject({
      ...given,
      retention: { ...DEFAULT_RETENTION, recordTtlMs: 1234, keepCompleted: { count: 0, ageMs: 1234 } },
      queueRetention: {},
    });
  });

  it("resolves each queue's retention over the worker's", () => {
    const o = resolveWorkerOptions({
      retention: { eventTtlMs: 5000, keepFailed: { count: 7 } },
      queueRetention: { reports: { keepCompleted: { count: 1000 } }, logs: { events: "until-end", keepFailed: { ageMs: 60_000 } } },
    });
    expect(o.queueRetention.reports).toMatchObject({ eventTtlMs: 5000, keepCompleted: { count: 1000, ageMs: 86_400_000 }, keepFailed: { count: 7 } });
    expect(o.queueRetention.logs).toMatchObject({ events: "until-end", keepFailed: { count: 7, ageMs: 60_000 } });
    expect(() => resolveWorkerOptions({ queueRetention: { q: { keepCompleted: { count: -1 } } } })).toThrow(/count/);
  });

  it("takes fairness 0 as strict priority and 1 as 2", () => {
    expect(resolveWorkerOptions({ fairnessEvery: 0 }).fairnessEvery).toBe(0);
    expect(resolveWorkerOptions({ fairnessEvery: 1 }).fairnessEvery).toBe(2);
    expect(resolveWorkerOptions({ fairnessEvery: 2 }).fairnessEvery).toBe(2);
  });

  it("keys the worker's own agents by name, from an Agent or a plain spec", () => {
    const writer = new Agent({ name: "writer", model: "scripted:noop", instructions: "w" });
    const reader = { ...new Agent({ name: "reader", model: "scripted:noop", instructions: "r" }).toJSON() }; // a plain object
    const o = resolveWorkerOptions({ agents: [writer, reader] });
    expect([...(o.agents?.keys() ?? [])]).toEqual(["writer", "reader"]);
    expect(o.agents?.get("writer")).toMatchObject({ name: "writer", model: "scripted:noop", instructions: "w" });
  });

  it.each([
    ["concurrency", { concurrency: 0 }, "must be a positive integer"],
    ["concurrency", { concurrency: 1.5 }, "must be a positive integer"],
    ["heartbeatTtlMs", { heartbeatTtlMs: -1 }, "must be a positive integer"],
    ["blockMs", { blockMs: 0 }, "must be a positive integer"],
    ["promoteIntervalMs", { promoteIntervalMs: 0 }, "must be a positive integer"],
    ["connectTimeoutMs", { connectTimeoutMs: 0 }, "must be a positive integer"],
    ["gaugeIntervalMs", { gaugeIntervalMs: 0 }, "must be a positive integer"],
    ["maxJsonDepth", { maxJsonDepth: 0 }, "must be a positive integer"],
    ["leaseMs", { leaseMs: 299 }, "must be at least 300"],
    ["leaseMs", { leaseMs: Number.NaN }, "expected number"],
    ["fairnessEvery", { fairnessEvery: -1 }, "must be 0 (strict priority) or an integer of at least 2"],
    ["fairnessEvery", { fairnessEvery: 2.5 }, "must be an integer"],
    ["queues", { queues: [] }, "a worker needs at least one queue"],
  ])("refuses a bad %s with a ValidationError naming it", (field, options, message) => {
    const err = refusal(options);
    expect(err.issues).toEqual([{ path: field, message: expect.stringContaining(message) }]);
  });

  it("refuses a queue name or a backoff that does not parse", () => {
    expect(() => resolveWorkerOptions({ queues: ["no spaces"] })).toThrow(ValidationError);
    expect(() => resolveWorkerOptions({ backoff: { delayMs: -1 } })).toThrow(ValidationError);
  });

  it("refuses an agent whose spec does not parse, naming it as an agent", () => {
    const err = (() => {
      try {
        resolveWorkerOptions({ agents: [{ kind: "agent", name: "", model: "scripted:x" } as never] });
      } catch (e) {
        return e as ValidationError;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect(err!.field).toBe("name");
    expect(err!.message).toMatch(/^invalid agent: name: /);
  });

  it("accepts the smallest values allowed", () => {
    expect(resolveWorkerOptions({ concurrency: 1, leaseMs: 300, blockMs: 1 })).toMatchObject({ concurrency: 1, leaseMs: 300, blockMs: 1 });
  });
});
