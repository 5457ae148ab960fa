import { Broker } from "@flotilla/broker";
import { CorruptRecordError, createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { TaskEventLog } from "../src/event-log.ts";
import { readFields } from "../src/readers.ts";
import { parseTaskRecord } from "../src/record.ts";
import type { StartReply } from "../src/replies.ts";
import type { NewTask } from "../src/task-store.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

const redis = testRedis();
const prefix = testPrefix("store");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const broker = new Broker(redis, keys);
/** The status events a task's record keeps. */
const statusLog = async (taskId: string) => JSON.parse(`[${(await readFields(redis, keys, taskId, ["log"]))[0] ?? ""}]`) as Array<Record<string, unknown>>;
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

let n = 0;
const task = (over: Partial<NewTask> = {}): NewTask => {
  n++;
  return newTask(`q/t${n}`, { createdAt: Date.now() + n, ...over });
};

describe("TaskStore", () => {
  it("creates PENDING records and refuses a taken id", async () => {
    const t = task();
    expect(await store.create(t)).toBe(true);
    expect(await store.create(t)).toBe(false);
    expect(await store.get(t.taskId)).toMatchObject({ status: "PENDING", attempt: 0, queue: "q" });
    // A waiting task is kept until it runs; its entry is in its lane.
    expect(await redis.pttl(keys.task(t.taskId))).toBe(-1);
    expect(await redis.xlen(keys.queue("q"))).toBeGreaterThan(0);
  });

  it("never lets a late writer overwrite a terminal status or resurrect the task", async () => {
    const t = task();
    await store.create(t);
    const start = await store.start(t.taskId, "w1");
    expect(start).toMatchObject({ kind: "run", attempt: 1 });
    expect(await store.finish(t.taskId, { attempt: 1, status: "COMPLETED", agent: "a", result: 42 })).toEqual({
      ok: true,
      status: "COMPLETED",
      deadLettered: false,
    });
    // The same worker, a second time, with another outcome:
    expect(await store.finish(t.taskId, { attempt: 1, status: "FAILED", agent: "a", error: { message: "late", code: "X" } })).toEqual({
      ok: false,
      reason: "terminal",
      status: "COMPLETED",
    });
    // Another worker claiming it again:
    expect(await store.start(t.taskId, "w2")).toMatchObject({ kind: "skip", reason: "terminal", status: "COMPLETED" });
    const record = await store.get(t.taskId);
    expect(record).toMatchObject({ status: "COMPLETED", result: 42, attempt: 1, workerId: "w1" });
    expect(record?.error).toBeUndefined();
    // Finished records expire after the record TTL.
    const ttl = await redis.pttl(keys.task(t.taskId));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(DEFAULT_RETENTION.recordTtlMs);
  });

  it("rejects a stale attempt while another attempt runs", async () => {
    const t = task();
    await store.create(t);
    await store.start(t.taskId, "w1");
    expect(await store.finish(t.taskId, { attempt: 2, status: "COMPLETED", agent: "a" })).toMatchObject({ ok: false, reason: "stale" });
    expect(await store.start(t.taskId, "w2")).toMatchObject({ kind: "skip", reason: "running" });
  });

  it("fences out the attempt before the running one: its outcomes and event batches are refused and write nothing", async () => {
    const t = task({ detailed: true });
    await store.create(t);
    await store.start(t.taskId, "w1");
    const events = new TaskEventLog(redis, keys, DEFAULT_RETENTION, t.taskId);
    const body = (delta: string) => JSON.stringify({ type: "text", delta, taskId: t.taskId, attempt: 1, ts: 1, agent: "a" });
    expect(await events.append(1, "1:1", [body("from attempt 1")])).toBe(2);
    // Attempt 1's worker went silent; another took the task over as attempt 2, which is running.
    expect(await store.start(t.taskId, "w2", { reclaimed: true })).toMatchObject({ kind: "run", attempt: 2 });
    const record = await redis.hgetall(keys.task(t.taskId));
    const stream = await redis.xrange(keys.events(t.taskId), "-", "+");
    const error = { message: "late", code: "AGENT_ERROR" };
    for (const outcome of [
      { status: "COMPLETED", result: "stale result" },
      { status: "FAILED", error },
      { status: "RETRYING", error, retryAt: Date.now() },
      { status: "CANCELLED", error },
    ] as const) {
      expect(await store.finish(t.taskId, { attempt: 1, agent: "a", ...outcome })).toEqual({ ok: false, reason: "stale", status: "RUNNING" });
    }
    expect(await events.append(1, "1:2", [body("too late")])).toBe(-1);
    // Not a field of the record changed (status, attempt, result, error, retries, seq, log, lastBatch), nor the stream.
    expect(await redis.hgetall(keys.task(t.taskId))).toEqual(record);
    expect(await redis.xrange(keys.events(t.taskId), "-", "+")).toEqual(stream);
    // The running attempt still writes: its events follow on from seq 3 (its running event).
    expect(await events.append(2, "2:1", [body("from attempt 2")])).toBe(4);
    expect(await store.finish(t.taskId, { attempt: 2, status: "COMPLETED", agent: "a", result: "fresh" })).toMatchObject({ ok: true });
    expect(await store.get(t.taskId)).toMatchObject({ status: "COMPLETED", attempt: 2, result: "fresh", seq: 5, retries: 0 });
  });

  it("writes the terminal status event last, with the result", async () => {
    const t = task();
    await store.create(t);
    await store.start(t.taskId, "w1");
    await store.finish(t.taskId, { attempt: 1, status: "FAILED", agent: "a", error: { message: "boom", code: "AGENT_ERROR" } });
    const events = await statusLog(t.taskId);
    expect(events.map((e) => [e.seq, e.status])).toEqual([
      [1, "running"],
      [2, "failed"],
    ]);
    expect(events[1]!.error).toEqual({ message: "boom", code: "AGENT_ERROR" });
    // Status events live in the record: no event stream is made for them.
    expect(await redis.exists(keys.events(t.taskId))).toBe(0);
  });

  it("says missing for unknown ids", async () => {
    expect(await store.start("q/nope", "w")).toMatchObject({ kind: "skip", reason: "missing" });
    expect(await store.finish("q/nope", { attempt: 1, status: "COMPLETED", agent: "a" })).toMatchObject({ ok: false, reason: "missing" });
    expect(await store.get("q/nope")).toBeUndefined();
  });

  it("lists newest first with filters and cursors, dropping expired ids", async () => {
    const p2 = testPrefix("store-list");
    const k2 = createKeys(p2);
    const s2 = new TestTaskStore(redis, k2, DEFAULT_RETENTION);
    const base = Date.now();
    const ids: string[] = [];
    await s2.registerQueue("odd");
    await s2.registerQueue("even");
    for (let i = 0; i < 25; i++) {
      const queue = i % 2 ? "odd" : "even";
      const t = task({ createdAt: base + Math.floor(i / 5), queue, taskId: `${queue}/t${++n}` });
      ids.push(t.taskId);
      await s2.create(t);
    }
    await redis.del(k2.task(ids[24]!)); // expired
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await s2.list({ limit: 7, cursor });
      seen.push(...page.tasks.map((t) => t.taskId));
      cursor = page.nextCursor;
    } while (cursor);
    const expected = ids
      .slice(0, 24)
      .map((id, i) => ({ id, at: base + Math.floor(i / 5) }))
      .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1))
      .map((x) => x.id);
    expect(seen).toEqual(expected);
    expect(await redis.zscore(k2.taskIndex("even"), ids[24]!.slice("even/".length))).toBeNull();
    const odd = await s2.list({ queue: "odd", limit: 100 });
    expect(odd.tasks.every((t) => t.queue === "odd")).toBe(true);
    expect(odd.tasks).toHaveLength(12);
    const running = await s2.list({ status: "RUNNING" });
    expect(running.tasks).toHaveLength(0);
    await purgePrefix(redis, p2);
  });
});

