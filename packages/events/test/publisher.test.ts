import { DEFAULT_RETENTION } from "@flotilla/core";
import { onCluster } from "@flotilla/testing";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { readEvents } from "../src/event-stream.ts";
import { EventPublisher, type PublisherOptions } from "../src/publisher.ts";
import { runningTasks } from "./fixtures/running-tasks.ts";

const { redis, keys, store, runningTask } = runningTasks("publisher");

const publisher = (taskId: string, options: Partial<PublisherOptions> = {}) =>
  new EventPublisher(redis, keys, DEFAULT_RETENTION, { taskId, attempt: 1, agent: "a", detailed: true, ...options });

/** The task's events other than status changes, as [attempt, delta or type]. */
async function published(taskId: string) {
  const { events } = await readEvents(redis, keys, taskId);
  return events.filter((e) => e.type !== "status").map((e) => [e.attempt, e.type === "text" ? e.delta : e.type]);
}

const tick = () => new Promise((r) => setImmediate(r));

describe("EventPublisher", () => {
  it("sends the events of one tick as one batch, each stamped, and counts them by type", async () => {
    const taskId = await runningTask();
    const batches: Array<{ types: Readonly<Record<string, number>>; ms: number }> = [];
    const p = publisher(taskId, { onPublished: (types, ms) => batches.push({ types, ms }) });
    p.emit({ type: "text", delta: "a" });
    p.emit({ type: "step", index: 0, finishReason: "stop" });
    p.emit({ type: "text", delta: "b" });
    await tick();
    p.emit({ type: "text", delta: "c" });
    await p.flush();
    expect(batches.map((b) => b.types)).toEqual([{ text: 2, step: 1 }, { text: 1 }]);
    for (const { ms } of batches) expect(ms).toBeGreaterThanOrEqual(0);
    for (const { ms } of batches) expect(ms).toBeLessThan(30_000);
    expect(p.published).toBe(4);
    expect(await redis.xlen(keys.events(taskId))).toBe(2); // one stream entry per batch
    const { events } = await readEvents(redis, keys, taskId);
    expect(events.filter((e) => e.type !== "status")).toMatchObject([
      { type: "text", delta: "a", taskId, attempt: 1, agent: "a", seq: 2 },
      { type: "step", index: 0, seq: 3 },
      { type: "text", delta: "b", seq: 4 },
      { type: "text", delta: "c", seq: 5 },
    ]);
  });

  it("sends what is emitted while a call is on its way as the next call, together, in order", async () => {
    const taskId = await runningTask();
    const batches: number[] = [];
    const p = publisher(taskId, { onPublished: (types) => batches.push(Object.values(types).reduce((a, b) => a + b, 0)) });
    p.emit({ type: "text", delta: "0" });
    const first = p.flush(); // on its way
    // Five ticks' events while it is: not five calls queued behind it, one.
    for (let i = 1; i <= 5; i++) {
      p.emit({ type: "text", delta: String(i) });
      p.flush();
      expect(batches).toEqual([]);
    }
    await first;
    await p.flush();
    expect(batches).toEqual([1, 5]);
    expect((await published(taskId)).map(([, d]) => d)).toEqual(["0", "1", "2", "3", "4", "5"]);
  });

  it("sends a backlog in calls of at most 1,000 events", async () => {
    const taskId = await runningTask();
    const batches: number[] = [];
    const p = publisher(taskId, { onPublished: (types) => batches.push(types.text ?? 0) });
    p.emit({ type: "text", delta: "first" });
    const first = p.flush();
    for (let i = 0; i < 2500; i++) p.emit({ type: "text", delta: "." });
    await first;
    await p.flush();
    expect(batches).toEqual([1, 1000, 1000, 500]);
    expect(p.published).toBe(2501);
  });

  it("sends the tick's batches of every task of a queue in one call; a task fenced out among them is told alone", async () => {
    const tasks = await Promise.all(Array.from({ length: 30 }, () => runningTask()));
    // The last one ended meanwhile: its attempt is fenced out.
    await store.finish(tasks.at(-1)!, { attempt: 1, status: "COMPLETED", agent: "a" });
    const conn = redis.duplicate();
    await conn.ping(); // ready: a command queued before would be counted again when sent
    const calls: string[] = [];
    const send = conn.sendCommand.bind(conn);
    conn.sendCommand = ((command: { name: string }, stream?: unknown) => {
      calls.push(command.name);
      return send(command as never, stream as never);
    }) as typeof conn.sendCommand;
    let stale = 0;
    const publishers = tasks.map(
      (taskId) => new EventPublisher(conn, keys, DEFAULT_RETENTION, { taskId, attempt: 1, agent: "a", detailed: true, onStale: () => stale++ }),
    );
    for (const [i, p] of publishers.entries()) p.emit({ type: "text", delta: `t${i}` });
    await Promise.all(publishers.map((p) => p.flush()));
    expect(calls.filter((c) => c === "evalsha" || c === "eval")).toHaveLength(1);
    expect(stale).toBe(1);
    for (const [i, taskId] of tasks.slice(0, -1).entries()) expect(await published(taskId)).toEqual([[1, `t${i}`]]);
    expect(await redis.exists(keys.events(tasks.at(-1)!))).toBe(0);
    conn.disconnect();
  });

  it("resolves flush at once when nothing was emitted, and sends nothing", async () => {
    const taskId = await runningTask();
    let calls = 0;
    const p = publisher(taskId, { onPublished: () => calls++ });
    await p.flush();
    await tick();
    expect(calls).toBe(0);
    expect(await redis.exists(keys.events(taskId))).toBe(0);
  });

  it("keeps the events of each attempt of a retried task", async () => {
    const taskId = await runningTask(1);
    const first = publisher(taskId);
    first.emit({ type: "text", delta: "try 1" });
    await first.flush();
    await store.finish(taskId, { attempt: 1, status: "RETRYING", agent: "a", error: { message: "flaky", code: "AGENT_ERROR" }, retryAt: 1 });
    expect(await store.start(taskId, "w")).toMatchObject({ kind: "run" });
    const second = publisher(taskId, { attempt: 2 });
    second.emit({ type: "text", delta: "try 2" });
    await second.flush();
    expect(await published(taskId)).toEqual([
      [1, "try 1"],
      [2, "try 2"],
    ]);
  });

  it("has Redis drop what a retried producer repeats within a scope", async () => {
    const taskId = await runningTask();
    const first = publisher(taskId, { scope: "activity-1", anyAttempt: true });
    first.emit({ type: "text", delta: "one" });
    await tick();
    first.emit({ type: "text", delta: "two" });
    await first.flush();
    // The activity is retried: the new producer emits the same events again, then more.
    const again = publisher(taskId, { scope: "activity-1", anyAttempt: true });
    again.emit({ type: "text", delta: "one" });
    await tick();
    again.emit({ type: "text", delta: "two" });
    await tick();
    again.emit({ type: "text", delta: "three" });
    await again.flush();
    expect(await published(taskId)).toEqual([
      [1, "one"],
      [1, "two"],
      [1, "three"],
    ]);
  });

  it("publishes for whichever attempt runs when anyAttempt is set, and only for its own otherwise", async () => {
    const taskId = await runningTask();
    const any = publisher(taskId, { attempt: 7, anyAttempt: true });
    any.emit({ type: "text", delta: "any" });
    await any.flush();
    expect(any.isStale).toBe(false);
    let stale = 0;
    const own = publisher(taskId, { attempt: 7, onStale: () => stale++ });
    own.emit({ type: "text", delta: "own" });
    await own.flush();
    expect([own.isStale, stale, own.published]).toEqual([true, 1, 0]);
    expect(await published(taskId)).toEqual([[7, "any"]]);
  });

  it("goes stale quietly without an onStale callback", async () => {
    const taskId = await runningTask();
    await store.finish(taskId, { attempt: 1, status: "COMPLETED", agent: "a" });
    const p = publisher(taskId);
    p.emit({ type: "text", delta: "late" });
    await expect(p.flush()).resolves.toBeUndefined();
    expect(p.isStale).toBe(true);
  });

  // A plain connection of its own to take down and bring back: on a cluster it would reach no slot's node.
  it.skipIf(onCluster())("sends a batch again while Redis cannot be reached, and it lands once Redis answers: once, in order", async () => {
    const taskId = await runningTask();
    const flaky = new Redis(redis.options);
    await flaky.ping();
    flaky.disconnect();
    const p = new EventPublisher(flaky, keys, DEFAULT_RETENTION, { taskId, attempt: 1, agent: "a", detailed: true });
    p.emit({ type: "text", delta: "during " });
    p.emit({ type: "text", delta: "the outage" });
    const flushed = p.flush();
    await new Promise((r) => setTimeout(r, 300));
    expect(p.published).toBe(0);
    await flaky.connect();
    await flushed;
    expect(p.published).toBe(2);
    const stored = await redis.xrange(keys.events(taskId), "-", "+");
    const deltas = stored.flatMap(([, fields]) => (JSON.parse(fields[1]!) as Array<{ delta?: string }>).map((e) => e.delta));
    expect(deltas).toEqual(["during ", "the outage"]);
    flaky.disconnect();
  });

  it("rejects flush with the error Redis gave, then and on every later flush, sending nothing more", async () => {
    const taskId = await runningTask();
    const broken = new Redis(redis.options);
    await broken.ping();
    broken.disconnect();
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => void unhandled.push(err);
    process.on("unhandledRejection", onUnhandled);
    const p = new EventPublisher(broken, keys, DEFAULT_RETENTION, { taskId, attempt: 1, agent: "a", detailed: true, resendForMs: 0 });
    p.emit({ type: "text", delta: "lost" });
    await tick(); // the batch goes out on its own, and fails
    await tick();
    await expect(p.flush()).rejects.toThrow(/Connection is closed/);
    await new Promise((r) => setTimeout(r, 20));
    process.off("unhandledRejection", onUnhandled);
    // Nobody awaited that send: its failure must wait for a flush, not surface as an unhandled rejection (which ends a worker).
    expect(unhandled).toEqual([]);
    await broken.connect();
    p.emit({ type: "text", delta: "after" });
    await expect(p.flush()).rejects.toThrow(/Connection is closed/);
    expect(p.published).toBe(0);
    expect(await redis.exists(keys.events(taskId))).toBe(0);
    broken.disconnect();
  });
});
