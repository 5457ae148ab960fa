import type { Lane } from "@flotilla/broker";
import { TestBroker } from "@flotilla/broker/testing";
import { createKeys, DEFAULT_RETENTION, ErrorCodes } from "@flotilla/core";
import { FlotillaMetrics, METRICS } from "@flotilla/metrics";
import type { FinishInput } from "@flotilla/store";
import { newTask, TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, recordingLogger, testPrefix, testRedis } from "@flotilla/testing";
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

/** `withSettling` false: a recorder made without the optional `settling` callback. */
function setup({ withSettling = true } = {}) {
  const { log, lines } = recordingLogger();
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
    settling: withSettling
      ? (lane, entryId) => {
          // Queued on the connection now, so Redis answers it before the write that follows.
          const pending = redis.xpending(keys.lane(lane.queue, lane.priority), "flotilla", entryId, entryId, 1, "w") as Promise<unknown[]>;
          settling.push(pending.then((rows) => [entryId, rows.length === 1]));
        }
      : undefined,
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
        message: "task ended",
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
    expect(s.lines).toEqual([
      { level: "warn", message: "entry dead-lettered", fields: { queue: "or-e", entryId: t.entryId, reason: "record not found", taskId: t.taskId } },
    ]);
    const [letter] = await broker.listDeadLetters("or-e");
    expect(letter).toMatchObject({ reason: "record not found", taskId: t.taskId });

    const u = await started("or-e", "theirs");
    await redis.xclaim(keys.lane("or-e", u.lane.priority), "flotilla", "w2", 0, u.entryId);
    s.lines.length = 0;
    await s.recorder.deadLetter(u.lane, u.entryId, "record not found", { task: "theirs" }, u.taskId);
    expect(s.deadLettered).toHaveLength(1);
    expect(s.lines).toEqual([
      { level: "warn", message: "entry not dead-lettered: another worker holds it now", fields: { queue: "or-e", entryId: u.entryId, taskId: u.taskId } },
    ]);
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

  it("records and dead-letters without a settling callback, which is optional", async () => {
    const s = setup({ withSettling: false });
    const t = await started("or-g", "done");
    await s.recorder.record(t.lane, t.entryId, t.taskId, { attempt: t.attempt, status: "COMPLETED", agent: "ag", result: 1 });
    const u = await started("or-g", "unrunnable");
    await s.recorder.deadLetter(u.lane, u.entryId, "record not found", { task: "unrunnable" }, u.taskId);
    expect(s.recorder.counts).toEqual({ completed: 1, failed: 0 });
    expect(s.deadLettered.map((e) => e.taskId)).toEqual([u.taskId]);
  });
});

/** Entries of `queue` still pending for consumer "w". */
const pendingFor = async (queue: string, priority: Lane["priority"]) =>
  ((await redis.xpending(keys.lane(queue, priority), "flotilla", "-", "+", 10, "w")) as unknown[]).length;

describe("OutcomeRecorder, a record that went bad while its attempt ran", () => {
  it("takes the task out: its entry dead-lettered with the fault, its record ended FAILED and counted, the worker told", async () => {
    const s = setup();
    const t = await started("or-h", "spoilt");
    await redis.hset(keys.task(t.taskId), "seq", "x");
    await s.recorder.record(t.lane, t.entryId, t.taskId, { attempt: t.attempt, status: "COMPLETED", agent: "ag", result: 1 });
    const reason = "corrupt task record: seq is not a number";
    expect(s.deadLettered).toEqual([{ queue: "or-h", entryId: t.entryId, reason, taskId: t.taskId }]);
    expect(s.recorder.counts).toEqual({ completed: 0, failed: 1 });
    expect(s.lines).toEqual([
      { level: "warn", message: "entry dead-lettered", fields: { queue: "or-h", entryId: t.entryId, reason, taskId: t.taskId, recordFailed: true } },
    ]);
    // Nothing else follows a corrupt record: no "task ended" line, no ended event, no metric.
    expect(s.ended).toEqual([]);
    expect(s.metrics.total(METRICS.completed)).toBe(0);
    expect(await redis.hget(keys.task(t.taskId), "status")).toBe("FAILED");
    expect((await broker.listDeadLetters("or-h")).map((l) => l.reason)).toEqual([reason]);
    expect(await pendingFor("or-h", t.lane.priority)).toBe(0);
  });

  it("only warns about an outcome without an entry: nothing is dead-lettered, nothing counted", async () => {
    // (The stand-in settling callback asks Redis about the entry: there is none here.)
    const s = setup({ withSettling: false });
    const t = await started("or-i", "spoilt");
    await redis.hset(keys.task(t.taskId), "seq", "x");
    await s.recorder.record(t.lane, "", t.taskId, { attempt: t.attempt, status: "COMPLETED", agent: "ag", result: 1 });
    expect(s.lines).toEqual([
      { level: "warn", message: "outcome not recorded: corrupt task record", fields: { taskId: t.taskId, reason: "seq is not a number" } },
    ]);
    expect(s.deadLettered).toEqual([]);
    expect(s.ended).toEqual([]);
    expect(s.recorder.counts).toEqual({ completed: 0, failed: 0 });
    expect(await broker.listDeadLetters("or-i")).toEqual([]);
    expect(await redis.hget(keys.task(t.taskId), "status")).toBe("RUNNING");
  });

  it("leaves an entry another worker holds now, and says so", async () => {
    const s = setup();
    const t = await started("or-j", "theirs");
    await redis.xclaim(keys.lane("or-j", t.lane.priority), "flotilla", "w2", 0, t.entryId);
    await s.recorder.failCorrupt(t.lane, t.entryId, t.taskId, "seq is not a number");
    expect(s.lines).toEqual([
      { level: "warn", message: "entry not dead-lettered: another worker holds it now", fields: { queue: "or-j", entryId: t.entryId, taskId: t.taskId } },
    ]);
    expect(s.deadLettered).toEqual([]);
    expect(s.recorder.counts).toEqual({ completed: 0, failed: 0 });
    expect(await broker.listDeadLetters("or-j")).toEqual([]);
    expect(await redis.hget(keys.task(t.taskId), "status")).toBe("RUNNING");
  });

  it("dead-letters the entry of a record that had ended already, without counting a failure", async () => {
    const s = setup();
    const t = await started("or-k", "ended");
    await redis.hset(keys.task(t.taskId), "status", "COMPLETED");
    await s.recorder.failCorrupt(t.lane, t.entryId, t.taskId, "log is not a list of events");
    const reason = "corrupt task record: log is not a list of events";
    expect(s.deadLettered).toEqual([{ queue: "or-k", entryId: t.entryId, reason, taskId: t.taskId }]);
    expect(s.lines.map((l) => l.fields)).toEqual([{ queue: "or-k", entryId: t.entryId, reason, taskId: t.taskId, recordFailed: false }]);
    expect(s.recorder.counts).toEqual({ completed: 0, failed: 0 });
    expect(await redis.hget(keys.task(t.taskId), "status")).toBe("COMPLETED");
  });
});