describe("TaskStore under resent commands (a reply lost to a dropped connection)", () => {
  it("gives a worker resending its start the same attempt, not a second one", async () => {
    const t = task();
    await store.create(t);
    const first = await store.start(t.taskId, "w1", { entryId: "1-1" });
    expect(first).toMatchObject({ kind: "run", attempt: 1 });
    expect(await store.start(t.taskId, "w1", { entryId: "1-1" })).toMatchObject({ kind: "run", attempt: 1 });
    // Anyone else, or another entry, still sees a running task.
    expect(await store.start(t.taskId, "w2", { entryId: "1-1" })).toMatchObject({ kind: "skip", reason: "running" });
    expect(await store.start(t.taskId, "w1", { entryId: "2-1" })).toMatchObject({ kind: "skip", reason: "running" });
    expect(await statusLog(t.taskId)).toHaveLength(1);
  });

  it("accepts the same outcome of the same attempt twice, and only that", async () => {
    const t = task();
    await store.create(t);
    await store.start(t.taskId, "w1", { entryId: "1-1" });
    const done = { attempt: 1, status: "COMPLETED" as const, agent: "a", result: 1 };
    expect(await store.finish(t.taskId, done)).toMatchObject({ ok: true });
    expect(await store.finish(t.taskId, done)).toMatchObject({ ok: true, status: "COMPLETED" });
    expect(await store.finish(t.taskId, { ...done, status: "FAILED" })).toMatchObject({ ok: false, reason: "terminal" });
    expect((await statusLog(t.taskId)).map((e) => e.status)).toEqual(["running", "completed"]);
  });

  it("treats a resent create of the same submit as created, and another submit of the id as a duplicate", async () => {
    const t = task({ submitId: "submit-1" });
    expect(await store.create(t)).toBe(true);
    expect(await store.create(t)).toBe(true);
    expect(await store.create({ ...t, submitId: "submit-2" })).toBe(false);
  });
});

