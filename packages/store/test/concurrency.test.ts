import { Broker } from "@flotilla/broker";
import { createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import type { StartReply } from "../src/replies.ts";
import type { NewTask } from "../src/task-store.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

// Concurrency keys in the scripts: a claimed task whose key is full is parked (its lane entry
// acknowledged, its name in the key's waiting list) and goes back to its lane when a slot frees.
const redis = testRedis();
const prefix = testPrefix("concurrency");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const broker = new Broker(redis, keys);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

let queues = 0;
async function queueWith(tasks: Array<[name: string, concurrency?: NewTask["concurrency"]]>) {
  const queue = `cq${++queues}`;
  await broker.ensureGroup(queue);
  for (const [name, concurrency] of tasks) await store.create(newTask(`${queue}/${name}`, concurrency ? { concurrency } : {}));
  return queue;
}
const names = (replies: StartReply[], kind: StartReply["kind"], reason?: string) =>
  replies
    .filter((r) => r.kind === kind && (reason === undefined || (r.kind === "skip" && r.reason === reason)))
    .map((r) => ("taskId" in r ? r.taskId.split("/")[1] : r.entryId));
const running = (queue: string, key: string) => redis.smembers(keys.concurrency(queue, key)).then((m) => m.sort());
const waiting = (queue: string, key: string) => redis.lrange(`${keys.concurrency(queue, key)}:waiting`, 0, -1);
const runReply = (replies: StartReply[], name: string) => {
  const r = replies.find((x) => x.kind === "run" && x.taskId.endsWith(`/${name}`));
  if (r?.kind !== "run") throw new Error(`${name} did not run`);
  return r;
};
const done = (queue: string, r: Extract<StartReply, { kind: "run" }>, status: "COMPLETED" | "RETRYING" = "COMPLETED") =>
  store.settle(queue, "w", [
    {
      taskId: r.taskId,
      agent: "a",
      priority: r.priority,
      entryId: r.entryId,
      attempt: r.attempt,
      status,
      ...(status === "RETRYING" && { retryAt: Date.now() + 60_000 }),
    },
  ]);

describe("concurrency keys", () => {
  it("runs at most the limit of a key at once; the rest are parked, holding no entry, and other keys run past them", async () => {
    const t1 = { key: "tenant-1", limit: 2 };
    const queue = await queueWith([["a", t1], ["b", t1], ["c", t1], ["d", t1], ["x", { key: "tenant-2", limit: 1 }], ["plain"]]);
    const replies = await store.claim(queue, "w", 10);
    expect(names(replies, "run")).toEqual(["a", "b", "x", "plain"]);
    expect(names(replies, "skip", "parked")).toEqual(["c", "d"]);
    expect(await running(queue, "tenant-1")).toEqual(["a", "b"]);
    expect(await waiting(queue, "tenant-1")).toEqual(["c", "d"]);
    // Parked tasks wait PENDING, with no entry left in the lane nor pending for the worker.
    expect((await store.get(`${queue}/c`))?.status).toBe("PENDING");
    expect(await redis.xlen(keys.lane(queue, "normal"))).toBe(4);
    expect(await store.claim(queue, "w", 10)).toEqual([]);
  });

  it("a slot freed by an end or a retry sends the key's first parked task back to its lane, in order", async () => {
    const t = { key: "k", limit: 1 };
    const queue = await queueWith([
      ["a", t],
      ["b", t],
      ["c", t],
    ]);
    const first = await store.claim(queue, "w", 10);
    expect(names(first, "run")).toEqual(["a"]);
    await done(queue, runReply(first, "a"));
    const second = await store.claim(queue, "w", 10);
    expect(names(second, "run")).toEqual(["b"]);
    expect(await waiting(queue, "k")).toEqual(["c"]);
    // Waiting for a retry is not running: the slot goes to c.
    await done(queue, runReply(second, "b"), "RETRYING");
    expect(await running(queue, "k")).toEqual([]);
    const third = await store.claim(queue, "w", 10);
    expect(names(third, "run")).toEqual(["c"]);
    expect(await running(queue, "k")).toEqual(["c"]);
  });

  it("a task taken over after its worker died keeps its slot; one whose record vanished while it ran gives it back", async () => {
    const t = { key: "k", limit: 1 };
    const queue = await queueWith([
      ["a", t],
      ["b", t],
    ]);
    const first = await store.claim(queue, "w1", 10);
    const a = runReply(first, "a");
    // Another worker takes a over (its lease lapsed): still one of the key's one slot, b stays parked.
    expect(await store.start(`${queue}/a`, "w2", { reclaimed: true, entryId: a.entryId })).toMatchObject({ kind: "run", attempt: 2 });
    expect(await running(queue, "k")).toEqual(["a"]);
    // a's record is deleted under it (expired, or removed by hand): no release will ever come.
    await redis.del(keys.task(`${queue}/a`));
    await store.create(newTask(`${queue}/c`, { concurrency: t }));
    expect(names(await store.claim(queue, "w2", 10), "run")).toEqual(["c"]);
    expect(await running(queue, "k")).toEqual(["c"]);
  });

  it("a start resent after a lost reply parks nothing twice", async () => {
    const t = { key: "k", limit: 1 };
    const queue = await queueWith([["a", t]]);
    expect(names(await store.claim(queue, "w", 10), "run")).toEqual(["a"]);
    await store.create(newTask(`${queue}/b`, { concurrency: t }));
    const [entryId] = (await redis.xrange(keys.lane(queue, "normal"), "-", "+")).map(([id]) => id).slice(-1);
    for (let i = 0; i < 2; i++) expect(await store.start(`${queue}/b`, "w", { entryId: entryId! })).toMatchObject({ kind: "skip", reason: "parked" });
    expect(await waiting(queue, "k")).toEqual(["b"]);
  });
});
