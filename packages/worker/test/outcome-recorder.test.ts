import type { Lane } from "@flotilla/broker";
import { TestBroker } from "@flotilla/broker/testing";
import { createKeys, DEFAULT_RETENTION, ErrorCodes, type LogFields, type Logger } from "@flotilla/core";
import { FlotillaMetrics, METRICS } from "@flotilla/metrics";
import type { FinishInput } from "@flotilla/store";
import { newTask, TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import type { DeadLetteredEvent, TaskEndEvent } from "../src/events.ts";
import { OutcomeRecorder } from "../src/outcome-recorder.ts";
import { Settler } from "../src/settler.ts";

// The recorder on its own, against real Redis: real records and entries (claimed by consumer "w"),
// a real settler; what it tells the worker, the metrics and the log is recorded.
const redis = testRedis();
const prefix = testPrefix("outcome-recorder");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const broker = new TestBroker(redis, keys);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

function setup() {
  const lines: Array<{ level: string; fields: LogFields | undefined }> = [];
  const log = Object.fromEntries(
    (["debug", "info", "warn", "error"] as const).map((level) => [level, (_m: string, fields?: LogFields) => void lines.push({ level, fields })]),
  ) as unknown as Logger;
  const ended: TaskEndEvent[] = [];
  const deadLettered: DeadLetteredEvent[] = [];
  const metrics = new FlotillaMetrics();
  const settler = new Settler(store, "w", { claim: () => undefined, started: () => {} });
  /** Each `settling` call, with whether the entry was still pending for "w" when it came. */
  const settling: Array<Promise<[string, boolean]>> = [];
  const recorder = new OutcomeRecorder({
    settler,
    broker,
    store,
    consumer: "w",
    metrics,
    log,
    ended: (e) => void ended.push(e),
    deadLettered: (e) => void deadLettered.push(e),
    settling: (lane, entryId) => {
      // Queued on the connection now, so Redis answers it before the write that follows.
      const pending = redis.xpending(keys.lane(lane.queue, lane.priority), "flotilla", entryId, entryId, 1, "w") as Promise<unknown[]>;
      settling.push(pending.then((rows) => [entryId, rows.length === 1]));
    },
  });
  return { recorder, lines, ended, deadLettered, metrics, settling };
}

/** A task of `queue` started by consumer "w": its lane, entry and attempt. */
async function started(queue: string, name: string, earlierAttempts = 0) {
  await broker.ensureGroup(queue);
  const taskId = `${queue}/${name}`;
  await store.createMany(queue, [newTask(taskId, { maxRetries: earlierAttempts })]);
  if (earlierAttempts > 0) await redis.hset(keys.task(taskId), "attempt", earlierAttempts);
  const [run] = await store.claim(queue, "w", 1);
  if (run?.kind !== "run") throw new Error(`expected a run, got ${run?.kind}`);
  const lane: Lane = { queue, priority: run.priority };
  return { lane, entryId: run.entryId, taskId, attempt: run.attempt };
}

describe("OutcomeRecorder", () => {
  it("counts and reports a completed attempt, with its trace id on the log line", async () => {
    const s = setup();
    const t = await started("or-a", "ok");
    await s.recorder.record(t.lane, t.entryId, t.taskId, { attempt: t.attempt, status: "COMPLETED", agent: "ag", result: 1 }, "trace-1");
    expect(s.recorder.counts).toEqual({ completed: 1, failed: 0 });
    expect(s.metrics.total(METRICS.completed, { queue: "or-a", agent: "ag" })).toBe(1);
    expect(s.ended).toEqual([{ taskId: t.taskId, attempt: 1, status: "COMPLETED", error: undefined, recorded: true }]);
    expect(s.lines).toEqual([
      {
        level: "info",
        fields: { taskId: t.taskId, attempt: 1, status: "COMPLETED", error: undefined, retryAt: undefined, recorded: true, traceId: "trace-1" },
      },
    ]);
  });

  it("counts a retry as neither completed nor failed, and leaves the trace id out when there is none", async () => {
    const s = setup();
    const t = await started("or-b", "again");
    const error = { code: "X", message: "try again" };
    await s.recorder.record(t.lane, t.entryId, t.taskId, { attempt: 1, status: "RETRYING", agent: "ag", error, retryAt: Date.now() + 60_000 });
    expect(s.recorder.counts).toEqual({ completed: 0, failed: 0 });
    expect(s.metrics.total(METRICS.retried, { queue: "or-b", agent: "ag" })).toBe(1);
    expect(s.lines).toHaveLength(1);
    expect(Object.keys(s.lines[0]!.fields!)).not.toContain("traceId");
    expect(s.deadLettered).toEqual([]);
  });

  it("dead-letters a failed task's entry with the attempts and its error, or a generic one when the attempt gave none", async () => {
    const s = setup();
    const t = await started("or-c", "bad");
    await s.recorder.record(t.lane, t.entryId, t.taskId, { attempt: 1, status: "FAILED", agent: "ag" });
    const u = await started("or-c", "worse", 2);
    expect(u.attempt).toBe(3);
    await s.recorder.record(u.lane, u.entryId, u.taskId, { attempt: 3, status: "FAILED", agent: "ag", error: { code: "TIMEOUT", message: "slow" } });
    expect(s.recorder.counts).toEqual({ completed: 0, failed: 2 });
    expect(s.deadLettered).toEqual([
      { queue: "or-c", entryId: t.entryId, reason: `[${ErrorCodes.AGENT_ERROR}] failed`, taskId: t.taskId },
      { queue: "or-c", entryId: u.entryId, reason: "[TIMEOUT] slow", taskId: u.taskId },
    ]);
    const letters = await broker.listDeadLetters("or-c");
    expect(letters.map((l) => l.reason)).toEqual([`failed after 1 attempt: [${ErrorCodes.AGENT_ERROR}] failed`, "failed after 3 attempts: [TIMEOUT] slow"]);
  });

  it("records nothing for an outcome Redis refuses (a stale attempt), and says so", async () => {
    const s = setup();
    const t = await started("or-d", "stale");
    const outcome: FinishInput = { attempt: t.attempt + 1, status: "COMPLETED", agent: "ag" };
    await s.recorder.record(t.lane, t.entryId, t.taskId, outcome);
    expect(s.recorder.counts).toEqual({ completed: 0, failed: 0 });
    expect(s.metrics.total(METRICS.completed)).toBe(0);
    expect(s.ended).toEqual([{ taskId: t.taskId, attempt: 2, status: "COMPLETED", error: undefined, recorded: false }]);
    expect(s.lines.map((l) => [l.level, l.fields])).toEqual([
      ["warn", { taskId: t.taskId, reason: "stale", status: "RUNNING" }],
      ["info", expect.objectContaining({ recorded: false })],
    ]);
  });

  it("dead-letters an entry it holds with the reason given, and leaves one another worker holds", async () => {
    const s = setup();
    const t = await started("or-e", "held");
    await s.recorder.deadLetter(t.lane, t.entryId, "record not found", { task: "held" }, t.taskId, { n: 1 });
    expect(s.deadLettered).toEqual([{ queue: "or-e", entryId: t.entryId, reason: "record not found", taskId: t.taskId }]);
    expect(s.lines).toEqual([{ level: "warn", fields: { queue: "or-e", entryId: t.entryId, reason: "record not found", taskId: t.taskId } }]);
    const [letter] = await broker.listDeadLetters("or-e");
    expect(letter).toMatchObject({ reason: "record not found", taskId: t.taskId });

    const u = await started("or-e", "theirs");
    await redis.xclaim(keys.lane("or-e", u.lane.priority), "flotilla", "w2", 0, u.entryId);
    s.lines.length = 0;
    await s.recorder.deadLetter(u.lane, u.entryId, "record not found", { task: "theirs" }, u.taskId);
    expect(s.deadLettered).toHaveLength(1);
    expect(s.lines).toEqual([{ level: "warn", fields: { queue: "or-e", entryId: u.entryId, taskId: u.taskId } }]);
    expect(await broker.listDeadLetters("or-e")).toHaveLength(1);
  });

  it("says an entry's outcome or dead letter is on its way before the write that acknowledges it", async () => {
    const s = setup();
    const t = await started("or-f", "done");
    await s.recorder.record(t.lane, t.entryId, t.taskId, { attempt: t.attempt, status: "COMPLETED", agent: "ag", result: 1 });
    const u = await started("or-f", "unrunnable");
    await s.recorder.deadLetter(u.lane, u.entryId, "record not found", { task: "unrunnable" }, u.taskId);
    expect(await Promise.all(s.settling)).toEqual([
      [t.entryId, true],
      [u.entryId, true],
    ]);
    expect(await redis.xpending(keys.lane("or-f", t.lane.priority), "flotilla")).toEqual([0, null, null, null]);
  });
});