describe("TaskStore batches", () => {
  it("creates and enqueues a batch in one call, and a resent batch writes nothing twice", async () => {
    const batch = Array.from({ length: 5 }, () => task({ queue: "b1", taskId: `b1/t${++n}` }));
    // A queue no one set up: the call makes its lanes with their consumer group, and says so.
    expect(await store.createMany("b1", batch, "batch-1")).toEqual({ created: [true, true, true, true, true], lanesMade: true });
    expect(await store.createMany("b1", batch, "batch-1")).toEqual({ created: [true, true, true, true, true], lanesMade: true });
    expect(await redis.xlen(keys.queue("b1"))).toBe(5);
    expect(await redis.zcard(keys.taskIndex("b1"))).toBe(5);
    // A scheduled task waits in its lane's delayed set instead.
    await store.createMany("b1", [task({ queue: "b1", taskId: `b1/t${++n}`, delayMs: 60_000, priority: "high" })]);
    expect(await redis.zcard(keys.delayed("b1", "high"))).toBe(1);
    expect(await redis.xlen(keys.queue("b1"))).toBe(5);
  });

  it("claims and starts a batch in one call, then settles its outcomes and entries in one call", async () => {
    await broker.ensureGroup("b2");
    const tasks = Array.from({ length: 4 }, (_, i) => task({ queue: "b2", taskId: `b2/t${++n}`, priority: i === 3 ? "high" : "normal" }));
    await store.createMany("b2", tasks);
    await redis.xadd(keys.queue("b2"), "*", "junk", "1");
    const replies = await store.claim("b2", "w1", 10);
    // Strict priority: the high one first; the malformed entry comes back for dead-lettering.
    expect(replies.map((r) => r.kind)).toEqual(["run", "run", "run", "run", "malformed"]);
    expect(replies[0]).toMatchObject({ kind: "run", taskId: tasks[3]!.taskId, priority: "high", attempt: 1 });
    const runs = replies.filter((r) => r.kind === "run");
    const { outcomes } = await store.settle(
      "b2",
      "w1",
      runs.map((r, i) => ({
        taskId: r.taskId,
        priority: r.priority,
        entryId: r.entryId,
        attempt: 1,
        agent: "a",
        ...(i === 0
          ? { status: "FAILED" as const, error: { message: "boom", code: "AGENT_ERROR" }, deadReason: "failed: boom" }
          : i === 1
            ? { status: "RETRYING" as const, retryAt: Date.now() + 60_000 }
            : { status: "COMPLETED" as const, result: i }),
      })),
    );
    expect(outcomes.map((o) => (o.ok ? [o.status, o.deadLettered] : o.reason))).toEqual([
      ["FAILED", true],
      ["RETRYING", false],
      ["COMPLETED", false],
      ["COMPLETED", false],
    ]);
    // Settled entries are acknowledged and deleted; only the malformed one is still pending.
    expect(await redis.xlen(keys.lane("b2", "high"))).toBe(0);
    expect(await redis.xlen(keys.queue("b2"))).toBe(1);
    expect(((await redis.xpending(keys.queue("b2"), "flotilla")) as [number])[0]).toBe(1);
    expect(await redis.zrange(keys.delayed("b2"), 0, "-1")).toEqual([runs[1]!.taskId.slice(3)]);
    const [letter] = await redis.xrange(keys.deadLetters("b2"), "-", "+");
    expect(letter?.[1]).toContain("failed: boom");
    // Every finished record has a TTL; the retrying one is kept until it runs again.
    for (const r of runs.slice(2)) expect(await redis.pttl(keys.task(r.taskId))).toBeGreaterThan(0);
    expect(await redis.pttl(keys.task(runs[1]!.taskId))).toBe(-1);
  });

  it("removes settled entries from their lane by trimming below the oldest pending one, and deletes those above it, never a pending or unread one", async () => {
    await broker.ensureGroup("trim");
    const tasks = Array.from({ length: 12 }, () => task({ queue: "trim", taskId: `trim/t${++n}` }));
    await store.createMany("trim", tasks);
    const lane = keys.queue("trim");
    const ids = (await redis.xrange(lane, "-", "+")).map(([id]) => id);
    const done = (runs: readonly StartReply[]) =>
      runs.flatMap((r) =>
        r.kind === "run" ? [{ taskId: r.taskId, priority: r.priority, entryId: r.entryId, attempt: r.attempt, agent: "a", status: "COMPLETED" as const }] : [],
      );
    // A long run holds the oldest entry; the next four are claimed and settled after it: they sit
    // above the oldest pending entry, so they are deleted one by one (trimming would take the long run's).
    const [long] = await store.claim("trim", "w1", 1);
    const four = await store.claim("trim", "w2", 4);
    await store.settle("trim", "w2", done(four));
    expect((await redis.xrange(lane, "-", "+")).map(([id]) => id)).toEqual([ids[0], ...ids.slice(5)]);
    // Then the long run ends: everything below the next pending entry goes, as one trim.
    const three = await store.claim("trim", "w2", 3);
    await store.settle("trim", "w1", done([long!]));
    expect((await redis.xrange(lane, "-", "+")).map(([id]) => id)).toEqual(ids.slice(5));
    // Nothing pending: a settle trims up to the last entry it settled, not into the unread ones.
    await store.settle("trim", "w2", done(three));
    expect((await redis.xrange(lane, "-", "+")).map(([id]) => id)).toEqual(ids.slice(8));
    expect(await broker.depth("trim")).toMatchObject({ waiting: 4, inFlight: 0 });
    // The unread entries still run.
    expect((await store.claim("trim", "w3", 10)).map((r) => r.kind)).toEqual(["run", "run", "run", "run"]);
  });

  it("claims the next batch in the call that settles the last one, and a resent call starts the same entries", async () => {
    await broker.ensureGroup("b3");
    const tasks = Array.from({ length: 4 }, () => task({ queue: "b3", taskId: `b3/t${++n}` }));
    await store.createMany("b3", tasks);
    const [first] = await store.claim("b3", "w1", 1);
    if (first?.kind !== "run") throw new Error("not started");
    const done = [{ taskId: first.taskId, priority: "normal" as const, entryId: first.entryId, attempt: 1, agent: "a", status: "COMPLETED" as const }];
    const call = () => store.settle("b3", "w1", done, { claim: 2, batchId: "settle-1" });
    const { outcomes, started } = await call();
    expect(outcomes).toMatchObject([{ ok: true, status: "COMPLETED" }]);
    const runs = started.map((r) => [r.kind, "taskId" in r && r.taskId, "attempt" in r && r.attempt]);
    expect(runs).toEqual([
      ["run", tasks[1]!.taskId, 1],
      ["run", tasks[2]!.taskId, 1],
    ]);
    // Resent after a lost reply: the same outcome, the same two tasks with the same attempts, nothing new claimed.
    const again = await call();
    expect(again.outcomes).toMatchObject([{ ok: true, status: "COMPLETED" }]);
    expect(again.started.map((r) => [r.kind, "taskId" in r && r.taskId, "attempt" in r && r.attempt])).toEqual(runs);
    expect(await redis.xlen(keys.queue("b3"))).toBe(3);
    expect(((await redis.xpending(keys.queue("b3"), "flotilla")) as [number])[0]).toBe(2);
  });
});

