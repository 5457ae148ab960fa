import type { Lane } from "@flotilla/broker";
import type { CancelListener } from "@flotilla/cancel";
import { AbortReason, createKeys, DEFAULT_RETENTION, DEFAULTS, ErrorCodes, type JsonValue } from "@flotilla/core";
import { FlotillaMetrics, METRICS } from "@flotilla/metrics";
import { newTask, TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, scripted, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { AttemptRunner, type RunReply } from "../src/attempt.ts";
import type { ExecutionContext, Executor } from "../src/executor.ts";

// One attempt on its own, against real Redis (a real record started by consumer "w", real event
// publishing). The cancel listener is a stand-in that can hand over a cancel that arrived before the
// run started (the real one remembers such cancels; its own tests cover that).
const redis = testRedis();
const prefix = testPrefix("attempt");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const refTimers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

/** An executor that never settles and ignores its signal, as a badly written one does. */
const deaf: Executor = { execute: () => new Promise<JsonValue>(() => {}) };

function runner(executor: Executor, cancelledBeforeStart?: string, maxJsonDepth?: number) {
  const watching = { watched: 0, unwatched: 0 };
  const cancels = {
    watch: (_taskId: string, onCancel: (reason: string) => void) => {
      watching.watched++;
      if (cancelledBeforeStart !== undefined) onCancel(cancelledBeforeStart);
      return () => void watching.unwatched++;
    },
  } as unknown as CancelListener;
  const metrics = new FlotillaMetrics();
  const attempts = new AttemptRunner({
    redis,
    keys,
    retentionOf: () => DEFAULT_RETENTION,
    executor,
    agents: undefined,
    cancels,
    metrics,
    backoff: { delayMs: 1000, maxDelayMs: 60_000, jitter: 0 },
    onDeadline: () => "cancel",
    started: () => {},
    ...(maxJsonDepth !== undefined && { maxJsonDepth }),
  });
  return { attempts, watching, metrics };
}

let n = 0;
async function startedTask(over: { timeoutMs?: number; maxRetries?: number } = {}) {
  // Detailed: error events are kept only then.
  const queue = "at";
  const taskId = `${queue}/t${++n}`;
  const payload = JSON.stringify({ agent: scripted("a").toJSON(), input: "x" });
  await store.createMany(queue, [newTask(taskId, { payload, detailed: true, ...over })]);
  const [run] = await store.claim(queue, "w", 1);
  if (run?.kind !== "run") throw new Error(`expected a run, got ${run?.kind}`);
  const lane: Lane = { queue, priority: run.priority };
  return { lane, run: run as RunReply, taskId };
}

/** The types of the events the task's stream holds (each entry a JSON array of events in field `e`). */
const eventTypes = async (taskId: string) =>
  (await redis.xrange(keys.events(taskId), "-", "+")).flatMap(([, f]) => (JSON.parse(f[f.indexOf("e") + 1]!) as Array<{ type: string }>).map((e) => e.type));

describe("AttemptRunner", () => {
  it("ends a run cancelled before it started as CANCELLED, even when the executor ignores its signal, and stops watching", async () => {
    const { attempts, watching } = runner(
      {
        execute: (ctx) => {
          ctx.emit({ type: "text", delta: "hi" });
          return new Promise<JsonValue>(() => {});
        },
      },
      "the user changed their mind",
    );
    const t = await startedTask();
    const ended = await attempts.run(t.lane, t.run, new AbortController());
    expect(ended?.outcome).toMatchObject({ status: "CANCELLED", error: { code: ErrorCodes.CANCELLED, message: "the user changed their mind" } });
    expect(watching).toEqual({ watched: 1, unwatched: 1 });
    // A cancelled run says nothing more: no error event.
    expect(await eventTypes(t.taskId)).toEqual(["text"]);
  });

  it("times a run out after the task's timeout, with the timeout in the error", async () => {
    const { attempts } = runner(deaf);
    const t = await startedTask({ timeoutMs: 30 });
    const ended = await attempts.run(t.lane, t.run, new AbortController());
    expect(ended?.outcome).toMatchObject({ status: "FAILED", error: { code: ErrorCodes.TIMEOUT, message: "timed out after 30 ms" } });
    expect(await eventTypes(t.taskId)).toEqual(["error"]);
  });

  it("clears the timeout of a run that ended in time (no timer left behind)", async () => {
    const { attempts, watching } = runner({ execute: async () => "done" });
    const t = await startedTask({ timeoutMs: 60_000 });
    const before = refTimers();
    const ended = await attempts.run(t.lane, t.run, new AbortController());
    expect(ended?.outcome).toMatchObject({ status: "COMPLETED", result: "done" });
    expect(refTimers()).toBe(before);
    expect(watching.unwatched).toBe(1);
  });

  it("stops a run whose task another attempt took over, tells the executor why, and leaves the outcome to its owner", async () => {
    let seen: unknown;
    const executor: Executor = {
      execute: (ctx: ExecutionContext) =>
        new Promise<JsonValue>((_, reject) => {
          ctx.signal.addEventListener("abort", () => {
            seen = ctx.signal.reason;
            reject(ctx.signal.reason);
          });
          // Another worker starts attempt 2; this attempt's next event is refused.
          void redis.hset(keys.task(ctx.taskId), "attempt", 2).then(() => ctx.emit({ type: "text", delta: "late" }));
        }),
    };
    const { attempts } = runner(executor);
    const t = await startedTask();
    expect(await attempts.run(t.lane, t.run, new AbortController())).toBeUndefined();
    expect(seen).toBeInstanceOf(AbortReason);
    expect(seen).toMatchObject({ code: ErrorCodes.STALE_ATTEMPT, message: "the task is no longer ours" });
  });

  it("has no trace id to report when no tracing is set up (the no-op span's all-zero id is none)", async () => {
    const { attempts } = runner({ execute: async () => "done" });
    const t = await startedTask();
    const ended = await attempts.run(t.lane, t.run, new AbortController());
    expect(ended).toEqual({ outcome: expect.objectContaining({ status: "COMPLETED" }), traceId: undefined });
  });

  it("records how long its event batches took to publish, in seconds", async () => {
    const { attempts, metrics } = runner({
      execute: async (ctx) => {
        ctx.emit({ type: "text", delta: "hi" });
        return "done";
      },
    });
    const t = await startedTask();
    await attempts.run(t.lane, t.run, new AbortController());
    const [published] = Object.values(metrics.snapshot().histograms[METRICS.publishDuration] ?? {});
    expect(published?.count).toBeGreaterThanOrEqual(1);
    // A round trip to Redis: well under 10 s (in ms it would be hundreds or more).
    expect(published!.max).toBeGreaterThan(0);
    expect(published!.max).toBeLessThan(10);
  });

  it("leaves no unhandled rejection behind when an executor throws before returning a promise and the run was cancelled", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const { attempts } = runner(
        {
          execute: () => {
            throw new Error("not even a promise");
          },
        },
        "stop",
      );
      const t = await startedTask();
      const ended = await attempts.run(t.lane, t.run, new AbortController());
      expect(ended?.outcome).toMatchObject({ status: "CANCELLED", error: { code: ErrorCodes.CANCELLED, message: "stop" } });
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});

describe("AttemptRunner, a payload or metadata it cannot read", () => {
  /** What a run of `t` with its payload or metadata replaced (as a record written straight into Redis may hold) comes to. */
  async function runWith(over: Partial<Pick<RunReply, "payload" | "metadata">>, maxJsonDepth?: number) {
    const { attempts } = runner({ execute: async () => "done" }, undefined, maxJsonDepth);
    const t = await startedTask();
    return (await attempts.run(t.lane, { ...t.run, ...over }, new AbortController()))?.outcome;
  }
  const agent = scripted("a").toJSON();
  /** An array nested `depth` levels deep. */
  const nested = (depth: number): JsonValue => (depth <= 1 ? [] : [nested(depth - 1)]);

  it("fails the task with INVALID_PAYLOAD naming the part nested deeper than maxJsonDepth: agent, input or metadata", async () => {
    const deep = nested(4);
    expect(await runWith({ payload: JSON.stringify({ agent: { ...agent, extra: deep }, input: "x" }) }, 4)).toMatchObject({
      status: "FAILED",
      error: { code: ErrorCodes.INVALID_PAYLOAD, message: "invalid agent: agent: nested deeper than 4 levels of objects and arrays (maxJsonDepth)" },
    });
    expect(await runWith({ payload: JSON.stringify({ agent, input: nested(4) }) }, 3)).toMatchObject({
      error: { code: ErrorCodes.INVALID_PAYLOAD, message: "invalid input: input: nested deeper than 3 levels of objects and arrays (maxJsonDepth)" },
    });
    expect(await runWith({ metadata: JSON.stringify({ m: nested(3) }) }, 3)).toMatchObject({
      error: { code: ErrorCodes.INVALID_PAYLOAD, message: "invalid metadata: metadata: nested deeper than 3 levels of objects and arrays (maxJsonDepth)" },
    });
    // At the limit it runs.
    expect(await runWith({ payload: JSON.stringify({ agent, input: nested(3) }) }, 3)).toMatchObject({ status: "COMPLETED" });
  });

  it("takes the shared default depth limit when given none", async () => {
    const limit = DEFAULTS.maxJsonDepth;
    expect(await runWith({ payload: JSON.stringify({ agent, input: nested(limit) }) })).toMatchObject({ status: "COMPLETED" });
    expect(await runWith({ payload: JSON.stringify({ agent, input: nested(limit + 1) }) })).toMatchObject({
      error: { code: ErrorCodes.INVALID_PAYLOAD, message: expect.stringContaining(`nested deeper than ${limit} levels`) },
    });
  });

  it("says a payload of null is not a payload (no TypeError from looking inside it)", async () => {
    const outcome = await runWith({ payload: "null" });
    expect(outcome).toMatchObject({ status: "FAILED", error: { code: ErrorCodes.INVALID_PAYLOAD } });
    expect(outcome?.error?.message).toMatch(/^corrupt payload of task at\/t\d+: /);
  });
});
