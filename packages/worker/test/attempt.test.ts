import type { Lane } from "@flotilla/broker";
import type { CancelListener } from "@flotilla/cancel";
import { createKeys, DEFAULT_RETENTION, ErrorCodes, type JsonValue } from "@flotilla/core";
import { FlotillaMetrics } from "@flotilla/metrics";
import { newTask, TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, scripted, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { AbortReason } from "../src/abort-reason.ts";
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

function runner(executor: Executor, cancelledBeforeStart?: string) {
  const watching = { watched: 0, unwatched: 0 };
  const cancels = {
    watch: (_taskId: string, onCancel: (reason: string) => void) => {
      watching.watched++;
      if (cancelledBeforeStart !== undefined) onCancel(cancelledBeforeStart);
      return () => void watching.unwatched++;
    },
  } as unknown as CancelListener;
  const attempts = new AttemptRunner({
    redis,
    keys,
    retention: DEFAULT_RETENTION,
    executor,
    agents: undefined,
    cancels,
    metrics: new FlotillaMetrics(),
    backoff: { delayMs: 1000, maxDelayMs: 60_000, jitter: 0 },
    onDeadline: () => "cancel",
    started: () => {},
  });
  return { attempts, watching };
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
});