describe("TaskStore claims and a stored cancel", () => {
  it("never starts a waiting task whose record holds a cancel request: the claim ends it CANCELLED and acknowledges its entry", async () => {
    await broker.ensureGroup("b4");
    const [doomed, fine] = [task({ queue: "b4", taskId: `b4/t${++n}` }), task({ queue: "b4", taskId: `b4/t${++n}` })];
    await store.createMany("b4", [doomed, fine]);
    // The request as a claim may meet it on a waiting record (a cancel ends a waiting task at once,
    // so this is the claim's own guard, as for a reclaimed task whose worker died).
    const requestedAt = Date.now();
    await redis.hset(keys.task(doomed.taskId), { cancelRequestedAt: requestedAt, cancelReason: "changed my mind" });
    const replies = await store.claim("b4", "w1", 10);
    expect(replies.map((r) => [r.kind, "taskId" in r && r.taskId, "reason" in r ? r.reason : "attempt" in r && r.attempt])).toEqual([
      ["skip", doomed.taskId, "cancelled"],
      ["run", fine.taskId, 1],
    ]);
    const record = await store.get(doomed.taskId);
    expect(record).toMatchObject({ status: "CANCELLED", attempt: 0, cancelRequestedAt: requestedAt, error: { code: "CANCELLED", message: "changed my mind" } });
    expect(record?.startedAt).toBeUndefined();
    expect(record?.workerId).toBeUndefined();
    expect((await statusLog(doomed.taskId)).map((e) => [e.seq, e.status])).toEqual([[1, "cancelled"]]);
    // Only the started task's entry is still pending; a later claim finds nothing to start.
    expect(((await redis.xpending(keys.queue("b4"), "flotilla")) as [number])[0]).toBe(1);
    expect(await store.claim("b4", "w2", 10)).toEqual([]);
    expect((await store.get(doomed.taskId))?.status).toBe("CANCELLED");
  });

  it("runs a task re-queued from the dead letters even when a cancel was requested while its failed attempt ran", async () => {
    await broker.ensureGroup("b5");
    const t = task({ queue: "b5", taskId: `b5/t${++n}` });
    await store.createMany("b5", [t]);
    const [run] = await store.claim("b5", "w1", 1);
    if (run?.kind !== "run") throw new Error("not started");
    // The cancel reached a running task (the request is stored on the record), but the attempt failed first.
    await redis.hset(keys.task(t.taskId), { cancelRequestedAt: Date.now(), cancelReason: "too late" });
    const failed = { status: "FAILED" as const, error: { message: "boom", code: "AGENT_ERROR" }, deadReason: "failed: boom" };
    await store.settle("b5", "w1", [{ taskId: t.taskId, priority: run.priority, entryId: run.entryId, attempt: 1, agent: "a", ...failed }]);
    const [letter] = await redis.xrange(keys.deadLetters("b5"), "-", "+");
    expect(await store.requeueDeadLetter({ queue: "b5", priority: "normal", id: letter![0], taskId: t.taskId })).toMatchObject({ outcome: "ok" });
    const record = await store.get(t.taskId);
    expect(record).toMatchObject({ status: "PENDING" });
    expect(record?.cancelRequestedAt).toBeUndefined();
    // The next claim runs it as attempt 2 instead of cancelling it with the old request.
    expect(await store.claim("b5", "w2", 1)).toMatchObject([{ kind: "run", taskId: t.taskId, attempt: 2 }]);
  });
});

