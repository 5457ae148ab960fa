// @cluster: a task's inbox and record in its queue's slot, sent to and taken from by scripts
// Messages sent to a task wait in its inbox (its slot), counted on its record; each publish reply says
// how many wait, so its worker takes them at a turn boundary only when some do; a take is fenced on the
// attempt and replay-safe; a task that has ended takes no message.
import { createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { TaskEventLog } from "../src/event-log.ts";
import { sendMessage, takeMessages } from "../src/inbox.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

const redis = testRedis();
const prefix = testPrefix("inbox");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const message = (id: string, content: string) => ({ id, content, at: 1 });
const send = (taskId: string, m: ReturnType<typeof message>) => sendMessage(redis, keys, taskId, m, DEFAULT_RETENTION.recordTtlMs);
const take = (taskId: string, attempt: number, takeId: string) => takeMessages(redis, keys, taskId, attempt, takeId);

describe("a task's inbox", () => {
  it("keeps messages in order until the running attempt takes them; publish replies say how many wait", async () => {
    await store.create(newTask("ib/a", { detailed: true }));
    // Sent before it starts: it waits for the run.
    expect(await send("ib/a", message("m1", "first"))).toMatchObject({ outcome: "queued", waiting: 1 });
    await store.start("ib/a", "w");
    const log = new TaskEventLog(redis, keys, DEFAULT_RETENTION, "ib/a");
    await log.append(1, "1:0", ['{"type":"text","delta":"a"}']);
    expect(log.messagesWaiting).toBe(1);
    expect(await send("ib/a", message("m2", "second"))).toMatchObject({ outcome: "queued", waiting: 2 });
    // A resend of the same message (its reply lost) adds nothing.
    expect(await send("ib/a", message("m2", "second"))).toMatchObject({ outcome: "queued", waiting: 2 });
    await log.append(1, "1:1", ['{"type":"text","delta":"b"}']);
    expect(log.messagesWaiting).toBe(2);

    // Another attempt takes nothing.
    expect(await take("ib/a", 2, "2:1")).toBeUndefined();
    const taken = await take("ib/a", 1, "1:1");
    expect(taken).toEqual({ messages: [message("m1", "first"), message("m2", "second")], malformed: 0 });
    // The same take sent again (its reply lost) gets the same messages; the next take, none.
    expect(await take("ib/a", 1, "1:1")).toEqual(taken);
    expect(await take("ib/a", 1, "1:2")).toEqual({ messages: [], malformed: 0 });
    expect(await redis.exists(keys.inbox("ib/a"))).toBe(0);
    await log.append(1, "1:2", ['{"type":"text","delta":"c"}']);
    expect(log.messagesWaiting).toBe(0);
    expect(await redis.hget(keys.task("ib/a"), "inbox")).toBeNull();
  });

  it("refuses a message to a task that has ended or does not exist, and writes nothing", async () => {
    await store.create(newTask("ib/b"));
    await store.start("ib/b", "w");
    await store.finish("ib/b", { attempt: 1, status: "COMPLETED", agent: "a", result: "done" });
    expect(await send("ib/b", message("m", "too late"))).toEqual({ outcome: "finished", waiting: 0, status: "COMPLETED" });
    expect(await redis.exists(keys.inbox("ib/b"))).toBe(0);
    expect(await send("ib/none", message("m", "nobody"))).toMatchObject({ outcome: "missing" });
    expect(await redis.exists(keys.inbox("ib/none"))).toBe(0);
    expect(await take("ib/b", 1, "1:1")).toBeUndefined();
  });

  it("drops an inbox entry that is not a message (written by something else), taking the rest", async () => {
    await store.create(newTask("ib/d"));
    await store.start("ib/d", "w");
    await redis.rpush(keys.inbox("ib/d"), "not json", JSON.stringify({ id: "x" }));
    await send("ib/d", message("ok", "fine"));
    expect(await take("ib/d", 1, "1:1")).toEqual({ messages: [message("ok", "fine")], malformed: 2 });
  });

  it("expires an inbox nobody takes, and leaves nothing of it in a completed task's record", async () => {
    await store.create(newTask("ib/c"));
    await send("ib/c", message("m", "x"));
    const ttl = await redis.pttl(keys.inbox("ib/c"));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(DEFAULT_RETENTION.recordTtlMs);
    await store.start("ib/c", "w");
    await take("ib/c", 1, "1:1");
    await store.finish("ib/c", { attempt: 1, status: "COMPLETED", agent: "a", result: "done" });
    expect(Object.keys(await redis.hgetall(keys.task("ib/c"))).sort()).toEqual(["attempt", "status", "z"]);
  });
});
