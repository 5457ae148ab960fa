// A task started past its delivery limit ends FAILED (DELIVERY_LIMIT) and its entry goes to the dead
// letters in the same script call, whichever call starts it: a claim, a start of held entries (a
// blocking read's or a reclaim's), a settle's claim. Nothing is left for the worker to write after,
// so a worker killed right after the call (or a reply lost) cannot leave the failure without its
// letter; a resent call finds the task finished and writes no second letter.
import { TestBroker } from "@flotilla/broker/testing";
import { CONSUMER_GROUP, createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import type { StartReply } from "../src/replies.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

const redis = testRedis();
const prefix = testPrefix("delivery-limit");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const broker = new TestBroker(redis, keys);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const lastError = { message: "worker vanished", code: "TIMEOUT" };

/** A task of `queue` that has been delivered `maxDeliveries` times already (each start killed), its entry waiting again. */
async function spent(queue: string, name: string): Promise<string> {
  const taskId = `${queue}/${name}`;
  await store.create(newTask(taskId, { maxDeliveries: 2, maxRetries: 0 }));
  await redis.hset(keys.task(taskId), { status: "RETRYING", attempt: 2, error: JSON.stringify(lastError) });
  return taskId;
}

/** What the call left in Redis, with nothing more sent after it (the worker died on the reply). */
async function leftBehind(queue: string, taskId: string) {
  const letters = await broker.listDeadLetters(queue);
  const pending = (await redis.xpending(keys.lane(queue, "normal"), CONSUMER_GROUP)) as [number, ...unknown[]];
  return { record: await store.get(taskId), letters, pending: pending[0] };
}

function expectDeadLettered(left: Awaited<ReturnType<typeof leftBehind>>, taskId: string) {
  expect(left.record).toMatchObject({ status: "FAILED", attempt: 2, error: { code: "DELIVERY_LIMIT" } });
  expect(left.letters).toHaveLength(1);
  expect(left.letters[0]).toMatchObject({
    taskId,
    reason: "delivery limit reached after 2 attempts; last error: [TIMEOUT] worker vanished",
    fields: { task: taskId.split("/")[1] },
    priority: "normal",
    extra: { attempts: 2, lastError },
  });
  // Acknowledged in the same call: nobody takes the entry over and runs the failed task.
  expect(left.pending).toBe(0);
}

describe("a task past its delivery limit", () => {
  it("is failed and dead-lettered by the claim that starts it", async () => {
    await broker.ensureGroup("dl-claim");
    const taskId = await spent("dl-claim", "t");
    const [reply] = await store.claim("dl-claim", "w", 5);
    expect(reply).toMatchObject({ kind: "dead", taskId, attempts: 2, reason: expect.stringMatching(/^delivery limit reached after 2 attempts/) });
    expectDeadLettered(await leftBehind("dl-claim", taskId), taskId);
  });

  it("is failed and dead-lettered by the start of a held entry (a blocking read's or a reclaim's); a resent start writes no second letter", async () => {
    await broker.ensureGroup("dl-held");
    const taskId = await spent("dl-held", "t");
    const blocking = redis.duplicate();
    const [entry] = await broker.claim(blocking, "w", ["dl-held"], 1, 100);
    blocking.disconnect();
    const held = [{ priority: "normal" as const, entryId: entry!.entryId, name: "t" }];
    for (const reclaimed of [false, true]) {
      const replies: StartReply[] = await store.startEntries("dl-held", "w", held, reclaimed);
      // The first call fails it; the resend (ioredis after a lost reply, or a reclaim) finds it finished.
      expect(replies[0]).toMatchObject(reclaimed ? { kind: "skip", reason: "terminal", status: "FAILED" } : { kind: "dead", taskId });
      expectDeadLettered(await leftBehind("dl-held", taskId), taskId);
    }
  });

  it("is failed and dead-lettered by a settle's claim", async () => {
    await broker.ensureGroup("dl-settle");
    const taskId = await spent("dl-settle", "t");
    const { started } = await store.settle("dl-settle", "w", [], { claim: 3 });
    expect(started).toMatchObject([{ kind: "dead", taskId }]);
    expectDeadLettered(await leftBehind("dl-settle", taskId), taskId);
  });
});