describe("TaskStore re-queues a dead letter afresh", () => {
  // The worker's "fresh retry budget" test guards this through a whole worker; this one guards the
  // script itself (issue 39, item 12): requeue-4.lua resets retries and the delivery allowance.
  it("gives a re-queued task its retries back and a new delivery allowance: it runs again though it had used both up", async () => {
    await broker.ensureGroup("b8");
    const t = task({ queue: "b8", taskId: `b8/t${++n}`, maxRetries: 1, maxDeliveries: 1 });
    await store.createMany("b8", [t]);
    const [run] = await store.claim("b8", "w1", 1);
    if (run?.kind !== "run") throw new Error("not started");
    // Its one retry spent (as a worker's RETRYING settle leaves it), then the last attempt failed.
    await redis.hset(keys.task(t.taskId), { retries: 1 });
    const failed = { status: "FAILED" as const, error: { message: "boom", code: "AGENT_ERROR" }, deadReason: "failed: boom" };
    await store.settle("b8", "w1", [{ taskId: t.taskId, priority: run.priority, entryId: run.entryId, attempt: 1, agent: "a", ...failed }]);
    expect(await store.get(t.taskId)).toMatchObject({ status: "FAILED", retries: 1, attempt: 1 });
    const [letter] = await redis.xrange(keys.deadLetters("b8"), "-", "+");
    expect(await store.requeueDeadLetter({ queue: "b8", priority: "normal", id: letter![0], taskId: t.taskId })).toMatchObject({ outcome: "ok" });
    expect(await store.get(t.taskId)).toMatchObject({ status: "PENDING", retries: 0 });
    // The next claim runs it (its one delivery counts from the requeue), with its whole retry budget.
    expect(await store.claim("b8", "w2", 1)).toMatchObject([{ kind: "run", taskId: t.taskId, attempt: 2, retries: 0, maxRetries: 1 }]);
  });
});

