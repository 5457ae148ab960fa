import { CorruptRecordError, DEFAULT_RETENTION } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { readEvents } from "../src/event-stream.ts";
import { EventPublisher } from "../src/publisher.ts";
import { runningTasks } from "./fixtures/running-tasks.ts";

const { redis, keys, store, runningTask } = runningTasks("read-events");

/** Publishes `batches` of text events (one stream entry each) for attempt 1. */
async function publish(taskId: string, batches: string[][]) {
  const p = new EventPublisher(redis, keys, DEFAULT_RETENTION, { taskId, attempt: 1, agent: "a", detailed: true });
  for (const batch of batches) {
    for (const delta of batch) p.emit({ type: "text", delta });
    await p.flush();
  }
}

const seqs = (events: Array<{ seq: number }>) => events.map((e) => e.seq);

describe("readEvents", () => {
  it("reads the status log and every page of the stream, in seq order, after the seq asked", async () => {
    const taskId = await runningTask(); // running: seq 1
    await publish(taskId, [["a", "b"], ["c"], ["d", "e"]]); // seqs 2-3, 4, 5-6
    await store.finish(taskId, { attempt: 1, status: "COMPLETED", agent: "a", result: { ok: true } }); // seq 7
    expect(seqs((await readEvents(redis, keys, taskId, { pageSize: 1 })).events)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // `after` inside a batch (5-6) and on a status event (1): neither comes back.
    expect(seqs((await readEvents(redis, keys, taskId, { after: 5, pageSize: 1 })).events)).toEqual([6, 7]);
    expect(seqs((await readEvents(redis, keys, taskId, { after: 1 })).events)).toEqual([2, 3, 4, 5, 6, 7]);
    expect(seqs((await readEvents(redis, keys, taskId, { after: 7 })).events)).toEqual([]);
  });

  it("puts the result back on the completed event only", async () => {
    const taskId = await runningTask();
    await store.finish(taskId, { attempt: 1, status: "COMPLETED", agent: "a", result: { ok: true } });
    const { events } = await readEvents(redis, keys, taskId);
    expect(events).toMatchObject([{ status: "running" }, { status: "completed", result: { ok: true } }]);
    expect(events[0]).not.toHaveProperty("result");
    const bare = await runningTask();
    await store.finish(bare, { attempt: 1, status: "COMPLETED", agent: "a" });
    expect((await readEvents(redis, keys, bare)).events[1]).not.toHaveProperty("result");
  });

  it.each<["COMPLETED" | "FAILED" | "CANCELLED" | "RUNNING", boolean]>([
    ["COMPLETED", true],
    ["FAILED", true],
    ["CANCELLED", true],
    ["RUNNING", false],
  ])("says whether a %s task has ended", async (status, terminal) => {
    const taskId = await runningTask();
    if (status === "FAILED") await store.finish(taskId, { attempt: 1, status, agent: "a", error: { message: "x", code: "AGENT_ERROR" } });
    else if (status === "COMPLETED" || status === "CANCELLED") await store.finish(taskId, { attempt: 1, status, agent: "a" });
    expect(await readEvents(redis, keys, taskId)).toMatchObject({ exists: true, terminal });
  });

  it("fails at once on an error that is not a lost connection", async () => {
    await redis.set(keys.task("q/string"), "not a hash");
    const started = Date.now();
    await expect(readEvents(redis, keys, "q/string")).rejects.toThrow(/WRONGTYPE/);
    expect(Date.now() - started).toBeLessThan(10_000); // not retried for 30 s
  });

  it("says when a task does not exist", async () => {
    expect(await readEvents(redis, keys, "q/none")).toEqual({ events: [], exists: false, terminal: false });
  });

  it("refuses a status log or a stream entry it cannot read, naming the task", async () => {
    const badLog = await runningTask();
    await redis.hset(keys.task(badLog), "log", "{not json");
    await expect(readEvents(redis, keys, badLog)).rejects.toThrow(CorruptRecordError);
    await expect(readEvents(redis, keys, badLog)).rejects.toThrow(`status log of task ${badLog}`);
    const badEntry = await runningTask();
    await redis.xadd(keys.events(badEntry), "0-2", "e", JSON.stringify({ not: "a batch" }));
    await expect(readEvents(redis, keys, badEntry)).rejects.toThrow(`event stream of task ${badEntry}`);
  });

  it("skips status-log entries without a seq", async () => {
    const taskId = await runningTask(); // running: seq 1
    const log = (await redis.hget(keys.task(taskId), "log"))!;
    await redis.hset(keys.task(taskId), "log", `null,{"type":"status","status":"running"},${log}`);
    expect(seqs((await readEvents(redis, keys, taskId)).events)).toEqual([1]);
  });
});