describe("TaskStore settles an entry only while it holds it", () => {
  it("schedules no retry from an entry another consumer took over: the new holder runs the task from it", async () => {
    await broker.ensureGroup("b6");
    const t = task({ queue: "b6", taskId: `b6/t${++n}` });
    await store.createMany("b6", [t]);
    const [run] = await store.claim("b6", "w1", 1);
    if (run?.kind !== "run") throw new Error("not started");
    // w2 reclaims the entry (its lease lapsed) and has not started it yet when w1's retry arrives.
    await redis.xclaim(keys.lane("b6", "normal"), "flotilla", "w2", 0, run.entryId);
    const retry = { status: "RETRYING" as const, error: { message: "flaky", code: "AGENT_ERROR" }, retryAt: Date.now() + 60_000 };
    await store.settle("b6", "w1", [{ taskId: t.taskId, priority: run.priority, entryId: run.entryId, attempt: 1, agent: "a", ...retry }]);
    // Not delayed (a second way to run the task) and not acknowledged: the entry is still w2's to run.
    expect(await redis.zcard(keys.delayed("b6", "normal"))).toBe(0);
    const pending = (await redis.xpending(keys.lane("b6", "normal"), "flotilla", "-", "+", 10)) as [string, string][];
    expect(pending.map(([id, consumer]) => [id, consumer])).toEqual([[run.entryId, "w2"]]);
  });
});

describe("TaskStore re-queues only failed tasks", () => {
  it("refuses a dead letter whose task has since completed: the letter stays, nothing is enqueued, the record is untouched", async () => {
    await broker.ensureGroup("b7");
    const t = task({ queue: "b7", taskId: `b7/t${++n}` });
    await store.createMany("b7", [t]);
    const [run] = await store.claim("b7", "w1", 1);
    if (run?.kind !== "run") throw new Error("not started");
    await store.settle("b7", "w1", [
      { taskId: t.taskId, priority: run.priority, entryId: run.entryId, attempt: 1, agent: "a", status: "COMPLETED", result: 1 },
    ]);
    // A second letter of the same task (a duplicate entry once dead-lettered), found after the task completed.
    const letterId = (await redis.xadd(keys.deadLetters("b7"), "*", "reason", "duplicate entry", "taskId", t.taskId)) as string;
    const record = await redis.hgetall(keys.task(t.taskId));
    expect(await store.requeueDeadLetter({ queue: "b7", priority: "normal", id: letterId, taskId: t.taskId })).toEqual({
      outcome: "refused",
      status: "COMPLETED",
    });
    expect(await redis.xlen(keys.deadLetters("b7"))).toBe(1);
    expect(await redis.xlen(keys.lane("b7", "normal"))).toBe(0);
    expect(await redis.hgetall(keys.task(t.taskId))).toEqual(record);
  });
});

describe("the task record", () => {
  it("reads a record back with types, and reports a corrupt one", () => {
    const record = parseTaskRecord(
      {
        taskId: "q/t",
        queue: "q",
        status: "COMPLETED",
        agent: "a",
        attempt: "1",
        createdAt: "10",
        detailed: "0",
        metadata: "{}",
        result: '{"ok":true}',
        error: '{"message":"m","code":"C"}',
      },
      "q/t",
    );
    expect(record).toMatchObject({ attempt: 1, result: { ok: true }, detailed: false, error: { code: "C" } });
    expect(parseTaskRecord({}, "t")).toBeUndefined();
    expect(() => parseTaskRecord({ taskId: "q/t", status: "WEIRD" }, "t")).toThrow(CorruptRecordError);
  });
});
